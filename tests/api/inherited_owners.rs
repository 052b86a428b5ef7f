//! The last-owner rule against entities whose owners are inherited only, as
//! an import of the original produces them: such an entity is written by
//! its callers' rights, and only removing its last own `_owner` is refused.

use crate::support;

use serde_json::{Value as Json, json};
use support::TestApp;

/// Runs `eds ARGS` on the app's database; panics on failure.
async fn eds(app: &TestApp, dir: &support::tempdir::Dir, args: &[&str]) {
    let run = support::processes::eds(&app.database_url, &dir.0)
        .args(args)
        .output()
        .await
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
}

/// Exports demo, drops the `_owner` values of entity `entity_id` from the
/// file (as an export of the original holds an inheriting child) and
/// imports it as database `copy`.
async fn copy_without_own_owners(app: &TestApp, entity_id: &str) {
    let dir = support::tempdir::Dir::new();
    let file = dir.0.join("demo.jsonl");
    let path = file.to_str().unwrap();
    eds(app, &dir, &["export", "demo", "--out", path]).await;
    let text = std::fs::read_to_string(&file).unwrap();
    let mut lines = text.lines();
    let mut header: Json = serde_json::from_str(lines.next().unwrap()).unwrap();
    let mut entities: Vec<Json> = lines.map(|line| serde_json::from_str(line).unwrap()).collect();
    let entity = entities.iter_mut().find(|line| line["_id"] == entity_id).unwrap();
    let values = entity["values"].as_array_mut().unwrap();
    let before = values.len();
    values.retain(|value| value["type"] != "_owner");
    let dropped = before - values.len();
    assert_eq!(dropped, 1, "{entity}");
    header["values"] = json!(header["values"].as_u64().unwrap() - dropped as u64);
    let edited: Vec<String> = std::iter::once(&header).chain(&entities).map(Json::to_string).collect();
    std::fs::write(&file, edited.join("\n") + "\n").unwrap();
    eds(app, &dir, &["import", "copy", path]).await;
}

/// An access token for `key`'s person in database `db`.
async fn token_in(app: &TestApp, key: &str, db: &str) -> String {
    let (status, body) = app.call("GET", &format!("/api/auth?db={db}"), Some(key), None).await;
    assert_eq!(status, 200, "{body}");
    body["token"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn an_editor_writes_to_an_entity_whose_owners_are_inherited_only() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let folder_type = app.create_type(&owner, "folder").await;
    let folder = app
        .create(&owner, &folder_type, json!([{"type": "name", "string": "Folder"}]))
        .await;
    let child = app
        .create(
            &owner,
            &folder_type,
            json!([
                {"type": "name", "string": "Child"},
                {"type": "_parent", "reference": folder},
                {"type": "_inheritrights", "boolean": true},
            ]),
        )
        .await;
    let (pat, pat_key) = app.add_person(&owner, "Pat").await;
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{folder}"),
            &owner,
            json!({"type": "_editor", "reference": pat}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    copy_without_own_owners(&app, &child).await;
    let (owner, pat) = (
        token_in(&app, &app.key, "copy").await,
        token_in(&app, &pat_key, "copy").await,
    );
    let child_path = format!("/api/copy/entity/{child}");
    let (_, entity) = app.get(&child_path, &owner).await;
    assert_eq!(entity["entity"].get("_owner"), None, "{entity}");
    let name = entity["entity"]["name"][0]["_id"].as_str().unwrap();

    // the inherited editor renames it
    let (status, body) = app
        .post(
            &child_path,
            &pat,
            json!({"_id": name, "type": "name", "string": "Renamed"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (_, entity) = app.get(&child_path, &pat).await;
    assert_eq!(entity["entity"]["name"][0]["string"], "Renamed", "{entity}");
    // but rights stay the inherited owner's
    let (status, body) = app
        .post(&child_path, &pat, json!({"type": "_owner", "reference": app.person}))
        .await;
    assert_eq!((status, body["error"].as_str()), (403, Some("forbidden")), "{body}");

    // an own owner given to it is its last: deleting it is refused, nothing written
    let (status, body) = app
        .post(&child_path, &owner, json!({"type": "_owner", "reference": app.person}))
        .await;
    assert_eq!(status, 200, "{body}");
    let own_owner = body["properties"][0]["_id"].as_str().unwrap().to_owned();
    let (status, body) = app.delete(&format!("/api/copy/property/{own_owner}"), &owner).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (403, Some("An entity keeps at least one _owner")),
        "{body}"
    );
    let (_, entity) = app.get(&child_path, &owner).await;
    assert_eq!(entity["entity"]["_owner"][0]["_id"], own_owner.as_str(), "{entity}");
}
