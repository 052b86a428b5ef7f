//! Deliveries that fail: retried with the same id after a 5xx, a redirect
//! (not followed) or a time-out; a webhook failing for the whole retry
//! period is parked until a write to it; targets refused at delivery.

use std::time::Duration;

use serde_json::json;

use super::receiver::{Answer, Receiver};
use super::{WAIT, app, deliveries, deliveries_at_least, webhook};

/// A `book` type, a webhook on `receiver` for its creations, one book created.
async fn one_creation(app: &support::TestApp, token: &str, receiver: &Receiver) -> (String, String) {
    let book = app.create_type(token, "book").await;
    let (hook, secret) = webhook(app, token, &receiver.url(), &["create"], Some(&book)).await;
    app.create(token, &book, json!([{"type": "name", "string": "Dune"}]))
        .await;
    (hook, secret)
}

use crate::support;

#[tokio::test]
async fn a_failed_delivery_is_retried_with_the_same_id_until_it_succeeds() {
    let app = app(&[]).await;
    let token = app.owner_token().await;
    let receiver = Receiver::start().await;
    receiver.script(&[Answer::status(500), Answer::status(503)]);
    let (hook, secret) = one_creation(&app, &token, &receiver).await;

    let received = receiver.wait_for(3, WAIT).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.received().len(), 3, "delivered once it succeeded");
    assert!(
        received
            .iter()
            .all(|r| r.header("webhook-id") == received[0].header("webhook-id"))
    );
    assert!(received.iter().all(|r| r.signed_with(&secret)));
    let listed = deliveries_at_least(&app, &token, &hook, 3).await;
    let attempts: Vec<(i64, i64)> = listed["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["attempt"].as_i64().unwrap(), d["status"].as_i64().unwrap()))
        .collect();
    assert_eq!(attempts, [(3, 200), (2, 503), (1, 500)], "{listed}");
    assert_eq!(listed["deliveries"][1]["error"], "it answered 503");
    assert!(listed["deliveries"][0].get("error").is_none(), "{listed}");
}

#[tokio::test]
async fn a_redirect_is_not_followed_and_is_retried() {
    let app = app(&[]).await;
    let token = app.owner_token().await;
    let receiver = Receiver::start().await;
    receiver.script(&[Answer::status(302)]);
    let (hook, _) = one_creation(&app, &token, &receiver).await;

    let received = receiver.wait_for(2, WAIT).await;
    assert!(
        received.iter().all(|r| r.path == "/hook"),
        "/elsewhere never asked: {received:?}"
    );
    let listed = deliveries_at_least(&app, &token, &hook, 2).await;
    assert_eq!(listed["deliveries"][1]["status"], 302, "{listed}");
    assert!(listed["deliveries"][1]["error"].as_str().unwrap().contains("redirect"));
    assert_eq!(listed["deliveries"][0]["status"], 200);
}

#[tokio::test]
async fn a_time_out_is_retried() {
    let app = app(&[("webhooks.timeout_ms", "300".to_owned())]).await;
    let token = app.owner_token().await;
    let receiver = Receiver::start().await;
    receiver.script(&[Answer {
        status: 200,
        delay: Duration::from_secs(2),
    }]);
    let (hook, _) = one_creation(&app, &token, &receiver).await;

    receiver.wait_for(2, WAIT).await;
    let listed = deliveries_at_least(&app, &token, &hook, 2).await;
    assert_eq!(listed["count"], 2, "{listed}");
    let timed_out = &listed["deliveries"][1];
    assert_eq!(timed_out["error"], "no answer in time", "{listed}");
    assert!(timed_out.get("status").is_none());
    assert!(timed_out["duration_ms"].as_i64().unwrap() >= 300);
    assert_eq!(listed["deliveries"][0]["status"], 200);
}

/// The `eds_webhooks_parked` gauge of `/metrics`.
async fn parked_gauge(app: &support::TestApp) -> String {
    let text = app.metrics_text().await;
    text.lines()
        .find(|line| line.starts_with("eds_webhooks_parked "))
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_webhook_failing_for_retry_hours_is_parked_and_a_write_to_it_resumes_it() {
    // 0.0005 h = 1.8 s of retries
    let app = app(&[("webhooks.retry_hours", "0.0005".to_owned())]).await;
    let token = app.owner_token().await;
    let receiver = Receiver::start().await;
    receiver.otherwise(Answer::status(500));
    let (hook, _) = one_creation(&app, &token, &receiver).await;

    let mut parked = false;
    for _ in 0..200 {
        let listed = deliveries(&app, &token, &hook).await;
        if listed["deliveries"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("parked"))
        {
            parked = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(parked, "parked within 10 s");
    assert_eq!(parked_gauge(&app).await, "eds_webhooks_parked 1");
    let tried = receiver.received().len();
    assert!(tried >= 2, "retried before parking: {tried}");
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(receiver.received().len(), tried, "no attempt while parked");

    receiver.otherwise(Answer::status(200));
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{hook}"),
            &token,
            json!([{"type": "name", "string": "fixed"}]),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let received = receiver.wait_for(tried + 1, WAIT).await;
    assert_eq!(
        received.last().unwrap().json()["event"],
        "create",
        "the waiting event goes out"
    );
    assert_eq!(parked_gauge(&app).await, "eds_webhooks_parked 0");
    let listed = deliveries_at_least(&app, &token, &hook, tried as i64 + 1).await;
    assert_eq!(listed["deliveries"][0]["status"], 200, "{listed}");
}

#[tokio::test]
async fn a_host_name_resolving_to_loopback_is_refused_at_delivery() {
    let app = app(&[("webhooks.allow_private_targets", "false".to_owned())]).await;
    let token = app.owner_token().await;
    let receiver = Receiver::start().await;
    let book = app.create_type(&token, "book").await;
    let url = format!("http://localhost:{}/hook", receiver.port);
    let (hook, _) = webhook(&app, &token, &url, &["create"], Some(&book)).await;
    app.create(&token, &book, json!([{"type": "name", "string": "Dune"}]))
        .await;

    let mut listed = json!(null);
    for _ in 0..200 {
        listed = deliveries(&app, &token, &hook).await;
        if listed["count"].as_i64() > Some(0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        listed["deliveries"][0]["error"], "its host is a private or local address",
        "{listed}"
    );
    assert!(listed["deliveries"][0].get("status").is_none());
    assert!(receiver.received().is_empty());
}
