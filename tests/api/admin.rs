//! The administration commands, run as the real `eds` binary against the
//! database of a served test app: `db list`, `db usage`, `key revoke`,
//! `export` and `import`.

use crate::support;

use std::path::Path;

use diesel_async::RunQueryDsl;
use serde_json::{Value as Json, json};
use support::TestApp;
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
    let data_dir = support::tempdir::Dir::new();
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

/// An access token for the app's owner in database `db`.
async fn token_in(app: &TestApp, key: &str, db: &str) -> String {
    let (status, body) = app.call("GET", &format!("/api/auth?db={db}"), Some(key), None).await;
    assert_eq!(status, 200, "{body}");
    body["token"].as_str().unwrap().to_owned()
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
    // dbSize counts the tables' bytes: no autovacuum may add its maps between the two reads
    let mut conn = app.pool.get().await.unwrap();
    for table in ["entities", "property_values"] {
        diesel::sql_query(format!("ALTER TABLE {table} SET (autovacuum_enabled = off)"))
            .execute(&mut conn)
            .await
            .unwrap();
    }
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

/// A database with a bit of everything: public and private data, a rename
/// (a deleted value), a deleted entity, a counter, a formula over children,
/// a searchable reference added to an older entity, inherited rights.
/// Answers the second person's API key.
async fn varied_database(app: &TestApp, owner: &str) -> String {
    let (reader, reader_key) = app.add_person(owner, "Reader").await;
    let book = app.create_type(owner, "book").await;
    let chapter = app.create_type(owner, "chapter").await;
    let writer = app.create_type(owner, "writer").await;
    let public = json!([{"type": "_sharing", "string": "public"}]);
    let searchable_public = json!([{"type": "_sharing", "string": "public"}, {"type": "search", "boolean": true}]);
    app.post(&format!("/api/demo/entity/{book}"), owner, public[0].clone())
        .await;
    app.define(owner, &book, "title", "string", searchable_public.clone())
        .await;
    app.define(owner, &book, "code", "counter", public.clone()).await;
    app.define(owner, &book, "author", "reference", searchable_public).await;
    // not public: a public total could not read the private chapters
    app.define(
        owner,
        &book,
        "pages",
        "number",
        json!([{"type": "formula", "string": "_child.chapter.pages SUM"}]),
    )
    .await;
    app.define(owner, &chapter, "pages", "number", json!([])).await;
    app.define(
        owner,
        &writer,
        "name",
        "string",
        json!([{"type": "search", "boolean": true}]),
    )
    .await;

    let dune = app
        .create(
            owner,
            &book,
            json!([
                {"type": "title", "string": "Dune draft"},
                {"type": "code", "counter": true},
                {"type": "_sharing", "string": "public"},
                {"type": "_viewer", "reference": reader},
            ]),
        )
        .await;
    let (_, body) = app.get(&format!("/api/demo/entity/{dune}"), owner).await;
    let draft = body["entity"]["title"][0]["_id"].clone();
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{dune}"),
            owner,
            json!({"type": "title", "string": "Dune", "_id": draft}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    app.create(
        owner,
        &book,
        json!([{"type": "title", "string": "Emma"}, {"type": "code", "counter": true}]),
    )
    .await;
    for pages in [100, 250] {
        app.create(
            owner,
            &chapter,
            json!([
                {"type": "_parent", "reference": dune},
                {"type": "_inheritrights", "boolean": true},
                {"type": "pages", "number": pages},
            ]),
        )
        .await;
    }
    // created after the book it is referenced from
    let herbert = app
        .create(owner, &writer, json!([{"type": "name", "string": "Frank Herbert"}]))
        .await;
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{dune}"),
            owner,
            json!({"type": "author", "reference": herbert}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let gone = app
        .create(owner, &book, json!([{"type": "title", "string": "Gone"}]))
        .await;
    let (status, _) = app.delete(&format!("/api/demo/entity/{gone}"), owner).await;
    assert_eq!(status, 200);
    reader_key
}

/// Every list a caller can make that the round trip must keep.
const LISTS: [&str; 5] = [
    "/api/{db}/entity?limit=1000",
    "/api/{db}/entity?_type.string=book&sort=-code.number",
    "/api/{db}/entity?q=herb",
    "/api/{db}/entity?q=dune",
    "/api/{db}/entity?pages.number.gte=300",
];

/// The lists `token` (anonymous without) sees in `db`, and the history of
/// every entity it lists.
async fn snapshot(app: &TestApp, db: &str, token: Option<&str>) -> Json {
    app.settle().await; // formulas computed in the background
    let mut lists = Vec::new();
    for path in LISTS {
        let (status, body) = app.call("GET", &path.replace("{db}", db), token, None).await;
        assert_eq!(status, 200, "{body}");
        lists.push(body);
    }
    let mut histories = serde_json::Map::new();
    if let Some(token) = token {
        for entity in lists[0]["entities"].as_array().unwrap() {
            let id = entity["_id"].as_str().unwrap();
            let (_, history) = app
                .get(&format!("/api/{db}/entity/{id}/history?limit=1000"), token)
                .await;
            histories.insert(id.to_owned(), history);
        }
    }
    json!({"lists": lists, "histories": histories})
}

/// An export's entity lines (the header names the database and the moment).
fn entity_lines(path: &Path) -> Vec<Json> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[tokio::test]
async fn export_then_import_into_another_database_keeps_entities_rights_formulas_search_and_history() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let reader_key = varied_database(&app, &owner).await;
    let dir = support::tempdir::Dir::new();
    let file = dir.0.join("demo.jsonl");

    let run = eds(&app, &["export", "demo", "--out", file.to_str().unwrap()]).await;
    assert!(run.ok, "{}", run.stderr);
    let text = std::fs::read_to_string(&file).unwrap();
    let header: Json = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["format"], "eds-export");
    assert_eq!(header["version"], 1);
    assert_eq!(header["database"], "demo");
    let lines = entity_lines(&file);
    assert_eq!(header["entities"], lines.len());
    assert!(text.contains("Dune draft"), "the overwritten title is exported");
    let deleted = lines.iter().filter(|line| line.get("deleted").is_some()).count();
    assert_eq!(deleted, 1, "the deleted book");
    // the same file comes out on stdout
    let stdout = eds(&app, &["export", "demo"]).await;
    assert!(stdout.ok, "{}", stdout.stderr);
    assert_eq!(
        stdout.stdout.lines().skip(1).collect::<Vec<_>>(),
        text.lines().skip(1).collect::<Vec<_>>()
    );

    let run = eds(&app, &["import", "copy", file.to_str().unwrap()]).await;
    assert!(run.ok, "{}", run.stderr);
    assert_eq!(
        run.lines(),
        vec![json!({"database": "copy", "entities": header["entities"], "values": header["values"]})]
    );

    // every projection is the one the source's writes built, whether the
    // import built it in bulk (reading only its type) or one by one
    let copied = support::projections(&app.database_url, "copy").await;
    assert_eq!(copied.len(), header["entities"].as_u64().unwrap() as usize - deleted);
    assert_eq!(copied, support::projections(&app.database_url, "demo").await);
    assert_eq!(
        support::value_visibility(&app.database_url, "copy").await,
        support::value_visibility(&app.database_url, "demo").await
    );
    // counted once at the import's end, as the source's writes kept them
    let tallies = support::value_tallies(&app.database_url, "copy").await;
    assert!(tallies.iter().any(|tally| tally.contains("pages")), "{tallies:?}");
    assert_eq!(tallies, support::value_tallies(&app.database_url, "demo").await);

    // the same keys log in to the copy (its key hashes are the source's)
    let copy_owner = token_in(&app, &app.key, "copy").await;
    let reader = token_in(&app, &reader_key, "demo").await;
    let copy_reader = token_in(&app, &reader_key, "copy").await;
    assert_eq!(
        snapshot(&app, "copy", Some(&copy_owner)).await,
        snapshot(&app, "demo", Some(&owner)).await
    );
    assert_eq!(
        snapshot(&app, "copy", Some(&copy_reader)).await,
        snapshot(&app, "demo", Some(&reader)).await
    );
    assert_eq!(snapshot(&app, "copy", None).await, snapshot(&app, "demo", None).await);
    let source = snapshot(&app, "demo", Some(&owner)).await;
    let dune = &source["lists"][3]["entities"][0];
    assert_eq!(dune["title"][0]["string"], "Dune");
    assert_eq!(dune["pages"][0]["number"], 350);
    assert_eq!(dune["author"][0]["string"], "Frank Herbert");

    // exporting the copy gives back every entity line of the source
    let again = dir.0.join("copy.jsonl");
    assert!(
        eds(&app, &["export", "copy", "--out", again.to_str().unwrap()])
            .await
            .ok
    );
    assert_eq!(entity_lines(&again), lines);
    let (_, usage) = app.get("/api/demo", &owner).await;
    let (_, copy_usage) = app.get("/api/copy", &copy_owner).await;
    assert_eq!(copy_usage["entities"], usage["entities"]);
    assert_eq!(copy_usage["properties"], usage["properties"]);
}

#[tokio::test]
async fn an_import_projects_entities_alike_wherever_their_types_stand_in_the_file() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    varied_database(&app, &owner).await;
    let dir = support::tempdir::Dir::new();
    let file = dir.0.join("demo.jsonl");
    assert!(eds(&app, &["export", "demo", "--out", file.to_str().unwrap()]).await.ok);
    // every entity before the ones created before it: types and definitions
    // after their entities, parents after their children, referenced
    // entities after their referrers
    let text = std::fs::read_to_string(&file).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[1..].reverse();
    let reversed = dir.0.join("reversed.jsonl");
    std::fs::write(&reversed, lines.join("\n")).unwrap();
    let run = eds(&app, &["import", "copy", reversed.to_str().unwrap()]).await;
    assert!(run.ok, "{}", run.stderr);
    assert_eq!(
        support::projections(&app.database_url, "copy").await,
        support::projections(&app.database_url, "demo").await
    );
    assert_eq!(
        support::value_visibility(&app.database_url, "copy").await,
        support::value_visibility(&app.database_url, "demo").await
    );
    let copy_owner = token_in(&app, &app.key, "copy").await;
    assert_eq!(
        snapshot(&app, "copy", Some(&copy_owner)).await,
        snapshot(&app, "demo", Some(&owner)).await
    );
}

