//! The rules of writing a webhook, its secret as a credential, and who
//! reads its deliveries.

use serde_json::{Value as Json, json};

use super::receiver::Receiver;
use super::{app, create_webhook, deliveries, webhook};

#[tokio::test]
async fn url_must_be_http_or_https() {
    let app = app(&[]).await;
    let token = app.owner_token().await;
    for url in ["ftp://example.com/hook", "example.com/hook", "javascript:alert(1)"] {
        let (status, body) = create_webhook(&app, &token, url, &["create"], None).await;
        assert_eq!(status, 400, "{url}: {body}");
        assert_eq!(body["error"], "invalid_body", "{body}");
        assert_eq!(body["status"], 400);
        assert!(body["message"].as_str().unwrap().contains("http"), "{body}");
    }
    let (status, body) = create_webhook(&app, &token, "https://example.com/hook", &["someday"], None).await;
    assert_eq!((status, &body["error"]), (400, &json!("invalid_body")), "{body}");
    let before = app.get("/api/demo/entity?_type.string=webhook", &token).await.1["count"].clone();
    assert_eq!(before, 0, "nothing half written");
}

#[tokio::test]
async fn a_literal_refused_address_is_refused_at_write_unless_private_targets_are_allowed() {
    let app = app(&[("webhooks.allow_private_targets", "false".to_owned())]).await;
    let token = app.owner_token().await;
    for url in [
        "http://127.0.0.1:9/hook",
        "http://[::1]/hook",
        "https://10.0.0.8/hook",
        "http://169.254.169.254/latest",
        "http://[::ffff:192.168.0.1]/",
        "http://0.0.0.0/",
    ] {
        let (status, body) = create_webhook(&app, &token, url, &["create"], None).await;
        assert_eq!((status, &body["error"]), (400, &json!("invalid_body")), "{url}: {body}");
    }
    let (hook, _) = webhook(&app, &token, "https://93.184.216.34/hook", &["delete"], None).await;
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{hook}"),
            &token,
            json!([{"type": "url", "string": "http://127.0.0.1/"}]),
        )
        .await;
    assert_eq!(
        (status, &body["error"]),
        (400, &json!("invalid_body")),
        "changing the url: {body}"
    );

    let allowed = super::app(&[]).await;
    let token = allowed.owner_token().await;
    let (status, body) = create_webhook(&allowed, &token, "http://127.0.0.1:9/hook", &["create"], None).await;
    assert_eq!(status, 201, "{body}");
}

/// The `secret` values of entity `id` as `token` reads them.
async fn secrets_read(app: &support::TestApp, token: &str, id: &str) -> Vec<Json> {
    let (status, body) = app.get(&format!("/api/demo/entity/{id}"), token).await;
    assert_eq!(status, 200, "{body}");
    body["entity"]["secret"].as_array().cloned().unwrap_or_default()
}

use crate::support;

#[tokio::test]
async fn the_secret_is_generated_shown_once_masked_everywhere_and_written_only_by_an_owner() {
    let app = app(&[]).await;
    let token = app.owner_token().await;
    let receiver = Receiver::start().await;
    let (hook, secret) = webhook(&app, &token, &receiver.url(), &["create"], None).await;
    let key = secret.strip_prefix("whsec_").unwrap();
    use base64::Engine;
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(key).unwrap().len(), 32);

    let read = secrets_read(&app, &token, &hook).await;
    assert_eq!(read.len(), 1);
    assert_eq!(read[0]["string"], "***", "{read:?}");
    let value_id = read[0]["_id"].as_str().unwrap();
    let (_, property) = app.get(&format!("/api/demo/property/{value_id}"), &token).await;
    assert_eq!(property["string"], "***", "{property}");
    let (_, history) = app.get(&format!("/api/demo/entity/{hook}/history"), &token).await;
    assert!(!history.to_string().contains(key), "{history}");
    let (_, listed) = app
        .get("/api/demo/entity?_type.string=webhook&props=secret", &token)
        .await;
    assert!(!listed.to_string().contains(key), "{listed}");

    // a second write answers a new secret, once
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{hook}"),
            &token,
            json!([{"type": "secret", "string": "x", "_id": value_id}]),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let renewed = body["properties"][0]["string"].as_str().unwrap();
    assert!(renewed.starts_with("whsec_") && renewed != secret, "{body}");

    // an editor who is not an owner may not write it
    let (editor, editor_key) = app.add_person(&token, "Editor").await;
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{hook}"),
            &token,
            json!([{"type": "_editor", "reference": editor}]),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let editor_token = app.token_for(&editor_key).await;
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{hook}"),
            &editor_token,
            json!([{"type": "secret", "string": "mine"}]),
        )
        .await;
    assert_eq!((status, &body["error"]), (403, &json!("forbidden")), "{body}");
    assert_eq!(secrets_read(&app, &token, &hook).await.len(), 1, "nothing written");

    // a copy has no secret
    let (status, body) = app
        .call(
            "POST",
            &format!("/api/demo/entity/{hook}/duplicate"),
            Some(&token),
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let copy = body[0]["_id"].as_str().unwrap();
    assert!(secrets_read(&app, &token, copy).await.is_empty());
}

