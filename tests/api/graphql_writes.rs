//! GraphQL mutations: the REST operations with the REST bodies, answers,
//! rules and errors; a read-only token is refused every mutation.

use crate::support;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value as Json, json};
use support::TestApp;

use crate::graphql::{code, gql};

/// Runs one mutation field `field` with `variables`: its answer, and the first error.
async fn mutate(app: &TestApp, token: Option<&str>, document: &str, variables: Json) -> (Json, Json) {
    let (status, answer) = gql(app, token, document, variables).await;
    assert_eq!(status, 200, "{answer}");
    let data = answer["data"]
        .as_object()
        .and_then(|data| data.values().next().cloned());
    (data.unwrap_or_default(), answer)
}

#[tokio::test]
async fn graphql_mutations_create_add_delete_batch_restore_follow_rest_rules() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    app.define(&owner, &book, "title", "string", json!([])).await;
    let create = "mutation($p: JSON!) { create(properties: $p) }";
    let properties = json!([{"type": "_type", "reference": book}, {"type": "title", "string": "Dune"}]);
    let (created, _) = mutate(&app, Some(&owner), create, json!({"p": properties})).await;
    let id = created["_id"].as_str().unwrap().to_owned();
    assert_eq!(created["properties"].as_array().unwrap().len(), 2, "{created}");
    let add = "mutation($id: String!, $p: JSON!) { add(_id: $id, properties: $p) }";
    let (added, _) = mutate(
        &app,
        Some(&owner),
        add,
        json!({"id": id, "p": {"type": "title", "string": "Emma"}}),
    )
    .await;
    assert_eq!(added["properties"][0]["string"], "Emma", "{added}");
    let value = added["properties"][0]["_id"].as_str().unwrap();
    let delete_property = "mutation($id: String!) { deleteProperty(_id: $id) }";
    let (deleted, _) = mutate(&app, Some(&owner), delete_property, json!({"id": value})).await;
    assert_eq!(deleted, json!({"deleted": true}));
    let (_, entity) = app.get(&format!("/api/demo/entity/{id}"), &owner).await;
    assert_eq!(entity["entity"]["title"].as_array().unwrap().len(), 1, "{entity}");
    let delete_entity = "mutation($id: String!) { deleteEntity(_id: $id) }";
    let (deleted, _) = mutate(&app, Some(&owner), delete_entity, json!({"id": id})).await;
    assert_eq!(deleted, json!({"deleted": true}));
    assert_eq!(app.get(&format!("/api/demo/entity/{id}"), &owner).await.0, 404);
    let restore = "mutation($id: String!) { restore(_id: $id) }";
    let (restored, _) = mutate(&app, Some(&owner), restore, json!({"id": id})).await;
    assert_eq!(restored["_id"], id.as_str(), "{restored}");
    assert_eq!(app.get(&format!("/api/demo/entity/{id}"), &owner).await.0, 200);
    let batch = "mutation($ops: JSON!, $dry: Boolean) { batch(operations: $ops, dry_run: $dry) }";
    let operations = json!([{"op": "create", "properties": [{"type": "_type", "reference": book}]},
        {"op": "delete_entity", "entity": id}]);
    let (dry, _) = mutate(&app, Some(&owner), batch, json!({"ops": operations, "dry": true})).await;
    assert_eq!(dry["dry_run"], true, "{dry}");
    assert_eq!(app.get(&format!("/api/demo/entity/{id}"), &owner).await.0, 200);
    let (done, _) = mutate(&app, Some(&owner), batch, json!({"ops": operations})).await;
    assert_eq!(done["results"].as_array().unwrap().len(), 2, "{done}");
    assert_eq!(app.get(&format!("/api/demo/entity/{id}"), &owner).await.0, 404);

    // errors: the REST code and message, the field null, nothing written
    let untyped = json!([{"type": "title", "string": "no type"}]);
    let (status, rest) = app.post("/api/demo/entity", &owner, untyped.clone()).await;
    assert_eq!(status, 400);
    let (field, answer) = mutate(&app, Some(&owner), create, json!({"p": untyped})).await;
    assert_eq!(field, Json::Null);
    assert_eq!(code(&answer), rest["error"].as_str().unwrap());
    assert_eq!(answer["errors"][0]["message"], rest["message"]);
    let (field, answer) = mutate(&app, None, create, json!({"p": properties})).await;
    assert_eq!((field, code(&answer)), (Json::Null, "unauthorized"), "{answer}");
    let (_, key) = app.add_person(&owner, "Pat").await;
    let pat = app.token_for(&key).await;
    let (book_id, _) = mutate(&app, Some(&owner), create, json!({"p": properties})).await;
    let book_id = book_id["_id"].as_str().unwrap();
    let (_, answer) = mutate(&app, Some(&pat), delete_entity, json!({"id": book_id})).await;
    assert_eq!(code(&answer), "not_found", "{answer}");
    assert_eq!(app.get(&format!("/api/demo/entity/{book_id}"), &owner).await.0, 200);
    let bad_batch = json!([{"op": "create", "properties": [{"type": "_type", "reference": book}]},
        {"op": "add", "entity": book_id, "properties": [{"type": "title", "string": 5}]}]);
    let books = format!("/api/demo/entity?_type.reference={book}");
    let before = app.get(&books, &owner).await.1["count"].clone();
    let (_, answer) = mutate(&app, Some(&owner), batch, json!({"ops": bad_batch})).await;
    assert_eq!(answer["errors"][0]["extensions"]["operation"], 1, "{answer}");
    let (_, listed) = app.get(&books, &owner).await;
    assert_eq!(listed["count"], before, "the failed batch wrote nothing: {listed}");
}

/// The owner's token, re-signed with the OAuth scope `read` alone.
fn read_only(app: &TestApp, token: &str) -> String {
    let payload = token.split('.').nth(1).unwrap();
    let mut claims: eds::auth::jwt::Claims = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    claims.scope = Some("read".into());
    app.state.jwt.sign(&claims).unwrap()
}

#[tokio::test]
async fn graphql_read_only_token_mutation_is_insufficient_scope() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let reader = read_only(&app, &owner);
    let query = "query($id: String!) { _entity(_id: $id) { _id } }";
    let (status, answer) = gql(&app, Some(&reader), query, json!({"id": app.person})).await;
    assert_eq!(
        (status, &answer["data"]["_entity"]["_id"]),
        (200, &json!(app.person)),
        "{answer}"
    );
    let mutations = [
        "mutation { create(properties: []) }",
        "mutation { add(_id: \"0123456789abcdef01234567\", properties: []) }",
        "mutation { deleteProperty(_id: \"0123456789abcdef01234567\") }",
        "mutation { deleteEntity(_id: \"0123456789abcdef01234567\") }",
        "mutation { batch(operations: []) }",
        "mutation { restore(_id: \"0123456789abcdef01234567\") }",
    ];
    for mutation in mutations {
        let (field, answer) = mutate(&app, Some(&reader), mutation, json!({})).await;
        assert_eq!(
            (field, code(&answer)),
            (Json::Null, "insufficient_scope"),
            "{mutation}: {answer}"
        );
        assert_eq!(answer["errors"][0]["extensions"]["status"], 403);
    }
}
