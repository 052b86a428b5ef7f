//! `POST /api/{db}/batch` and the MCP `batch` tool: several writes in one
//! transaction, all or nothing, each under the rules of its single route.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use eds::auth::jwt::{Claims, JwtKeys};
use eds::write::{Batch, BatchOp, EntityId, WriteOp, WriteOutcome, WriteRequest, WriterCache, apply_batch};
use serde_json::{Value as Json, json};

use crate::support::{self, JWT_SECRET, TestApp};

const NO_ENTITY: &str = "0123456789abcdef01234567";

/// Sends a batch of `operations` (and `extra` fields) as `token`.
async fn batch(app: &TestApp, token: &str, operations: Json) -> (u16, Json) {
    app.post("/api/demo/batch", token, json!({"operations": operations}))
        .await
}

/// How many live entities of type `type_name` the owner sees.
async fn count(app: &TestApp, token: &str, type_name: &str) -> u64 {
    let (status, body) = app
        .get(&format!("/api/demo/entity?_type.string={type_name}&limit=1"), token)
        .await;
    assert_eq!(status, 200, "{body}");
    body["count"].as_u64().unwrap()
}

/// An app with the types `author` and `book` (with `author` and `photo`).
async fn library(overrides: &[(&str, String)]) -> (TestApp, String, String, String) {
    let app = TestApp::start_with(support::Storage::Local, overrides).await;
    let owner = app.owner_token().await;
    let author = app.create_type(&owner, "author").await;
    let book = app.create_type(&owner, "book").await;
    app.define(&owner, &book, "author", "reference", json!([])).await;
    app.define(&owner, &book, "photo", "file", json!([])).await;
    (app, owner, author, book)
}

/// `token` re-signed with `change` made to its claims.
fn resigned(token: &str, change: impl FnOnce(&mut Json)) -> String {
    let payload = token.split('.').nth(1).unwrap();
    let mut claims: Json = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    change(&mut claims);
    let claims: Claims = serde_json::from_value(claims).unwrap();
    let keys = JwtKeys::new(
        JWT_SECRET.as_bytes(),
        chrono::NaiveDate::from_ymd_opt(2026, 11, 6).unwrap(),
    );
    keys.sign(&claims).unwrap()
}

