//! Streams of one caller and query share their work (a group): each is
//! still told only of what concerns it — a `leave` for what that stream was
//! told of, whenever it opened.

use std::time::Duration;

use serde_json::json;

use super::sse::{Events, must_open};
use super::{add, book, book_type, feed, marker, value_id};
use crate::support::TestApp;

/// The actions and entities of `stream`'s next `count` events.
async fn next_events(stream: &mut Events, count: usize) -> Vec<String> {
    let mut seen = Vec::new();
    for _ in 0..count {
        // which events came before one was missed tells a failure's cause
        let Some(event) = stream.next(Duration::from_secs(10)).await else {
            panic!("{count} events, each within 10 s: only {seen:?} came");
        };
        seen.push(format!(
            "{} {}",
            event.data["action"].as_str().unwrap_or_default(),
            event.data["_id"].as_str().unwrap_or_default()
        ));
    }
    seen
}

#[tokio::test]
async fn a_stream_opened_later_by_the_same_caller_gets_leave_only_for_what_it_was_told_of() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (reader, reader_key) = app.add_person(&owner, "Reader").await;
    let reader_token = app.token_for(&reader_key).await;
    let books = book_type(&app, &owner).await;
    let mut elder = must_open(&feed(&app, ""), Some(&reader_token), &[]).await;
    let first = marker(&app, &owner, &books, &reader).await;
    assert_eq!(next_events(&mut elder, 1).await, [format!("create {first}")]);

    let mut younger = must_open(&feed(&app, ""), Some(&reader_token), &[]).await;
    let second = marker(&app, &owner, &books, &reader).await;
    // a change is judged against the entity as its batch is read: had the
    // viewer gone by then, neither stream would be told of `second` at all
    for stream in [&mut elder, &mut younger] {
        assert_eq!(next_events(stream, 1).await, [format!("create {second}")]);
    }
    for entity in [&first, &second] {
        let viewer = value_id(&app, &owner, entity, "_viewer").await;
        let (status, body) = app.delete(&format!("/api/demo/property/{viewer}"), &owner).await;
        assert_eq!(status, 200, "{body}");
    }
    let last = marker(&app, &owner, &books, &reader).await;

    assert_eq!(
        next_events(&mut elder, 3).await,
        [
            format!("leave {first}"),
            format!("leave {second}"),
            format!("create {last}")
        ]
    );
    assert_eq!(
        next_events(&mut younger, 2).await,
        [format!("leave {second}"), format!("create {last}")],
        "no leave of an entity reported before it opened"
    );
}

#[tokio::test]
async fn a_filtered_stream_opened_later_by_the_same_caller_gets_leave_for_what_matched_as_it_opened() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let books = book_type(&app, &owner).await;
    let mut elder = must_open(&feed(&app, "title.string=Dune"), Some(&owner), &[]).await;
    let dune = book(&app, &owner, &books, json!([{"type": "title", "string": "Dune"}])).await;
    assert_eq!(next_events(&mut elder, 1).await, [format!("create {dune}")]);

    let mut younger = must_open(&feed(&app, "title.string=Dune"), Some(&owner), &[]).await;
    let title = value_id(&app, &owner, &dune, "title").await;
    let (status, body) = app.delete(&format!("/api/demo/property/{title}"), &owner).await;
    assert_eq!(status, 200, "{body}");
    add(
        &app,
        &owner,
        &dune,
        json!([{"type": "note", "string": "no longer a match"}]),
    )
    .await;
    let last = book(&app, &owner, &books, json!([{"type": "title", "string": "Dune"}])).await;

    for stream in [&mut elder, &mut younger] {
        assert_eq!(
            next_events(stream, 2).await,
            [format!("leave {dune}"), format!("create {last}")]
        );
    }
}