#[tokio::test]
async fn a_database_holds_at_most_max_per_database_webhooks() {
    let app = app(&[("webhooks.max_per_database", "2".to_owned())]).await;
    let token = app.owner_token().await;
    let mut made = Vec::new();
    for _ in 0..2 {
        made.push(
            webhook(&app, &token, "http://127.0.0.1:9/hook", &["delete"], None)
                .await
                .0,
        );
    }
    let first = &made[0];
    let (status, body) = create_webhook(&app, &token, "http://127.0.0.1:9/hook", &["delete"], None).await;
    assert_eq!((status, &body["error"]), (403, &json!("forbidden")), "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("at most 2 webhooks"),
        "{body}"
    );
    let (status, body) = app
        .call(
            "POST",
            &format!("/api/demo/entity/{first}/duplicate"),
            Some(&token),
            None,
        )
        .await;
    assert_eq!(
        (status, &body["error"]),
        (403, &json!("forbidden")),
        "a copy counts too: {body}"
    );
    let (_, listed) = app.get("/api/demo/entity?_type.string=webhook", &token).await;
    assert_eq!(listed["count"], 2);
}

#[tokio::test]
async fn deliveries_are_read_by_the_webhook_owners_only() {
    let app = app(&[]).await;
    let token = app.owner_token().await;
    let (hook, _) = webhook(&app, &token, "http://127.0.0.1:9/hook", &["delete"], None).await;
    let (viewer, viewer_key) = app.add_person(&token, "Viewer").await;
    let (_, stranger_key) = app.add_person(&token, "Stranger").await;
    let path = format!("/api/demo/entity/{hook}/deliveries");

    let stranger = app.token_for(&stranger_key).await;
    let (status, body) = app.get(&path, &stranger).await;
    assert_eq!((status, &body["error"]), (404, &json!("not_found")), "{body}");
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{hook}"),
            &token,
            json!([{"type": "_viewer", "reference": viewer}]),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let viewer_token = app.token_for(&viewer_key).await;
    let (status, body) = app.get(&path, &viewer_token).await;
    assert_eq!((status, &body["error"]), (403, &json!("forbidden")), "{body}");
    let (status, body) = app.call("GET", &path, None, None).await;
    assert_eq!(status, 401, "{body}");

    assert_eq!(
        deliveries(&app, &token, &hook).await,
        json!({"deliveries": [], "count": 0})
    );
}

#[tokio::test]
async fn undeleting_a_webhook_counts_against_max_per_database() {
    let app = app(&[("webhooks.max_per_database", "1".to_owned())]).await;
    let token = app.owner_token().await;
    let (first, _) = webhook(&app, &token, "http://127.0.0.1:9/hook", &["delete"], None).await;
    let (status, body) = app.delete(&format!("/api/demo/entity/{first}"), &token).await;
    assert_eq!(status, 200, "{body}");
    webhook(&app, &token, "http://127.0.0.1:9/other", &["delete"], None).await;

    let restore = format!("/api/demo/entity/{first}/restore");
    let (status, body) = app.call("POST", &restore, Some(&token), None).await;
    assert_eq!((status, &body["error"]), (403, &json!("forbidden")), "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("at most 1 webhooks"),
        "{body}"
    );
    let (_, listed) = app.get("/api/demo/entity?_type.string=webhook", &token).await;
    assert_eq!(listed["count"], 1, "the undelete wrote nothing");
}
