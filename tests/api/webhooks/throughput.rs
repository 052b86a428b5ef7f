//! Create throughput with webhooks active against none: the outbox insert
//! is the only cost a write pays. A measurement, run on demand:
//! `cargo test --test api -- --ignored webhooks::throughput --nocapture`.

use std::time::Instant;

use serde_json::json;

use super::receiver::Receiver;
use super::{app, webhook};
use crate::support::TestApp;

const CLIENTS: usize = 8;
const CREATES_PER_CLIENT: usize = 50;

/// Creates per second of `CLIENTS` clients creating books at once.
async fn creates_per_second(app: &TestApp, token: &str, book: &str) -> f64 {
    let started = Instant::now();
    let clients = (0..CLIENTS).map(|_| async {
        for n in 0..CREATES_PER_CLIENT {
            app.create(token, book, json!([{"type": "name", "string": format!("b{n}")}]))
                .await;
        }
    });
    futures_util::future::join_all(clients).await;
    (CLIENTS * CREATES_PER_CLIENT) as f64 / started.elapsed().as_secs_f64()
}

#[tokio::test]
#[ignore = "a measurement: run on demand"]
async fn create_throughput_with_ten_webhooks_and_without() {
    let app = app(&[]).await;
    let token = app.owner_token().await;
    let book = app.create_type(&token, "book").await;
    creates_per_second(&app, &token, &book).await; // warm up
    let without = creates_per_second(&app, &token, &book).await;
    let receiver = Receiver::start().await;
    for _ in 0..10 {
        webhook(
            &app,
            &token,
            &receiver.url(),
            &["create", "update", "delete"],
            Some(&book),
        )
        .await;
    }
    let with = creates_per_second(&app, &token, &book).await;
    eprintln!(
        "creates/s, {CLIENTS} clients: {without:.0} without webhooks, {with:.0} with 10 ({:.2}×); {} events received meanwhile",
        with / without,
        receiver.received().len()
    );
}