#[tokio::test]
async fn an_export_file_is_readable_and_writable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let app = TestApp::start().await;
    let dir = support::tempdir::Dir::new();
    let file = dir.0.join("demo.jsonl");
    // Left over world-readable, from an earlier export or another tool.
    let partial = dir.0.join("demo.jsonl.partial");
    for path in [&file, &partial] {
        std::fs::write(path, "old").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let run = eds(&app, &["export", "demo", "--out", file.to_str().unwrap()]).await;
    assert!(run.ok, "{}", run.stderr);
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "mode {mode:o}");
    // and it is the export, whole
    let text = std::fs::read_to_string(&file).unwrap();
    let header: Json = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["format"], "eds-export");
    assert_eq!(header["entities"], entity_lines(&file).len());
    assert!(!partial.exists());
}

#[tokio::test]
async fn import_into_a_database_that_has_entities_is_refused_and_writes_nothing() {
    let app = TestApp::start().await;
    let dir = support::tempdir::Dir::new();
    let file = dir.0.join("demo.jsonl");
    assert!(eds(&app, &["export", "demo", "--out", file.to_str().unwrap()]).await.ok);
    assert!(
        eds(&app, &["db", "create", "second", "--email", "s@example.com"])
            .await
            .ok
    );
    let before = databases(&app).await;
    let counts = |usage: Run| {
        let usage = &usage.lines()[0];
        json!([usage["entities"], usage["properties"]])
    };
    let demo = counts(eds(&app, &["db", "usage", "demo"]).await);
    for target in ["demo", "second"] {
        eds(&app, &["import", target, file.to_str().unwrap()])
            .await
            .assert_failed_with("already has entities");
    }
    assert_eq!(databases(&app).await, before);
    assert_eq!(counts(eds(&app, &["db", "usage", "demo"]).await), demo);
    // a name that could never be served is refused before anything is read
    eds(&app, &["import", "api", file.to_str().unwrap()])
        .await
        .assert_failed_with("not allowed");
}

