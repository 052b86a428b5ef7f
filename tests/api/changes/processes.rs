//! Two real `eds serve` processes on one database: a change made through
//! one reaches a stream of the other within a second, and a stopping
//! process ends its streams at once.

use std::time::{Duration, Instant};

use serde_json::json;

use super::sse::must_open;
use crate::support::{self, processes};

#[tokio::test]
async fn a_write_through_one_process_reaches_a_stream_of_another_within_a_second() {
    let database_url = support::fresh_database();
    let data_dir = support::tempdir::Dir::new();
    let key = processes::create_demo(&database_url, &data_dir.0, "feed@example.com")
        .await
        .key;
    let (mut reading, reading_url) = processes::serve(&database_url, &data_dir.0).await;
    let (_writing, writing_url) = processes::serve(&database_url, &data_dir.0).await;
    let http = reqwest::Client::new();
    let token = processes::login(&http, &reading_url, &key).await;
    let entity_type = processes::entity_type(&http, &writing_url, &token).await;
    let mut stream = must_open(&format!("{reading_url}/api/demo/changes"), Some(&token), &[]).await;

    for round in 0..3 {
        let values =
            json!([{"type": "_type", "reference": entity_type}, {"type": "name", "string": format!("n{round}")}]);
        let url = format!("{writing_url}/api/demo/entity");
        let created = processes::call_json(&http, &url, &token, Some(&values)).await;
        let written = Instant::now();
        let event = stream
            .next(Duration::from_secs(1))
            .await
            .expect("the change within 1 s");
        assert_eq!(event.data["_id"], created["_id"], "{event:?}");
        assert!(written.elapsed() < Duration::from_secs(1));
    }

    // SIGTERM: the stream ends long before the shutdown grace period (30 s)
    let pid = reading.id().unwrap().to_string();
    let stopped = tokio::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .unwrap();
    assert!(stopped.success());
    assert!(
        stream.ends_within(Duration::from_secs(5)).await,
        "the stream outlived SIGTERM"
    );
    let exited = tokio::time::timeout(Duration::from_secs(10), reading.wait()).await;
    assert!(exited.is_ok(), "the process stopped once its streams ended");
}
