//! The administration commands, run as the real `eds` binary against the
//! database of a served test app: `db list`, `db usage` and `key revoke`.

mod common;

use common::TestApp;
use serde_json::{Value as Json, json};
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_eds");

/// What one run of `eds` did.
struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Run {
    /// Each stdout line as JSON.
    fn lines(&self) -> Vec<Json> {
        self.stdout
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}")))
            .collect()
    }

    /// Asserts a failure reported as one line on stderr.
    fn assert_failed_with(&self, words: &str) {
        assert!(!self.ok, "succeeded: {}", self.stdout);
        let message = self.stderr.trim_end();
        assert_eq!(message.lines().count(), 1, "not one line: {message}");
        assert!(message.contains(words), "{message}");
    }
}

/// Runs `eds ARGS` on the app's PostgreSQL database.
async fn eds(app: &TestApp, args: &[&str]) -> Run {
    let data_dir = common::tempdir::Dir::new();
    let output = Command::new(BIN)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("EDS__DATABASE__URL", &app.database_url)
        .env("EDS__DATA__DIR", &data_dir.0)
        .env("EDS__LOG__LEVEL", "warn")
        .output()
        .await
        .unwrap();
    Run {
        ok: output.status.success(),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

/// `eds db list` as `{name: entities}`.
async fn databases(app: &TestApp) -> Json {
    let run = eds(app, &["db", "list"]).await;
    assert!(run.ok, "{}", run.stderr);
    let mut found = serde_json::Map::new();
    for line in run.lines() {
        found.insert(line["database"].as_str().unwrap().to_owned(), line["entities"].clone());
    }
    Json::Object(found)
}

#[tokio::test]
async fn db_list_prints_one_line_per_database_with_its_live_entities() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let created = eds(&app, &["db", "create", "second", "--email", "second@example.com"]).await;
    assert!(created.ok, "{}", created.stderr);
    let before = databases(&app).await;
    let seeded = before["demo"].as_i64().unwrap();
    assert!(seeded > 0, "{before}");
    assert_eq!(before, json!({"demo": seeded, "second": seeded}));

    let thing = app.create_type(&owner, "thing").await;
    let gone = app.create(&owner, &thing, json!([])).await;
    let (status, _) = app.delete(&format!("/api/demo/entity/{gone}"), &owner).await;
    assert_eq!(status, 200);
    // the type and one thing are live; the deleted thing is not counted
    assert_eq!(databases(&app).await, json!({"demo": seeded + 1, "second": seeded}));
}

#[tokio::test]
async fn db_usage_prints_the_usage_object_of_get_api_db() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let thing = app.create_type(&owner, "thing").await;
    let gone = app
        .create(&owner, &thing, json!([{"type": "name", "string": "x"}]))
        .await;
    app.delete(&format!("/api/demo/entity/{gone}"), &owner).await;
    let (status, http) = app.get("/api/demo", &owner).await;
    assert_eq!(status, 200, "{http}");
    let run = eds(&app, &["db", "usage", "demo"]).await;
    assert!(run.ok, "{}", run.stderr);
    assert_eq!(run.lines(), vec![http]);

    eds(&app, &["db", "usage", "nosuchdb"])
        .await
        .assert_failed_with("nosuchdb");
}

#[tokio::test]
async fn key_revoke_stops_the_key_logging_in_and_leaves_it_deleted_in_history() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (person, key) = app.add_person(&owner, "Robot").await;
    let (_, entity) = app.get(&format!("/api/demo/entity/{person}"), &owner).await;
    let value_id = entity["entity"]["service_api_key"][0]["_id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.token_for(&key).await;

    let run = eds(&app, &["key", "revoke", "demo", &value_id]).await;
    assert!(run.ok, "{}", run.stderr);
    let (status, body) = app.call("GET", "/api/auth?db=demo", Some(&key), None).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["status"], 401);
    assert_eq!(body["error"], "unauthorized");

    let (_, entity) = app.get(&format!("/api/demo/entity/{person}"), &owner).await;
    assert!(entity["entity"].get("service_api_key").is_none(), "{entity}");
    let (status, history) = app.get(&format!("/api/demo/entity/{person}/history"), &owner).await;
    assert_eq!(status, 200, "{history}");
    let revoked: Vec<&Json> = history["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|change| change["old"]["_id"] == value_id.as_str())
        .collect();
    assert_eq!(revoked.len(), 1, "{history}");
    assert_eq!(revoked[0]["type"], "service_api_key");
    assert_eq!(revoked[0]["old"]["string"], "***");
    // the robot may not edit itself: the deletion is its owner's
    assert_eq!(revoked[0]["by"], app.person.as_str());
    // the other keys still log in
    app.owner_token().await;
}

#[tokio::test]
async fn key_revoke_of_an_id_that_is_no_live_key_fails_with_one_line_on_stderr() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let unknown = eds::model::ids::new_id();
    eds(&app, &["key", "revoke", "demo", &unknown])
        .await
        .assert_failed_with(&unknown);
    // a value that is not a key is refused too, and stays
    let (_, me) = app.get(&format!("/api/demo/entity/{}", app.person), &owner).await;
    let name_id = me["entity"]["name"][0]["_id"].as_str().unwrap().to_owned();
    eds(&app, &["key", "revoke", "demo", &name_id])
        .await
        .assert_failed_with("not a live service_api_key value");
    let (_, after) = app.get(&format!("/api/demo/entity/{}", app.person), &owner).await;
    assert_eq!(after, me);
    // as is a key revoked already
    let key_id = me["entity"]["service_api_key"][0]["_id"].as_str().unwrap().to_owned();
    assert!(eds(&app, &["key", "revoke", "demo", &key_id]).await.ok);
    eds(&app, &["key", "revoke", "demo", &key_id])
        .await
        .assert_failed_with(&key_id);
    eds(&app, &["key", "revoke", "nosuchdb", &key_id])
        .await
        .assert_failed_with("nosuchdb");
}