#[tokio::test]
async fn a_malformed_or_truncated_import_fails_and_writes_nothing() {
    let app = TestApp::start().await;
    let dir = support::tempdir::Dir::new();
    let file = dir.0.join("demo.jsonl");
    assert!(eds(&app, &["export", "demo", "--out", file.to_str().unwrap()]).await.ok);
    let lines: Vec<String> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let before = databases(&app).await;

    let broken = dir.0.join("broken.jsonl");
    let mut malformed = lines.clone();
    malformed[3] = malformed[3][..malformed[3].len() / 2].to_owned();
    std::fs::write(&broken, malformed.join("\n")).unwrap();
    eds(&app, &["import", "broken", broken.to_str().unwrap()])
        .await
        .assert_failed_with("line 4");

    let mut bad_id = lines.clone();
    bad_id[2] = bad_id[2].replacen("\"_id\":\"", "\"_id\":\"X", 1);
    std::fs::write(&broken, bad_id.join("\n")).unwrap();
    eds(&app, &["import", "broken", broken.to_str().unwrap()])
        .await
        .assert_failed_with("line 3");

    // the last entity line missing: the header's counts tell
    std::fs::write(&broken, lines[..lines.len() - 1].join("\n")).unwrap();
    eds(&app, &["import", "broken", broken.to_str().unwrap()])
        .await
        .assert_failed_with("truncated");

    std::fs::write(&broken, lines[1..].join("\n")).unwrap();
    eds(&app, &["import", "broken", broken.to_str().unwrap()])
        .await
        .assert_failed_with("not an eds export");

    assert_eq!(databases(&app).await, before, "no database was left behind");
}
