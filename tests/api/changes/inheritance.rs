//! Rights that follow a parent's: a child that inherits its rights leaves
//! the streams of those its parent's change hides it from, and tells no
//! one else of a change that wrote none of its values.

use serde_json::json;

use super::sse::must_open;
use super::{add, book, book_type, feed, marker, value_id};
use crate::support::TestApp;

#[tokio::test]
async fn a_child_hidden_through_its_parent_sends_leave() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (reader, reader_key) = app.add_person(&owner, "Reader").await;
    let reader_token = app.token_for(&reader_key).await;
    let books = book_type(&app, &owner).await;
    let mut stream = must_open(&feed(&app, ""), Some(&reader_token), &[]).await;

    let shelf = marker(&app, &owner, &books, &reader).await;
    let child = book(
        &app,
        &owner,
        &books,
        json!([{"type": "_parent", "reference": shelf}, {"type": "_inheritrights", "boolean": true}]),
    )
    .await;
    for created in [&shelf, &child] {
        let event = stream.expect().await;
        assert_eq!(
            (event.data["action"].as_str(), event.data["_id"].as_str()),
            (Some("create"), Some(created.as_str())),
            "the child is read through its parent's rights"
        );
    }
    let viewer = value_id(&app, &owner, &shelf, "_viewer").await;
    let (status, body) = app.delete(&format!("/api/demo/property/{viewer}"), &owner).await;
    assert_eq!(status, 200, "{body}");

    let mut left = vec![stream.expect().await.summary(), stream.expect().await.summary()];
    left.sort();
    let mut expected = vec![format!("leave {shelf} "), format!("leave {child} ")];
    expected.sort();
    assert_eq!(left, expected);
    add(&app, &owner, &child, json!([{"type": "title", "string": "unseen"}])).await;
    let later = marker(&app, &owner, &books, &reader).await;
    assert_eq!(
        stream.expect().await.data["_id"],
        later.as_str(),
        "no event of the hidden child"
    );
}

#[tokio::test]
async fn rights_that_follow_a_parent_send_nothing_to_streams_still_reading() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (reader, _) = app.add_person(&owner, "Reader").await;
    let books = book_type(&app, &owner).await;
    let shelf = book(&app, &owner, &books, json!([{"type": "name", "string": "shelf"}])).await;
    let child = book(
        &app,
        &owner,
        &books,
        json!([{"type": "_parent", "reference": shelf}, {"type": "_inheritrights", "boolean": true}]),
    )
    .await;
    let mut stream = must_open(&feed(&app, ""), Some(&owner), &[]).await;

    add(&app, &owner, &shelf, json!([{"type": "_viewer", "reference": reader}])).await;
    add(&app, &owner, &child, json!([{"type": "title", "string": "Dune"}])).await;

    assert_eq!(stream.expect().await.summary(), format!("update {shelf} _viewer"));
    assert_eq!(
        stream.expect().await.summary(),
        format!("update {child} title"),
        "no event for the child's rights that followed"
    );
}
