//! What is delivered: each committed change as a signed event, filtered by
//! the webhook's `events` and `entity_type` and by its owners' rights.

use std::time::Duration;

use serde_json::json;

use super::receiver::Receiver;
use super::{WAIT, app, deliveries_at_least, webhook};
use crate::support;

#[tokio::test]
async fn create_update_and_delete_are_delivered_signed_with_the_webhook_secret() {
    let app = app(&[]).await;
    let token = app.owner_token().await;
    let book = app.create_type(&token, "book").await;
    let receiver = Receiver::start().await;
    let (hook, secret) = webhook(
        &app,
        &token,
        &receiver.url(),
        &["create", "update", "delete"],
        Some(&book),
    )
    .await;
    assert!(secret.starts_with("whsec_"), "{secret}");

    let id = app
        .create(&token, &book, json!([{"type": "name", "string": "Dune"}]))
        .await;
    receiver.wait_for(1, WAIT).await;
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{id}"),
            &token,
            json!([{"type": "name", "string": "Dune II"}]),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    receiver.wait_for(2, WAIT).await;
    let (status, body) = app.delete(&format!("/api/demo/entity/{id}"), &token).await;
    assert_eq!(status, 200, "{body}");
    let received = receiver.wait_for(3, WAIT).await;

    let events: Vec<String> = received
        .iter()
        .map(|r| r.json()["event"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(events, ["create", "update", "delete"]);
    for request in &received {
        let body = request.json();
        assert_eq!(request.path, "/hook");
        assert_eq!(body["db"], "demo");
        assert_eq!(body["entity"], json!({"_id": id}));
        assert_eq!(body["id"], request.header("webhook-id"));
        assert!(body["at"].as_str().is_some_and(|at| at.ends_with('Z')), "{body}");
        let timestamp: i64 = request.header("webhook-timestamp").parse().unwrap();
        assert!((chrono::Utc::now().timestamp() - timestamp).abs() < 60);
        assert!(request.signed_with(&secret), "{request:?}");
        assert!(!request.signed_with(&eds::webhooks::post::new_secret()));
    }
    let ids: std::collections::HashSet<&str> = received.iter().map(|r| r.header("webhook-id")).collect();
    assert_eq!(ids.len(), 3, "each event has its own id");
    let listed = deliveries_at_least(&app, &token, &hook, 3).await;
    assert_eq!(listed["count"], 3, "{listed}");
    assert_eq!(listed["deliveries"][0]["event"], "delete", "newest first: {listed}");
    assert_eq!(listed["deliveries"][0]["status"], 200);
}

#[tokio::test]
async fn a_create_is_checked_against_webhooks_only_where_a_webhook_may_want_it() {
    let app = app(&[]).await;
    let token = app.owner_token().await;
    let book = app.create_type(&token, "book").await;
    let unwatched = app
        .create(&token, &book, json!([{"type": "name", "string": "Dune"}]))
        .await;
    let receiver = Receiver::start().await;
    let (hook, _) = webhook(&app, &token, &receiver.url(), &["create"], Some(&book)).await;
    let watched = app
        .create(&token, &book, json!([{"type": "name", "string": "Emma"}]))
        .await;

    let received = receiver.wait_for(1, WAIT).await;
    assert_eq!(received[0].json()["entity"], json!({"_id": watched}));
    let checked = support::changes_checked_for_webhooks(&app.database_url, "demo").await;
    assert!(!checked.contains(&unwatched), "no webhook then: {checked:?}");
    assert!(
        checked.contains(&hook),
        "a webhook's create keeps its settings: {checked:?}"
    );
    assert!(checked.contains(&watched), "{checked:?}");
}

#[tokio::test]
async fn events_and_entity_type_choose_what_is_delivered() {
    let app = app(&[]).await;
    let token = app.owner_token().await;
    let book = app.create_type(&token, "book").await;
    let film = app.create_type(&token, "film").await;
    let deletions = Receiver::start().await;
    let everything = Receiver::start().await;
    webhook(&app, &token, &deletions.url(), &["delete"], Some(&book)).await;
    let (any_type, _) = webhook(&app, &token, &everything.url(), &["create"], None).await;

    let kept_book = app
        .create(&token, &book, json!([{"type": "name", "string": "kept"}]))
        .await;
    let gone_book = app
        .create(&token, &book, json!([{"type": "name", "string": "gone"}]))
        .await;
    let gone_film = app
        .create(&token, &film, json!([{"type": "name", "string": "gone"}]))
        .await;
    for id in [&gone_book, &gone_film] {
        let (status, body) = app.delete(&format!("/api/demo/entity/{id}"), &token).await;
        assert_eq!(status, 200, "{body}");
    }
    let received = deletions.wait_for(1, WAIT).await;
    let created = everything.wait_for(3, WAIT).await;
    tokio::time::sleep(Duration::from_millis(500)).await;

    assert_eq!(deletions.received().len(), 1, "{:?}", deletions.received());
    assert_eq!(received[0].json()["event"], "delete");
    assert_eq!(received[0].json()["entity"]["_id"], gone_book.as_str());
    let mut created: Vec<String> = created
        .iter()
        .map(|r| r.json()["entity"]["_id"].as_str().unwrap().to_owned())
        .collect();
    created.sort();
    let mut expected = vec![kept_book, gone_book, gone_film];
    expected.sort();
    assert_eq!(created, expected, "creations of every type, no deletion");
    assert_eq!(
        everything.received().len(),
        3,
        "nor the webhook's own creation ({any_type})"
    );
    assert!(everything.received().iter().all(|r| r.json()["event"] == "create"));
}

#[tokio::test]
async fn only_events_every_owner_of_the_webhook_may_read_are_delivered() {
    let app = app(&[]).await;
    let token = app.owner_token().await;
    let book = app.create_type(&token, "book").await;
    let (reader, reader_key) = app.add_person(&token, "Reader").await;
    let reader_token = app.token_for(&reader_key).await;
    let receiver = Receiver::start().await;
    webhook(&app, &reader_token, &receiver.url(), &["create", "delete"], Some(&book)).await;

    let hidden = app
        .create(&token, &book, json!([{"type": "name", "string": "hidden"}]))
        .await;
    let shown = app
        .create(
            &token,
            &book,
            json!([{"type": "name", "string": "shown"}, {"type": "_viewer", "reference": reader}]),
        )
        .await;
    for id in [&hidden, &shown] {
        let (status, body) = app.delete(&format!("/api/demo/entity/{id}"), &token).await;
        assert_eq!(status, 200, "{body}");
    }
    receiver.wait_for(2, WAIT).await;
    tokio::time::sleep(Duration::from_millis(500)).await;

    let mut seen: Vec<(String, String)> = receiver
        .received()
        .iter()
        .map(|r| {
            let body = r.json();
            (
                body["event"].as_str().unwrap().to_owned(),
                body["entity"]["_id"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [("create".to_owned(), shown.clone()), ("delete".to_owned(), shown)],
        "the deletion goes to those who could read the entity before"
    );
}
