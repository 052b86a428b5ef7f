//! The change feed, `GET /api/{db}/changes`: rights, filters, `leave`,
//! resuming, the limits and tickets, and changes made through another
//! process (CONTRACT "Change feed").

mod groups;
mod inheritance;
mod limits;
mod processes;
mod resume;
mod rights;
mod sse;

use crate::support::TestApp;
use serde_json::{Value as Json, json};

/// The stream URL of `demo` with query string `query`.
fn feed(app: &TestApp, query: &str) -> String {
    format!("{}/api/demo/changes?{query}", app.url)
}

/// Creates a `book` type; answers its id.
async fn book_type(app: &TestApp, token: &str) -> String {
    app.create_type(token, "book").await
}

/// Creates a book with `values`; answers its id.
async fn book(app: &TestApp, token: &str, book: &str, values: Json) -> String {
    app.create(token, book, values).await
}

/// Adds `values` to entity `id`.
async fn add(app: &TestApp, token: &str, id: &str, values: Json) -> Json {
    let (status, body) = app.post(&format!("/api/demo/entity/{id}"), token, values).await;
    assert_eq!(status, 200, "{body}");
    body
}

/// The `_id` of entity `id`'s first value of `prop`, as `token` reads it.
async fn value_id(app: &TestApp, token: &str, id: &str, prop: &str) -> String {
    let (status, body) = app.get(&format!("/api/demo/entity/{id}"), token).await;
    assert_eq!(status, 200, "{body}");
    body["entity"][prop][0]["_id"].as_str().unwrap().to_owned()
}

/// A marker entity readable by `viewer` (a person id), whose creation
/// ends a sequence of events: whatever came before it came in order.
async fn marker(app: &TestApp, token: &str, book: &str, viewer: &str) -> String {
    app.create(
        token,
        book,
        json!([{"type": "name", "string": "marker"}, {"type": "_viewer", "reference": viewer}]),
    )
    .await
}
