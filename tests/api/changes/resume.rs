//! Resuming a stream: after `Last-Event-ID` or `since` (the header wins),
//! with nothing lost or repeated; `reset` past the retention.

use std::time::Duration;

use serde_json::json;

use super::sse::must_open;
use super::{book, book_type, feed};
use crate::support::TestApp;

#[tokio::test]
async fn a_stream_resumes_after_last_event_id_or_since_without_loss_or_duplicate() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let books = book_type(&app, &owner).await;
    let mut first = must_open(&feed(&app, ""), Some(&owner), &[]).await;
    let mut created = Vec::new();
    for name in ["one", "two", "three"] {
        created.push(book(&app, &owner, &books, json!([{"type": "name", "string": name}])).await);
    }
    let mut ids = Vec::new();
    for expected in &created {
        let event = first.expect().await;
        assert_eq!(event.data["_id"], expected.as_str());
        ids.push(event.id.unwrap());
    }
    assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "ids increase: {ids:?}");
    drop(first);

    let header = ids[0].to_string();
    let mut resumed = must_open(&feed(&app, ""), Some(&owner), &[("Last-Event-ID", &header)]).await;
    let mut seen = Vec::new();
    while let Some(event) = resumed.next(Duration::from_millis(1500)).await {
        seen.push(event.data["_id"].as_str().unwrap().to_owned());
    }
    assert_eq!(seen, created[1..].to_vec(), "after Last-Event-ID");

    let since = format!("since={}", ids[1]);
    let mut resumed = must_open(&feed(&app, &since), Some(&owner), &[]).await;
    assert_eq!(resumed.expect().await.data["_id"], created[2].as_str(), "after since");
    assert!(
        resumed.next(Duration::from_millis(1500)).await.is_none(),
        "nothing twice"
    );

    let mut both = must_open(&feed(&app, &since), Some(&owner), &[("Last-Event-ID", &header)]).await;
    assert_eq!(both.expect().await.data["_id"], created[1].as_str(), "the header wins");
}

#[tokio::test]
async fn a_resume_past_the_retention_gets_one_reset() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let books = book_type(&app, &owner).await;
    let mut stream = must_open(&feed(&app, ""), Some(&owner), &[]).await;
    book(&app, &owner, &books, json!([{"type": "name", "string": "old"}])).await;
    let old = stream.expect().await.id.unwrap();
    drop(stream);
    {
        use diesel_async::RunQueryDsl;
        let mut conn = app.pool.get().await.unwrap();
        diesel::sql_query("UPDATE change_log SET at = now() - interval '2 days' WHERE db = 'demo'")
            .execute(&mut conn)
            .await
            .unwrap();
    }
    let swept = eds::jobs::change_log::sweep(&app.pool, 24).await.unwrap();
    assert!(swept > 0, "the sweep deletes rows past the retention");

    let mut resumed = must_open(&feed(&app, &format!("since={old}")), Some(&owner), &[]).await;
    let reset = resumed.expect().await;
    assert_eq!(reset.event, "reset", "{reset:?}");
    let new = book(&app, &owner, &books, json!([{"type": "name", "string": "new"}])).await;
    let next = resumed.expect().await;
    assert_eq!(
        (next.event.as_str(), next.data["_id"].as_str()),
        ("change", Some(new.as_str()))
    );
}