#[tokio::test]
async fn batch_refs_resolve_in_entity_and_reference_values() {
    let (app, owner, author, book) = library(&[]).await;
    let (status, body) = batch(
        &app,
        &owner,
        json!([
            {"op": "create", "ref": "$herbert", "properties": [{"type": "_type", "reference": author}, {"type": "name", "string": "Frank Herbert"}]},
            {"op": "create", "ref": "$dune", "properties": [{"type": "_type", "reference": book}, {"type": "name", "string": "Dune"}, {"type": "author", "reference": "$herbert"}]},
            {"op": "add", "entity": "$herbert", "properties": [{"type": "note", "string": "wrote Dune"}]},
        ]),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let herbert = body["refs"]["$herbert"].as_str().unwrap();
    let dune = body["refs"]["$dune"].as_str().unwrap();
    assert_eq!(body["results"][0]["_id"], herbert);
    assert_eq!(body["results"][1]["_id"], dune);
    assert_eq!(body["results"][2]["_id"], herbert, "the add wrote on the new author");
    assert_eq!(body["results"][1]["properties"][2]["reference"], herbert);
    assert!(body.get("dry_run").is_none(), "{body}");
    let (_, read) = app.get(&format!("/api/demo/entity/{dune}"), &owner).await;
    assert_eq!(read["entity"]["author"][0]["reference"], herbert);
    assert_eq!(read["entity"]["author"][0]["string"], "Frank Herbert");
    let (_, read) = app.get(&format!("/api/demo/entity/{herbert}"), &owner).await;
    assert_eq!(read["entity"]["note"][0]["string"], "wrote Dune");
}

#[tokio::test]
async fn batch_first_failure_answers_its_operation_index_and_writes_nothing() {
    let (app, owner, author, book) = library(&[]).await;
    let kept = app
        .create(&owner, &book, json!([{"type": "name", "string": "Emma"}]))
        .await;
    let (_, before) = app.get(&format!("/api/demo/entity/{kept}"), &owner).await;
    let (status, body) = batch(
        &app,
        &owner,
        json!([
            {"op": "create", "ref": "$a", "properties": [{"type": "_type", "reference": author}, {"type": "name", "string": "A"}]},
            {"op": "add", "entity": kept, "properties": [{"type": "name", "string": "Persuasion"}]},
            {"op": "add", "entity": "$a", "properties": [{"type": "_unknown", "string": "x"}]},
            {"op": "add", "entity": NO_ENTITY, "properties": [{"type": "name", "string": "never reached"}]},
        ]),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["status"], 400);
    assert_eq!(body["error"], "unknown_system_property");
    assert_eq!(body["operation"], 2);
    assert!(body["message"].is_string());
    assert_eq!(count(&app, &owner, "author").await, 0, "the create was rolled back");
    let (_, after) = app.get(&format!("/api/demo/entity/{kept}"), &owner).await;
    assert_eq!(after, before, "the add was rolled back");
    // a missing entity answers its 404, with its operation
    let (status, body) = batch(
        &app,
        &owner,
        json!([{"op": "add", "entity": kept, "properties": [{"type": "name", "string": "x"}]}, {"op": "delete_entity", "entity": NO_ENTITY}]),
    )
    .await;
    assert_eq!(
        (status, &body["error"], &body["operation"]),
        (404, &json!("not_found"), &json!(1)),
        "{body}"
    );
}

#[tokio::test]
async fn batch_rights_judged_on_state_left_by_earlier_operations() {
    let (app, owner, _author, book) = library(&[]).await;
    let (bob, bob_key) = app.add_person(&owner, "Bob").await;
    let bob_token = app.token_for(&bob_key).await;
    // Bob may place a child under a folder he created earlier in the batch
    let (status, body) = batch(
        &app,
        &bob_token,
        json!([
            {"op": "create", "ref": "$folder", "properties": [{"type": "_type", "reference": book}, {"type": "name", "string": "Folder"}]},
            {"op": "create", "properties": [{"type": "_type", "reference": book}, {"type": "name", "string": "Child"}, {"type": "_parent", "reference": "$folder"}]},
        ]),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // ... and loses a right an earlier operation took away
    let shared = app
        .create(
            &owner,
            &book,
            json!([{"type": "name", "string": "Shared"}, {"type": "_owner", "reference": bob}]),
        )
        .await;
    let (_, read) = app.get(&format!("/api/demo/entity/{shared}"), &owner).await;
    let bobs_owner = read["entity"]["_owner"]
        .as_array()
        .unwrap()
        .iter()
        .find(|value| value["reference"] == bob)
        .unwrap()["_id"]
        .clone();
    let (status, body) = batch(
        &app,
        &bob_token,
        json!([
            {"op": "delete_property", "property": bobs_owner},
            {"op": "add", "entity": shared, "properties": [{"type": "name", "string": "Renamed"}]},
        ]),
    )
    .await;
    assert_eq!((status, &body["operation"]), (404, &json!(1)), "{body}");
    let (_, after) = app.get(&format!("/api/demo/entity/{shared}"), &owner).await;
    assert_eq!(after, read, "Bob is still an owner: nothing was written");
}

#[tokio::test]
async fn batch_parent_needs_expander_on_the_target() {
    let (app, owner, _author, book) = library(&[]).await;
    let (bob, bob_key) = app.add_person(&owner, "Bob").await;
    let bob_token = app.token_for(&bob_key).await;
    let shelf = app
        .create(
            &owner,
            &book,
            json!([{"type": "name", "string": "Shelf"}, {"type": "_viewer", "reference": bob}]),
        )
        .await;
    let (status, body) = batch(
        &app,
        &bob_token,
        json!([
            {"op": "create", "properties": [{"type": "_type", "reference": book}, {"type": "name", "string": "Mine"}]},
            {"op": "create", "properties": [{"type": "_type", "reference": book}, {"type": "_parent", "reference": shelf}]},
        ]),
    )
    .await;
    assert_eq!(
        (status, &body["error"], &body["operation"]),
        (403, &json!("forbidden"), &json!(1)),
        "{body}"
    );
    assert_eq!(count(&app, &owner, "book").await, 1, "only the shelf");
}

#[tokio::test]
async fn batch_dry_run_writes_nothing_and_masks_keys() {
    let (app, owner, author, book) = library(&[]).await;
    let person = app.find(&owner, "entity", "person").await;
    let body = json!({"dry_run": true, "operations": [
        {"op": "create", "ref": "$p", "properties": [{"type": "_type", "reference": person}, {"type": "name", "string": "P"}, {"type": "service_api_key", "string": "generate"}]},
        {"op": "create", "properties": [{"type": "_type", "reference": book}, {"type": "author", "reference": "$p"},
            {"type": "photo", "filename": "a.png", "filesize": 3, "filetype": "image/png"}]},
        {"op": "create", "properties": [{"type": "_type", "reference": author}, {"type": "no", "counter": true}]},
    ]});
    let (status, answer) = app.post("/api/demo/batch", &owner, body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["dry_run"], true);
    let key = &answer["results"][0]["properties"][2];
    assert_eq!(
        (&key["type"], &key["string"]),
        (&json!("service_api_key"), &json!("***")),
        "{answer}"
    );
    let photo = &answer["results"][1]["properties"][2];
    assert_eq!(photo["filename"], "a.png");
    assert!(photo.get("upload").is_none(), "{photo}");
    let would_be = answer["refs"]["$p"].as_str().unwrap();
    assert_eq!(app.get(&format!("/api/demo/entity/{would_be}"), &owner).await.0, 404);
    assert_eq!(
        count(&app, &owner, "book").await + count(&app, &owner, "author").await,
        0
    );
    // the counter's number was not taken: a real create gets the same
    let numbered = answer["results"][2]["properties"][1]["number"].clone();
    let (status, created) = app
        .post(
            "/api/demo/entity",
            &owner,
            json!([{"type": "_type", "reference": author}, {"type": "no", "counter": true}]),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["properties"][1]["number"], numbered);
}

#[tokio::test]
async fn batch_over_max_operations_is_413_before_work() {
    let (app, owner, _author, _book) = library(&[
        ("limits.max_batch_operations", "3".to_owned()),
        ("limits.max_values_per_write", "4".to_owned()),
    ])
    .await;
    let delete = json!({"op": "delete_entity", "entity": NO_ENTITY});
    let four = json!([delete, delete, delete, delete]);
    let (status, body) = batch(&app, &owner, four.clone()).await;
    assert_eq!((status, &body["error"]), (413, &json!("too_many_values")), "{body}");
    assert!(body.get("operation").is_none(), "{body}");
    // before the database is even looked up
    let (status, _) = app.post("/api/nodb/batch", &owner, json!({"operations": four})).await;
    assert_eq!(status, 413);
    let names = |n: usize| Json::Array((0..n).map(|_| json!({"type": "name", "string": "a"})).collect());
    let add = |n: usize| json!({"op": "add", "entity": NO_ENTITY, "properties": names(n)});
    // twelve values fit ten writes of four: the writer answers the missing entity
    let (status, body) = batch(&app, &owner, json!([add(4), add(4), add(4)])).await;
    assert_eq!((status, &body["operation"]), (404, &json!(0)), "{body}");
    let (status, body) = batch(&app, &owner, json!([add(14), add(14), add(14)])).await;
    assert_eq!((status, &body["error"]), (413, &json!("too_many_values")), "{body}");
    assert!(
        body.get("operation").is_none(),
        "over ten writes' values in all: {body}"
    );
    let (status, body) = batch(&app, &owner, json!([add(4), add(4), add(5)])).await;
    assert_eq!(
        (status, &body["operation"]),
        (413, &json!(2)),
        "over one write's values: {body}"
    );
    let keys: Vec<Json> = (0..11)
        .map(|_| json!({"type": "service_api_key", "string": "x"}))
        .collect();
    let (status, body) = batch(
        &app,
        &owner,
        json!([{"op": "add", "entity": NO_ENTITY, "properties": keys}]),
    )
    .await;
    assert_eq!((status, &body["error"]), (413, &json!("too_many_values")), "{body}");
}

#[tokio::test]
async fn batch_repeated_ref_is_400() {
    let (app, owner, author, _book) = library(&[]).await;
    let create = json!({"op": "create", "ref": "$a", "properties": [{"type": "_type", "reference": author}]});
    let (status, body) = batch(&app, &owner, json!([create, create])).await;
    assert_eq!(
        (status, &body["error"], &body["operation"]),
        (400, &json!("invalid_body"), &json!(1)),
        "{body}"
    );
    assert_eq!(count(&app, &owner, "author").await, 0);
}

#[tokio::test]
async fn batch_bad_input_is_400_invalid_body_with_its_operation() {
    let (app, owner, author, _book) = library(&[]).await;
    let create =
        |name: &str| json!({"op": "create", "ref": name, "properties": [{"type": "_type", "reference": author}]});
    let refused = [
        (json!({"operations": []}), None),
        (json!({"operations": {"op": "create"}}), None),
        (json!([create("$a")]), None),
        (json!({"operations": [create("$a")], "dry_run": "yes"}), None),
        (json!({"operations": [create("$a"), {"op": "upsert"}]}), Some(1)),
        (json!({"operations": [create("a")]}), Some(0)),
        (json!({"operations": [create("$a-b")]}), Some(0)),
        (
            json!({"operations": [create(&format!("${}", "x".repeat(65)))]}),
            Some(0),
        ),
        // a `$name` used before (or without) the create that defines it
        (
            json!({"operations": [{"op": "delete_entity", "entity": "$a"}, create("$a")]}),
            Some(0),
        ),
        (
            json!({"operations": [create("$a"), {"op": "create", "properties": [{"type": "_type", "reference": author}, {"type": "x", "reference": "$b"}]}]}),
            Some(1),
        ),
        (json!({"operations": [{"op": "add", "properties": []}]}), Some(0)),
    ];
    for (body, operation) in refused {
        let (status, answer) = app.post("/api/demo/batch", &owner, body.clone()).await;
        assert_eq!(
            (status, &answer["error"]),
            (400, &json!("invalid_body")),
            "{body}: {answer}"
        );
        assert_eq!(
            answer.get("operation"),
            operation.map(Json::from).as_ref(),
            "{body}: {answer}"
        );
    }
    assert_eq!(count(&app, &owner, "author").await, 0);
}

#[tokio::test]
async fn batch_read_only_token_is_insufficient_scope() {
    let (app, owner, author, _book) = library(&[]).await;
    let read_only = resigned(&owner, |claims| claims["scope"] = json!("read"));
    let operations = json!([{"op": "create", "properties": [{"type": "_type", "reference": author}]}]);
    let response = app
        .http
        .post(format!("{}/api/demo/batch", app.url))
        .bearer_auth(&read_only)
        .json(&json!({"operations": operations}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    assert_eq!(
        response.headers()["www-authenticate"],
        r#"Bearer error="insufficient_scope", scope="write""#
    );
    let body: Json = response.json().await.unwrap();
    assert_eq!(body["error"], "insufficient_scope");
    // before any existence check, and before the body is read
    for (path, body) in [
        ("/api/nodb/batch", json!({"operations": operations})),
        ("/api/demo/batch", json!({})),
    ] {
        let (status, answer) = app.post(path, &read_only, body).await;
        assert_eq!(
            (status, &answer["error"]),
            (403, &json!("insufficient_scope")),
            "{path}"
        );
    }
    let (answer, is_error) = tool(&app, &read_only, json!({"operations": operations})).await;
    assert!(is_error);
    assert_eq!(answer["error"], "insufficient_scope");
    assert_eq!(count(&app, &owner, "author").await, 0);
}

#[tokio::test]
async fn batch_oauth_token_adding_an_api_key_is_403_with_its_operation() {
    let (app, owner, author, _book) = library(&[]).await;
    let oauth = resigned(&owner, |claims| claims["oauth_client"] = json!("0".repeat(64)));
    let (status, body) = batch(
        &app,
        &oauth,
        json!([
            {"op": "create", "properties": [{"type": "_type", "reference": author}]},
            {"op": "add", "entity": app.person, "properties": [{"type": "service_api_key", "string": "x"}]},
        ]),
    )
    .await;
    assert_eq!((status, &body["operation"]), (403, &json!(1)), "{body}");
    assert_eq!(count(&app, &owner, "author").await, 0);
}

#[tokio::test]
async fn batch_api_keys_are_generated_per_value_and_shown_once() {
    let (app, owner, _author, _book) = library(&[]).await;
    let person = app.find(&owner, "entity", "person").await;
    let (status, body) = batch(
        &app,
        &owner,
        json!([
            {"op": "create", "ref": "$ann", "properties": [{"type": "_type", "reference": person}, {"type": "name", "string": "Ann"}]},
            {"op": "add", "entity": "$ann", "properties": [{"type": "service_api_key", "string": "generate"}, {"type": "service_api_key", "string": "generate"}]},
        ]),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let keys: Vec<&str> = body["results"][1]["properties"]
        .as_array()
        .unwrap()
        .iter()
        .map(|value| value["string"].as_str().unwrap())
        .collect();
    assert_eq!(keys.len(), 2);
    assert_ne!(keys[0], keys[1]);
    for key in keys {
        assert_ne!(key, "generate");
        let token = app.token_for(key).await;
        assert!(!token.is_empty());
    }
}

#[tokio::test]
async fn batch_file_values_answer_upload_urls() {
    let (app, owner, _author, book) = library(&[]).await;
    let photo = json!({"type": "photo", "filename": "a.txt", "filesize": 3, "filetype": "text/plain"});
    let (status, body) = batch(
        &app,
        &owner,
        json!([{"op": "create", "ref": "$b", "properties": [{"type": "_type", "reference": book}, photo]}, {"op": "add", "entity": "$b", "properties": [photo]}]),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    for (result, index) in [(0, 1), (1, 0)] {
        let upload = &body["results"][result]["properties"][index]["upload"];
        assert_eq!(upload["method"], "PUT", "{body}");
        let put = app
            .http
            .put(upload["url"].as_str().unwrap())
            .header("Content-Type", "text/plain")
            .body("abc")
            .send()
            .await
            .unwrap();
        assert!(put.status().is_success(), "{}", put.status());
    }
}

#[tokio::test]
async fn batch_counters_number_in_order_and_a_failed_batch_takes_none() {
    let (app, owner, author, _book) = library(&[]).await;
    let numbered = json!({"op": "create", "properties": [{"type": "_type", "reference": author}, {"type": "no", "counter": true}]});
    let (status, body) = batch(&app, &owner, json!([numbered, numbered, numbered])).await;
    assert_eq!(status, 200, "{body}");
    let numbers: Vec<&Json> = (0..3).map(|i| &body["results"][i]["properties"][1]["number"]).collect();
    assert_eq!(numbers, [&json!(1), &json!(2), &json!(3)]);
    let failing = json!([numbered, {"op": "delete_entity", "entity": NO_ENTITY}]);
    assert_eq!(batch(&app, &owner, failing).await.0, 404);
    let (_, body) = batch(&app, &owner, json!([numbered])).await;
    assert_eq!(body["results"][0]["properties"][1]["number"], 4);
}

#[tokio::test]
async fn batch_deletes_values_and_entities_by_id_and_by_ref() {
    let (app, owner, author, book) = library(&[]).await;
    let emma = app
        .create(
            &owner,
            &book,
            json!([{"type": "name", "string": "Emma"}, {"type": "note", "string": "x"}]),
        )
        .await;
    let (_, read) = app.get(&format!("/api/demo/entity/{emma}"), &owner).await;
    let note = read["entity"]["note"][0]["_id"].clone();
    let (status, body) = batch(
        &app,
        &owner,
        json!([
            {"op": "delete_property", "property": note},
            {"op": "create", "ref": "$tmp", "properties": [{"type": "_type", "reference": author}]},
            {"op": "delete_entity", "entity": "$tmp"},
        ]),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"][0], json!({"deleted": true}));
    assert_eq!(body["results"][2], json!({"deleted": true}));
    let (_, read) = app.get(&format!("/api/demo/entity/{emma}"), &owner).await;
    assert!(read["entity"].get("note").is_none(), "{read}");
    let tmp = body["refs"]["$tmp"].as_str().unwrap();
    assert_eq!(app.get(&format!("/api/demo/entity/{tmp}"), &owner).await.0, 404);
}

/// Sends `POST /api/demo/batch` with `Idempotency-Key: key`.
async fn batch_with_key(app: &TestApp, token: &str, key: &str, body: &Json) -> (u16, Json) {
    let response = app
        .http
        .post(format!("{}/api/demo/batch", app.url))
        .bearer_auth(token)
        .header("Idempotency-Key", key)
        .json(body)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

#[tokio::test]
async fn batch_idempotency_key_applies_once() {
    let (app, owner, author, _book) = library(&[]).await;
    let body = json!({"operations": [{"op": "create", "ref": "$a", "properties": [{"type": "_type", "reference": author}, {"type": "name", "string": "A"}]}]});
    let first = batch_with_key(&app, &owner, "k-1", &body).await;
    assert_eq!(first.0, 200, "{}", first.1);
    assert_eq!(batch_with_key(&app, &owner, "k-1", &body).await, first);
    assert_eq!(count(&app, &owner, "author").await, 1);
    let other = json!({"operations": [{"op": "create", "properties": [{"type": "_type", "reference": author}]}]});
    let (status, refused) = batch_with_key(&app, &owner, "k-1", &other).await;
    assert_eq!((status, &refused["error"]), (422, &json!("idempotency_key_reused")));
    // a dry run records no key: the key stays free for the real batch
    let mut dry = body.clone();
    dry["dry_run"] = json!(true);
    assert_eq!(batch_with_key(&app, &owner, "k-2", &dry).await.0, 200);
    let (status, real) = batch_with_key(&app, &owner, "k-2", &body).await;
    assert_eq!(status, 200);
    assert!(real.get("dry_run").is_none(), "{real}");
    assert_eq!(count(&app, &owner, "author").await, 2);
}

/// Calls the MCP tool `batch` with `arguments`; answers its text, parsed, and `isError`.
async fn tool(app: &TestApp, token: &str, arguments: Json) -> (Json, bool) {
    let message =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "batch", "arguments": arguments}});
    let (status, body) = app.call("POST", "/api/demo/mcp", Some(token), Some(message)).await;
    assert_eq!(status, 200, "{body}");
    let text = body["result"]["content"][0]["text"].as_str().unwrap();
    (
        serde_json::from_str(text).unwrap(),
        body["result"]["isError"].as_bool().unwrap(),
    )
}

#[tokio::test]
async fn batch_mcp_tool_answers_as_the_rest_route_with_its_idempotency_key() {
    let (app, owner, author, _book) = library(&[]).await;
    let operations = json!([
        {"op": "create", "ref": "$a", "properties": [{"type": "_type", "reference": author}, {"type": "name", "string": "A"}]},
        {"op": "add", "entity": "$a", "properties": [{"type": "note", "string": "n"}]},
    ]);
    let arguments = json!({"operations": operations, "idempotency_key": "m-1"});
    let (answer, is_error) = tool(&app, &owner, arguments.clone()).await;
    assert!(!is_error, "{answer}");
    let id = answer["refs"]["$a"].as_str().unwrap();
    assert_eq!(answer["results"][1]["_id"], id);
    assert_eq!(
        tool(&app, &owner, arguments).await,
        (answer, false),
        "a repeat answers the first answer"
    );
    assert_eq!(count(&app, &owner, "author").await, 1);
    let (dry, _) = tool(&app, &owner, json!({"operations": operations, "dry_run": true})).await;
    assert_eq!(dry["dry_run"], true);
    let failing = json!({"operations": [operations[0], {"op": "delete_entity", "entity": NO_ENTITY}]});
    let (error, is_error) = tool(&app, &owner, failing.clone()).await;
    assert!(is_error);
    let rest = app.post("/api/demo/batch", &owner, failing).await;
    assert_eq!((404, error), rest, "the same error body, `operation` included");
    assert_eq!(count(&app, &owner, "author").await, 1);
}

#[tokio::test]
async fn batch_reader_sees_all_or_none_of_it() {
    let (app, owner, _author, book) = library(&[]).await;
    let (bob, bob_key) = app.add_person(&owner, "Bob").await;
    let bob_token = app.token_for(&bob_key).await;
    const ITEMS: usize = 300;
    let creates: Vec<Json> = (0..ITEMS)
        .map(|i| json!({"op": "create", "properties": [{"type": "_type", "reference": book}, {"type": "name", "string": format!("item {i}")}]}))
        .collect();
    let (status, created) = batch(&app, &owner, Json::Array(creates)).await;
    assert_eq!(status, 200);
    let grants: Vec<Json> = created["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|result| json!({"op": "add", "entity": result["_id"], "properties": [{"type": "_viewer", "reference": bob}]}))
        .collect();
    let granting = batch(&app, &owner, Json::Array(grants));
    let reading = async {
        let mut seen = Vec::new();
        for _ in 0..40 {
            seen.push(count(&app, &bob_token, "book").await);
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        seen
    };
    let ((status, body), seen) = tokio::join!(granting, reading);
    assert_eq!(status, 200, "{body}");
    assert!(seen.iter().all(|n| *n == 0 || *n == ITEMS as u64), "{seen:?}");
    assert_eq!(count(&app, &bob_token, "book").await, ITEMS as u64);
}

#[tokio::test]
async fn batches_touching_entities_in_opposite_orders_both_pass() {
    let (app, owner, _author, book) = library(&[]).await;
    let first = app
        .create(&owner, &book, json!([{"type": "name", "string": "1"}]))
        .await;
    let second = app
        .create(&owner, &book, json!([{"type": "name", "string": "2"}]))
        .await;
    let add =
        |id: &str, note: &str| json!({"op": "add", "entity": id, "properties": [{"type": "note", "string": note}]});
    let runs = (0..6).map(|run| {
        let operations = if run % 2 == 0 {
            json!([add(&first, "a"), add(&second, "a")])
        } else {
            json!([add(&second, "b"), add(&first, "b")])
        };
        let (app, owner) = (&app, &owner);
        async move { batch(app, owner, operations).await }
    });
    for (status, body) in futures_util::future::join_all(runs).await {
        assert_eq!(status, 200, "{body}");
    }
    let (_, read) = app.get(&format!("/api/demo/entity/{first}"), &owner).await;
    assert_eq!(read["entity"]["note"].as_array().unwrap().len(), 6);
}

#[tokio::test]
async fn batch_refused_in_a_group_commit_leaves_the_other_writes_committed() {
    let (app, owner, author, _book) = library(&[]).await;
    let values = |name: &str| {
        eds::model::value::parse_values(
            &json!([{"type": "_type", "reference": author}, {"type": "name", "string": name}]),
        )
        .unwrap()
    };
    let request = |op: WriteOp| {
        let request = WriteRequest {
            db: "demo".into(),
            actor: app.person.clone(),
            op,
            idempotency: None,
        };
        (request, Vec::new(), tracing::Span::none())
    };
    let refused = Batch {
        operations: vec![
            BatchOp::Create {
                name: None,
                values: values("in the refused batch"),
                refs: Vec::new(),
            },
            BatchOp::DeleteEntity {
                entity: EntityId::Id(NO_ENTITY.into()),
            },
        ],
        dry_run: false,
    };
    let outcomes = apply_batch(
        &app.pool,
        vec![
            request(WriteOp::CreateEntity {
                values: values("before"),
            }),
            request(WriteOp::Batch(refused)),
            request(WriteOp::CreateEntity {
                values: values("after"),
            }),
        ],
        &mut WriterCache::default(),
    )
    .await;
    assert!(matches!(outcomes[0], Ok(WriteOutcome::Written { .. })));
    let error = outcomes[1].as_ref().unwrap_err();
    assert_eq!((error.code.as_str(), error.operation), ("not_found", Some(1)));
    assert!(matches!(outcomes[2], Ok(WriteOutcome::Written { .. })));
    let (_, listed) = app.get("/api/demo/entity?_type.string=author&props=name", &owner).await;
    let names: BTreeMap<&str, ()> = listed["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entity| (entity["name"][0]["string"].as_str().unwrap(), ()))
        .collect();
    assert_eq!(names.keys().copied().collect::<Vec<_>>(), ["after", "before"]);
}

#[tokio::test]
async fn batch_invitations_are_mailed_only_after_commit() {
    let (app, sink) = support::email_login::app_with_mail(&[]).await;
    let owner = app.owner_token().await;
    let person = app.find(&owner, "entity", "person").await;
    let bob = app
        .create(
            &owner,
            &person,
            json!([{"type": "name", "string": "Bob"}, {"type": "email", "string": "bob@example.com"}]),
        )
        .await;
    let invite = json!([{"type": "service_user", "string": "an invitation"}]);
    let (status, body) = batch(
        &app,
        &owner,
        json!([{"op": "add", "entity": bob, "properties": invite}, {"op": "delete_entity", "entity": NO_ENTITY}]),
    )
    .await;
    assert_eq!((status, &body["operation"]), (404, &json!(1)), "{body}");
    let (_, read) = app.get(&format!("/api/demo/entity/{bob}"), &owner).await;
    assert!(read["entity"].get("service_user").is_none(), "{read}");
    let (status, body) = batch(
        &app,
        &owner,
        json!([
            {"op": "create", "ref": "$carol", "properties": [{"type": "_type", "reference": person}, {"type": "email", "string": "carol@example.com"}]},
            {"op": "add", "entity": "$carol", "properties": invite},
            {"op": "add", "entity": bob, "properties": invite},
        ]),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let mails = sink.wait_for(2).await;
    let mut to: Vec<&str> = mails.iter().map(|mail| mail.header("To").unwrap()).collect();
    to.sort();
    assert_eq!(
        to,
        ["bob@example.com", "carol@example.com"],
        "one mail each, after the commit only"
    );
}
