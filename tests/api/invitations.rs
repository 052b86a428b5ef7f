//! Invitations, end to end: a `string` written to `service_user` stores a
//! pending invitation and mails its link (a real SMTP server); a provider
//! login presenting it is linked to the invited person.

use crate::support;
mod limits;

use chrono::Duration;
use serde_json::{Value as Json, json};
use support::TestApp;
use support::email_login::{app_with_mail, client_at, exchange, session_key};
use support::smtp::SmtpSink;

/// A person of `demo` with `values`; answers its id.
async fn person(app: &TestApp, owner: &str, values: Json) -> String {
    let person_type = app.find(owner, "entity", "person").await;
    app.create(owner, &person_type, values).await
}

/// Invites a login to `entity` as the owner; answers the written value.
async fn invite(app: &TestApp, owner: &str, entity: &str) -> Json {
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{entity}"),
            owner,
            json!({"type": "service_user", "string": "an invitation"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body["properties"][0].clone()
}

/// The invitation token of the newest mail's link.
async fn mailed_invite(sink: &SmtpSink, mails: usize) -> (String, String) {
    let mails = sink.wait_for(mails).await;
    let mail = mails.last().unwrap();
    let links = mail.links();
    assert_eq!(links.len(), 1, "{}", mail.body);
    let token = links[0].split_once("invite=").expect("the link carries invite").1;
    (links[0].clone(), token.to_owned())
}

#[tokio::test]
async fn writing_a_string_to_service_user_stores_an_invitation_and_mails_its_link_to_the_entitys_email() {
    let (app, sink) = app_with_mail(&[]).await;
    let owner = app.owner_token().await;
    let bob = person(
        &app,
        &owner,
        json!([{"type": "name", "string": "Bob"}, {"type": "email", "string": "bob@example.com"}]),
    )
    .await;
    let written = invite(&app, &owner, &bob).await;
    assert_eq!(written["invite"], true, "{written}");
    assert!(written.get("provider").is_none(), "{written}");
    let mails = sink.wait_for(1).await;
    assert_eq!(mails[0].header("To"), Some("bob@example.com"));
    let (link, token) = mailed_invite(&sink, 1).await;
    assert!(link.starts_with(&app.url), "{link}");
    // the token is only in the mail: not in the answer, the entity or its history
    let (_, entity) = app.get(&format!("/api/demo/entity/{bob}"), &owner).await;
    assert_eq!(entity["entity"]["service_user"][0]["invite"], true, "{entity}");
    let (_, history) = app.get(&format!("/api/demo/entity/{bob}/history"), &owner).await;
    for shown in [written.to_string(), entity.to_string(), history.to_string()] {
        assert!(!shown.contains(&token), "{shown}");
    }
}

#[tokio::test]
async fn an_invited_person_signs_in_through_the_mailed_link_and_the_login_is_linked_to_them() {
    let (app, sink) = app_with_mail(&[]).await;
    let owner = app.owner_token().await;
    let bob = person(
        &app,
        &owner,
        json!([{"type": "name", "string": "Bob"}, {"type": "email", "string": "bob@example.com"}]),
    )
    .await;
    invite(&app, &owner, &bob).await;
    let (link, token) = mailed_invite(&sink, 1).await;
    // the link opens the method chooser, whose e-mail form carries the invitation along
    let browser = client_at("127.0.0.1");
    let chooser = browser.get(&link).send().await.unwrap().text().await.unwrap();
    let email = chooser
        .split("<a href=\"")
        .find(|link| link.starts_with("e-mail?"))
        .and_then(|link| link.split('"').next())
        .unwrap_or_else(|| panic!("the chooser offers e-mail: {chooser}"))
        .replace("&amp;", "&");
    let page = browser
        .get(format!("{}/api/auth/{email}", app.url))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains(r#"name="invite""#) && page.contains(&token), "{page}");
    let key = session_key(&app, &sink, "Bob@Example.com", &[("invite", &token)], 1).await;
    let (status, body) = exchange(&app, &key, "").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["accounts"],
        json!([{"_id": "demo", "name": "demo", "user": {"_id": bob, "name": "Bob"}}])
    );
    assert_eq!(body["user"]["name"], "Bob");
    let access = body["token"].as_str().unwrap();
    assert_eq!(app.get("/api/demo/entity", access).await.0, 200);
    let (_, entity) = app.get(&format!("/api/demo/entity/{bob}"), &owner).await;
    assert_eq!(
        entity["entity"]["service_user"],
        json!([{"_id": entity["entity"]["service_user"][0]["_id"], "string": "bob@example.com", "provider": "e-mail"}])
    );
    // signing in again, without the invitation, finds Bob by the login
    let again = session_key(&app, &sink, "bob@example.com", &[], 2).await;
    let (status, body) = exchange(&app, &again, "").await;
    assert_eq!(
        (status, body["accounts"][0]["user"]["_id"].as_str()),
        (200, Some(bob.as_str()))
    );
}

#[tokio::test]
async fn an_invitation_given_at_the_exchange_links_the_login_and_limits_the_token_to_its_database() {
    let (app, sink) = app_with_mail(&[]).await;
    let owner = app.owner_token().await;
    let bob = person(&app, &owner, json!([{"type": "email", "string": "bob@example.com"}])).await;
    invite(&app, &owner, &bob).await;
    let (_, token) = mailed_invite(&sink, 1).await;
    let key = session_key(&app, &sink, "bob.personal@example.com", &[], 1).await;
    let (status, body) = exchange(&app, &key, &format!("?invite={token}")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["accounts"][0]["user"]["_id"], bob.as_str());
    assert_eq!(body["accounts"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn an_invitation_to_an_entity_without_email_is_400_no_email_and_nothing_is_written() {
    let (app, sink) = app_with_mail(&[]).await;
    let owner = app.owner_token().await;
    let nobody = person(&app, &owner, json!([{"type": "name", "string": "No Mail"}])).await;
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{nobody}"),
            &owner,
            json!([{"type": "note", "string": "kept?"}, {"type": "service_user", "string": "x"}]),
        )
        .await;
    assert_eq!((status, body["message"].as_str()), (400, Some("No email")), "{body}");
    let (_, entity) = app.get(&format!("/api/demo/entity/{nobody}"), &owner).await;
    assert!(entity["entity"].get("service_user").is_none() && entity["entity"].get("note").is_none());
    assert!(sink.mails().is_empty());
}

#[tokio::test]
async fn an_invitation_written_at_creation_is_pending_and_sends_no_mail() {
    let (app, sink) = app_with_mail(&[]).await;
    let owner = app.owner_token().await;
    let created = person(
        &app,
        &owner,
        json!([{"type": "email", "string": "new@example.com"}, {"type": "service_user", "string": "new@example.com"}]),
    )
    .await;
    let (_, entity) = app.get(&format!("/api/demo/entity/{created}"), &owner).await;
    assert_eq!(entity["entity"]["service_user"][0]["invite"], true, "{entity}");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(sink.mails().is_empty());
}

#[tokio::test]
async fn a_malformed_expired_or_other_database_invitation_is_400_invalid_or_expired_invite() {
    let (app, sink) = app_with_mail(&[]).await;
    let owner = app.owner_token().await;
    let bob = person(&app, &owner, json!([{"type": "email", "string": "bob@example.com"}])).await;
    invite(&app, &owner, &bob).await;
    let (_, token) = mailed_invite(&sink, 1).await;
    let mut mails = 1;
    for query in [
        "?invite=not-a-token".to_owned(),
        format!("?db=other_db&invite={token}"),
        format!("?invite={}x", &token[..token.len() - 1]),
    ] {
        let key = session_key(&app, &sink, "bob@example.com", &[], mails).await;
        mails += 1;
        let (status, body) = exchange(&app, &key, &query).await;
        assert_eq!(
            (status, body["message"].as_str()),
            (400, Some("Invalid or expired invite")),
            "{query}"
        );
    }
    app.state.clock.advance(Duration::hours(24));
    let late_key = session_key(&app, &sink, "bob@example.com", &[], mails).await;
    let (status, body) = exchange(&app, &late_key, &format!("?invite={token}")).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (400, Some("Invalid or expired invite"))
    );
    let owner = app.owner_token().await;
    let (_, entity) = app.get(&format!("/api/demo/entity/{bob}"), &owner).await;
    assert_eq!(
        entity["entity"]["service_user"][0]["invite"], true,
        "still pending: {entity}"
    );
}

#[tokio::test]
async fn a_used_invitation_logs_in_only_its_person() {
    let (app, sink) = app_with_mail(&[]).await;
    let owner = app.owner_token().await;
    let bob = person(&app, &owner, json!([{"type": "email", "string": "bob@example.com"}])).await;
    invite(&app, &owner, &bob).await;
    let (_, token) = mailed_invite(&sink, 1).await;
    let key = session_key(&app, &sink, "bob@example.com", &[], 1).await;
    assert_eq!(exchange(&app, &key, &format!("?invite={token}")).await.0, 200);

    let again = session_key(&app, &sink, "bob@example.com", &[], 2).await;
    let (status, body) = exchange(&app, &again, &format!("?invite={token}")).await;
    assert_eq!(
        (status, body["accounts"][0]["user"]["_id"].as_str()),
        (200, Some(bob.as_str()))
    );
    let stranger = session_key(&app, &sink, "carol@example.com", &[], 3).await;
    let (status, body) = exchange(&app, &stranger, &format!("?invite={token}")).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (400, Some("Invalid or expired invite"))
    );
}

#[tokio::test]
async fn an_invitation_to_a_login_that_is_another_person_there_answers_conflict_invite() {
    let (app, sink) = app_with_mail(&[]).await;
    let owner = app.owner_token().await;
    let bob = person(
        &app,
        &owner,
        json!([{"type": "name", "string": "Bob"}, {"type": "email", "string": "bob@example.com"}]),
    )
    .await;
    let robert = person(&app, &owner, json!([{"type": "email", "string": "robert@example.com"}])).await;
    invite(&app, &owner, &bob).await;
    let (_, for_bob) = mailed_invite(&sink, 1).await;
    let key = session_key(&app, &sink, "bob@example.com", &[], 1).await;
    assert_eq!(exchange(&app, &key, &format!("?invite={for_bob}")).await.0, 200);
    invite(&app, &owner, &robert).await;
    let (_, for_robert) = mailed_invite(&sink, 3).await;

    let key = session_key(&app, &sink, "bob@example.com", &[], 3).await;
    let (status, body) = exchange(&app, &key, &format!("?invite={for_robert}")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["conflict"], "invite");
    assert_eq!(body["accounts"][0]["user"]["_id"], bob.as_str());
    let (_, entity) = app.get(&format!("/api/demo/entity/{robert}"), &owner).await;
    assert_eq!(entity["entity"]["service_user"][0]["invite"], true, "{entity}");
}

#[tokio::test]
async fn only_an_owner_or_the_person_itself_may_invite_a_login_to_a_person() {
    let (app, sink) = app_with_mail(&[]).await;
    let owner = app.owner_token().await;
    let (carol, carol_key) = app.add_person(&owner, "Carol").await;
    let bob = person(
        &app,
        &owner,
        json!([{"type": "email", "string": "bob@example.com"}, {"type": "_editor", "reference": carol}]),
    )
    .await;
    let carol_token = app.token_for(&carol_key).await;
    let (status, _) = app
        .post(
            &format!("/api/demo/entity/{bob}"),
            &carol_token,
            json!({"type": "service_user", "string": "mine now"}),
        )
        .await;
    assert_eq!(status, 403);
    assert!(sink.mails().is_empty());
}

#[tokio::test]
async fn deleting_a_login_method_ends_the_tokens_of_that_login() {
    let (app, sink) = app_with_mail(&[("auth.revocation_check_seconds", "0".to_owned())]).await;
    let owner = app.owner_token().await;
    let (bob, invite) = support::email_login::invite_bob(&app, &sink, &owner, 0).await;
    let key = session_key(&app, &sink, "bob@example.com", &[], 1).await;
    let (status, body) = exchange(&app, &key, &format!("?invite={invite}")).await;
    assert_eq!(status, 200, "{body}");
    let token = body["token"].as_str().unwrap().to_owned();
    assert_eq!(app.get("/api/demo", &token).await.0, 200);
    let (_, entity) = app.get(&format!("/api/demo/entity/{bob}"), &owner).await;
    let login = entity["entity"]["service_user"][0]["_id"].as_str().unwrap().to_owned();
    let (status, _) = app
        .call("DELETE", &format!("/api/demo/property/{login}"), Some(&owner), None)
        .await;
    assert_eq!(status, 200);
    let (status, refused) = app.get("/api/demo", &token).await;
    assert_eq!(
        (status, refused["message"].as_str()),
        (401, Some("Invalid token")),
        "{refused}"
    );
}
