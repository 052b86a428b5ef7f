//! Webhooks end to end: `webhook` entities written through the API, events
//! delivered by the server's worker to a real HTTP receiver in the test,
//! signed as Standard Webhooks; retries, parking, the target rules, the
//! secret as a credential, and the deliveries route.

use crate::support;
mod delivery;
mod failures;
mod limits;
pub mod receiver;
mod rules;
mod throughput;

use std::time::Duration;

use serde_json::{Value as Json, json};
use support::TestApp;

/// How long a test waits for a delivery.
const WAIT: Duration = Duration::from_secs(20);

/// An app whose webhooks may post to loopback, retrying quickly.
async fn app(overrides: &[(&str, String)]) -> TestApp {
    let mut all = vec![
        ("webhooks.allow_private_targets", "true".to_owned()),
        ("webhooks.retry_base_ms", "100".to_owned()),
        ("webhooks.poll_ms", "50".to_owned()),
        ("webhooks.timeout_ms", "2000".to_owned()),
    ];
    all.extend(overrides.iter().cloned());
    TestApp::start_with(support::Storage::Local, &all).await
}

/// Creates a webhook as `token`'s person; answers its id and its secret.
pub async fn webhook(
    app: &TestApp,
    token: &str,
    url: &str,
    events: &[&str],
    entity_type: Option<&str>,
) -> (String, String) {
    let (status, body) = create_webhook(app, token, url, events, entity_type).await;
    assert_eq!(status, 201, "{body}");
    let secret = body["properties"]
        .as_array()
        .unwrap()
        .iter()
        .find(|value| value["type"] == "secret")
        .and_then(|value| value["string"].as_str())
        .unwrap()
        .to_owned();
    (body["_id"].as_str().unwrap().to_owned(), secret)
}

/// The answer to creating a webhook.
async fn create_webhook(
    app: &TestApp,
    token: &str,
    url: &str,
    events: &[&str],
    entity_type: Option<&str>,
) -> (u16, Json) {
    let webhook_type = app.find(token, "entity", "webhook").await;
    let mut values = vec![
        json!({"type": "_type", "reference": webhook_type}),
        json!({"type": "url", "string": url}),
        json!({"type": "secret", "string": "generate"}),
    ];
    values.extend(events.iter().map(|event| json!({"type": "events", "string": event})));
    if let Some(entity_type) = entity_type {
        values.push(json!({"type": "entity_type", "reference": entity_type}));
    }
    app.post("/api/demo/entity", token, Json::Array(values)).await
}

/// The webhook's deliveries once at least `count` attempts are recorded
/// (an attempt is recorded just after its answer arrives).
async fn deliveries_at_least(app: &TestApp, token: &str, webhook: &str, count: i64) -> Json {
    for _ in 0..400 {
        let listed = deliveries(app, token, webhook).await;
        if listed["deliveries"].as_array().unwrap().len() as i64 >= count {
            return listed;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("fewer than {count} attempts recorded within 20 s");
}

/// The webhook's deliveries as its owner reads them.
async fn deliveries(app: &TestApp, token: &str, webhook: &str) -> Json {
    let (status, body) = app.get(&format!("/api/demo/entity/{webhook}/deliveries"), token).await;
    assert_eq!(status, 200, "{body}");
    body
}
