//! Who is told of what: rights, filters before and after a change, `leave`,
//! the properties named, formula recomputations.

use serde_json::json;

use super::sse::must_open;
use super::{add, book, book_type, feed, marker, value_id};
use crate::support::TestApp;

#[tokio::test]
async fn an_entity_the_caller_cannot_read_sends_nothing() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (reader, reader_key) = app.add_person(&owner, "Reader").await;
    let reader_token = app.token_for(&reader_key).await;
    let books = book_type(&app, &owner).await;
    let mut stream = must_open(&feed(&app, ""), Some(&reader_token), &[]).await;
    let mut anonymous = must_open(&feed(&app, ""), None, &[]).await;

    let hidden = book(&app, &owner, &books, json!([{"type": "name", "string": "hidden"}])).await;
    add(
        &app,
        &owner,
        &hidden,
        json!([{"type": "title", "string": "still hidden"}]),
    )
    .await;
    let seen = marker(&app, &owner, &books, &reader).await;
    let public = book(&app, &owner, &books, json!([{"type": "_sharing", "string": "public"}])).await;

    assert_eq!(stream.expect().await.data["_id"], seen.as_str());
    assert_eq!(
        stream.expect().await.data["_id"],
        public.as_str(),
        "a public entity reaches persons"
    );
    let only = anonymous.expect().await;
    assert_eq!(
        (only.data["_id"].as_str(), only.data["action"].as_str()),
        (Some(public.as_str()), Some("create")),
        "anonymous callers see public entities only"
    );
}

#[tokio::test]
async fn a_rights_change_that_hides_an_entity_sends_leave_and_stops_its_events() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (reader, reader_key) = app.add_person(&owner, "Reader").await;
    let reader_token = app.token_for(&reader_key).await;
    let books = book_type(&app, &owner).await;
    let mut stream = must_open(&feed(&app, ""), Some(&reader_token), &[]).await;

    let shared = marker(&app, &owner, &books, &reader).await;
    let created = stream.expect().await;
    assert_eq!(
        (created.data["action"].as_str(), created.data["_id"].as_str()),
        (Some("create"), Some(shared.as_str()))
    );
    let viewer = value_id(&app, &owner, &shared, "_viewer").await;
    let (status, body) = app.delete(&format!("/api/demo/property/{viewer}"), &owner).await;
    assert_eq!(status, 200, "{body}");
    let left = stream.expect().await;
    assert_eq!(left.summary(), format!("leave {shared} "));
    add(&app, &owner, &shared, json!([{"type": "title", "string": "unseen"}])).await;
    let later = marker(&app, &owner, &books, &reader).await;
    assert_eq!(
        stream.expect().await.data["_id"],
        later.as_str(),
        "no event of the hidden entity"
    );
}

#[tokio::test]
async fn filters_are_tested_after_the_change_and_leave_follows_a_lost_match() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let books = book_type(&app, &owner).await;
    let mut stream = must_open(&feed(&app, "title.string=Dune"), Some(&owner), &[]).await;

    let plain = book(&app, &owner, &books, json!([{"type": "name", "string": "plain"}])).await;
    let dune = book(&app, &owner, &books, json!([{"type": "title", "string": "Dune"}])).await;
    assert_eq!(
        stream.expect().await.summary(),
        format!("create {dune} _created,_owner,_type,title")
    );
    add(&app, &owner, &plain, json!([{"type": "title", "string": "Dune"}])).await;
    assert_eq!(
        stream.expect().await.summary(),
        format!("update {plain} title"),
        "matching after the change"
    );

    let title = value_id(&app, &owner, &dune, "title").await;
    let (status, body) = app.delete(&format!("/api/demo/property/{title}"), &owner).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(stream.expect().await.summary(), format!("leave {dune} "));
    add(
        &app,
        &owner,
        &dune,
        json!([{"type": "note", "string": "no longer a match"}]),
    )
    .await;
    let last = book(&app, &owner, &books, json!([{"type": "title", "string": "Dune"}])).await;
    assert_eq!(
        stream.expect().await.data["_id"],
        last.as_str(),
        "nothing of an entity that left"
    );
}

#[tokio::test]
async fn a_deletion_is_tested_against_the_entity_before_it() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let books = book_type(&app, &owner).await;
    // matches before the stream opens: the stream knows it from the start
    let dune = book(&app, &owner, &books, json!([{"type": "title", "string": "Dune"}])).await;
    let other = book(&app, &owner, &books, json!([{"type": "title", "string": "Emma"}])).await;
    let mut stream = must_open(&feed(&app, "title.string=Dune"), Some(&owner), &[]).await;

    for id in [&other, &dune] {
        let (status, body) = app.delete(&format!("/api/demo/entity/{id}"), &owner).await;
        assert_eq!(status, 200, "{body}");
    }
    let deleted = stream.expect().await;
    assert_eq!(
        deleted.data["_id"],
        dune.as_str(),
        "only the deletion of a match: {deleted:?}"
    );
    assert_eq!(deleted.data["action"], "delete");
    assert_eq!(deleted.data["by"], app.person.as_str());
}

#[tokio::test]
async fn only_properties_the_caller_may_read_are_named_and_props_narrows_them() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (_, reader_key) = app.add_person(&owner, "Reader").await;
    let reader_token = app.token_for(&reader_key).await;
    let books = book_type(&app, &owner).await;
    let mut reader = must_open(&feed(&app, ""), Some(&reader_token), &[]).await;
    let mut narrowed = must_open(&feed(&app, "props=name,_sharing"), Some(&owner), &[]).await;

    // a domain entity shows the reader only what its definitions share
    let shared = book(
        &app,
        &owner,
        &books,
        json!([{"type": "_sharing", "string": "domain"}, {"type": "name", "string": "private name"}]),
    )
    .await;
    assert_eq!(
        reader.expect().await.summary(),
        format!("create {shared} _sharing,_type")
    );
    assert_eq!(
        narrowed.expect().await.summary(),
        format!("create {shared} _sharing,name")
    );
}

#[tokio::test]
async fn a_formula_recomputation_is_an_update_naming_the_formula() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let carts = app.create_type(&owner, "cart").await;
    let lines = app.create_type(&owner, "line").await;
    let formula = json!([{"type": "formula", "string": "cart.*.code"}]);
    app.define(&owner, &lines, "cart_code", "string", formula).await;
    let cart = app
        .create(&owner, &carts, json!([{"type": "code", "string": "A"}]))
        .await;
    let line = app
        .create(&owner, &lines, json!([{"type": "cart", "reference": cart}]))
        .await;
    app.settle().await;
    let mut stream = must_open(&feed(&app, ""), Some(&owner), &[]).await;

    let code = value_id(&app, &owner, &cart, "code").await;
    add(
        &app,
        &owner,
        &cart,
        json!([{"type": "code", "string": "B", "_id": code}]),
    )
    .await;
    assert_eq!(stream.expect().await.summary(), format!("update {cart} code"));
    let computed = stream.expect().await;
    assert_eq!(computed.summary(), format!("update {line} cart_code"));
    assert!(computed.data["by"].is_null(), "no person computed it: {computed:?}");

    // a recomputation that changes no value sends nothing
    add(&app, &owner, &cart, json!([{"type": "note", "string": "same code"}])).await;
    assert_eq!(stream.expect().await.summary(), format!("update {cart} note"));
    app.settle().await;
    let last = app
        .create(&owner, &carts, json!([{"type": "name", "string": "last"}]))
        .await;
    let next = stream.expect().await;
    assert_eq!(next.data["_id"], last.as_str(), "{next:?}");
}
