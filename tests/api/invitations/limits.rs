//! Invitation mails count against the sign-in mail limits (per recipient,
//! per client address) and at most one goes out per entity per
//! `limits.invitation_cooldown_seconds`: over either, the write is 429
//! `rate_limited` with `Retry-After` and nothing is written, through REST and
//! the MCP tool alike.

use super::*;
use support::email_login::ask_for_link;

const INVITATION: &str = "an invitation";

/// Sends an invitation to `entity` as `owner`; answers the status, the
/// `Retry-After` header and the body.
async fn send_invitation(app: &TestApp, owner: &str, entity: &str) -> (u16, Option<u64>, Json) {
    let response = app
        .http
        .post(format!("{}/api/demo/entity/{entity}", app.url))
        .bearer_auth(owner)
        .json(&json!({"type": "service_user", "string": INVITATION}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|value| value.to_str().unwrap().parse().unwrap());
    (status, retry_after, response.json().await.unwrap())
}

/// The invitation as the MCP tool `add_properties` sends it; answers its
/// JSON text and `isError`.
async fn invite_by_mcp(app: &TestApp, owner: &str, entity: &str) -> (Json, bool) {
    let arguments = json!({"_id": entity, "properties": [{"type": "service_user", "string": INVITATION}]});
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": "add_properties", "arguments": arguments}});
    let (status, body) = app.call("POST", "/api/demo/mcp", Some(owner), Some(message)).await;
    assert_eq!(status, 200, "{body}");
    let result = &body["result"];
    let text = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    (text, result["isError"].as_bool().unwrap())
}

/// How many `service_user` values `entity` holds, live or deleted.
async fn logins_ever(app: &TestApp, owner: &str, entity: &str) -> usize {
    let (status, history) = app.get(&format!("/api/demo/entity/{entity}/history"), owner).await;
    assert_eq!(status, 200, "{history}");
    history["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|change| change["type"] == "service_user" && change["new"].is_object())
        .count()
}

fn assert_rate_limited(status: u16, retry_after: Option<u64>, body: &Json, most: u64) {
    assert_eq!((status, body["error"].as_str()), (429, Some("rate_limited")), "{body}");
    let retry_after = retry_after.expect("Retry-After");
    assert!((1..=most).contains(&retry_after), "{retry_after}");
}

#[tokio::test]
async fn a_second_invitation_to_one_entity_within_the_cooldown_is_429_and_writes_nothing() {
    let (app, sink) = app_with_mail(&[]).await;
    let owner = app.owner_token().await;
    let bob = person(&app, &owner, json!([{"type": "email", "string": "bob@example.com"}])).await;
    let carol = person(&app, &owner, json!([{"type": "email", "string": "carol@example.com"}])).await;
    invite(&app, &owner, &bob).await;
    sink.wait_for(1).await;

    let (status, retry_after, body) = send_invitation(&app, &owner, &bob).await;
    assert_rate_limited(status, retry_after, &body, 300);
    let (answer, is_error) = invite_by_mcp(&app, &owner, &bob).await;
    assert!(is_error, "{answer}");
    assert_eq!(
        (answer["status"].as_u64(), answer["error"].as_str()),
        (Some(429), Some("rate_limited"))
    );
    assert_eq!(logins_ever(&app, &owner, &bob).await, 1, "no second invitation stored");
    // another entity is invited at once, by MCP too
    let (answer, is_error) = invite_by_mcp(&app, &owner, &carol).await;
    assert!(!is_error, "{answer}");
    let mails = sink.wait_for(2).await;
    assert_eq!(mails[1].header("To"), Some("carol@example.com"));
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(sink.mails().len(), 2, "Bob got one mail");
}

#[tokio::test]
async fn invitations_to_many_entities_with_one_address_stop_at_the_per_recipient_mail_limit() {
    let (app, sink) = app_with_mail(&[("limits.mails_per_hour_per_recipient", "2".to_owned())]).await;
    let owner = app.owner_token().await;
    let mut entities = Vec::new();
    for _ in 0..4 {
        let shared = json!([{"type": "email", "string": "same@example.com"}]);
        entities.push(person(&app, &owner, shared).await);
    }
    invite(&app, &owner, &entities[0]).await;
    invite(&app, &owner, &entities[1]).await;
    sink.wait_for(2).await;

    let (status, retry_after, body) = send_invitation(&app, &owner, &entities[2]).await;
    assert_rate_limited(status, retry_after, &body, 3600);
    let (answer, is_error) = invite_by_mcp(&app, &owner, &entities[3]).await;
    assert!(is_error && answer["error"] == "rate_limited", "{answer}");
    for entity in &entities[2..] {
        assert_eq!(logins_ever(&app, &owner, entity).await, 0);
    }
    // the sign-in mails draw from the same allowance
    assert_eq!(
        ask_for_link(&app, &client_at("127.0.0.1"), "Same@Example.com", &[]).await,
        429
    );
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(sink.mails().len(), 2);
}

#[tokio::test]
async fn with_limits_off_an_entity_is_invited_again_at_once() {
    let (app, sink) = app_with_mail(&[("limits.enabled", "false".to_owned())]).await;
    let owner = app.owner_token().await;
    let bob = person(&app, &owner, json!([{"type": "email", "string": "bob@example.com"}])).await;
    invite(&app, &owner, &bob).await;
    invite(&app, &owner, &bob).await;
    assert_eq!(sink.wait_for(2).await.len(), 2);
    assert_eq!(logins_ever(&app, &owner, &bob).await, 2);
}
