//! Persons made at a first login (`add_user`), end to end: only the
//! database's own entity names where they go, and only while the writer of
//! its `add_user` owns that entity and expands the target; how a database
//! gets its own entity (seeded, imported, or chosen for an older one).

use crate::support;

use diesel_async::RunQueryDsl;
use serde_json::{Value as Json, json};
use support::TestApp;
use support::email_login::{app_with_mail, exchange, session_key};
use support::smtp::SmtpSink;

/// A stranger's first e-mail sign-in asking for demo, after the `mails`
/// already received: the status and body of the exchange.
async fn walk_in(app: &TestApp, sink: &SmtpSink, email: &str, mails: usize) -> (u16, Json) {
    walk_into(app, sink, email, mails, "demo").await
}

/// As [`walk_in`], asking for database `db`.
async fn walk_into(app: &TestApp, sink: &SmtpSink, email: &str, mails: usize, db: &str) -> (u16, Json) {
    let key = session_key(app, sink, email, &[], mails).await;
    exchange(app, &key, &format!("?db={db}")).await
}

fn assert_no_person(status: u16, body: &Json) {
    assert_eq!(
        (status, body["error"].as_str(), body["message"].as_str()),
        (401, Some("unauthorized"), Some("No accessible accounts")),
        "{body}"
    );
}

/// Asserts that the exchange answered a new person under `folder`; answers
/// the person's id and token.
async fn assert_placed_under(app: &TestApp, status: u16, body: &Json, folder: &str) -> (String, String) {
    assert_placed_in(app, "demo", status, body, folder).await
}

/// As [`assert_placed_under`], in database `db`.
async fn assert_placed_in(app: &TestApp, db: &str, status: u16, body: &Json, folder: &str) -> (String, String) {
    assert_eq!(status, 200, "{body}");
    let person = body["accounts"][0]["user"]["_id"].as_str().unwrap().to_owned();
    let token = body["token"].as_str().unwrap().to_owned();
    let (status, entity) = app.get(&format!("/api/{db}/entity/{person}"), &token).await;
    assert_eq!(status, 200, "{entity}");
    assert_eq!(entity["entity"]["_parent"][0]["reference"], folder, "{entity}");
    (person, token)
}

/// How many entities of demo hold e-mail `email`, whoever may see them.
async fn entities_with_email(app: &TestApp, email: &str) -> i64 {
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        count: i64,
    }
    let mut conn = app.pool.get().await.unwrap();
    diesel::sql_query(
        "SELECT count(*) AS count FROM property_values WHERE db = 'demo' AND prop = 'email' AND string = $1",
    )
    .bind::<diesel::sql_types::Text, _>(email)
    .get_result::<Count>(&mut conn)
    .await
    .unwrap()
    .count
}

/// Database `db`'s own entity, as recorded.
async fn own_entity(app: &TestApp, db: &str) -> Option<String> {
    let mut conn = app.pool.get().await.unwrap();
    eds::db::databases::own_entity(&mut conn, db).await.unwrap()
}

/// Writes `add_user` → `target` on `entity` as `token`.
async fn point_add_user(app: &TestApp, token: &str, entity: &str, target: &str) {
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{entity}"),
            token,
            json!({"type": "add_user", "reference": target}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
}

/// Gives `person` `right` on `entity` (replacing their other right there) as `token`.
async fn grant(app: &TestApp, token: &str, entity: &str, right: &str, person: &str) {
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{entity}"),
            token,
            json!({"type": right, "reference": person}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
}

/// The demo app with a `folder` type, its owner's
/// token, and Pat, an ordinary person (id, token).
struct World {
    app: TestApp,
    sink: SmtpSink,
    owner: String,
    folder_type: String,
    pat: String,
    pat_token: String,
}

async fn world() -> World {
    let (app, sink) = app_with_mail(&[]).await;
    let owner = app.owner_token().await;
    let folder_type = app.create_type(&owner, "folder").await;
    let (pat, key) = app.add_person(&owner, "Pat").await;
    let pat_token = app.token_for(&key).await;
    World {
        app,
        sink,
        owner,
        folder_type,
        pat,
        pat_token,
    }
}

impl World {
    async fn folder(&self, token: &str, name: &str) -> String {
        self.app
            .create(token, &self.folder_type, json!([{"type": "name", "string": name}]))
            .await
    }

    /// The database's own (seeded) entity.
    async fn database(&self) -> String {
        self.app.find(&self.owner, "database", "demo").await
    }
}

#[tokio::test]
async fn add_user_on_a_database_entity_of_an_ordinary_person_creates_no_person() {
    let w = world().await;
    let database_type = w.app.find(&w.pat_token, "entity", "database").await;
    let pat_folder = w.folder(&w.pat_token, "Pat's catch").await;
    w.app
        .create(
            &w.pat_token,
            &database_type,
            json!([{"type": "name", "string": "demo"}, {"type": "add_user", "reference": pat_folder}]),
        )
        .await;
    let (status, body) = walk_in(&w.app, &w.sink, "victim@example.com", 0).await;
    assert_no_person(status, &body);
    assert_eq!(entities_with_email(&w.app, "victim@example.com").await, 0);

    // the owner of the database's own entity names a folder they own: a stranger gets a person there
    let welcome = w.folder(&w.owner, "Welcome").await;
    point_add_user(&w.app, &w.owner, &w.database().await, &welcome).await;
    let (status, body) = walk_in(&w.app, &w.sink, "guest@example.com", 1).await;
    assert_placed_under(&w.app, status, &body, &welcome).await;
    assert_eq!(entities_with_email(&w.app, "guest@example.com").await, 1);
}

#[tokio::test]
async fn a_second_database_entity_is_ignored_even_when_the_owner_made_it() {
    let w = world().await;
    let database_type = w.app.find(&w.owner, "entity", "database").await;
    let welcome = w.folder(&w.owner, "Welcome").await;
    let second = w
        .app
        .create(&w.owner, &database_type, json!([{"type": "name", "string": "demo 2"}]))
        .await;
    point_add_user(&w.app, &w.owner, &second, &welcome).await;
    let (status, body) = walk_in(&w.app, &w.sink, "guest@example.com", 0).await;
    assert_no_person(status, &body);
    assert_eq!(entities_with_email(&w.app, "guest@example.com").await, 0);
    assert_ne!(own_entity(&w.app, "demo").await.as_deref(), Some(second.as_str()));

    point_add_user(&w.app, &w.owner, &w.database().await, &welcome).await;
    let (status, body) = walk_in(&w.app, &w.sink, "guest@example.com", 1).await;
    assert_placed_under(&w.app, status, &body, &welcome).await;
}

#[tokio::test]
async fn add_user_stops_creating_persons_when_its_writer_loses_owner_of_the_database_entity() {
    let w = world().await;
    let database = w.database().await;
    grant(&w.app, &w.owner, &database, "_owner", &w.pat).await;
    let pat_folder = w.folder(&w.pat_token, "Pat's team").await;
    point_add_user(&w.app, &w.pat_token, &database, &pat_folder).await;
    let (status, body) = walk_in(&w.app, &w.sink, "first@example.com", 0).await;
    assert_placed_under(&w.app, status, &body, &pat_folder).await;

    // Pat is only a viewer of the database entity now; the value stays
    grant(&w.app, &w.owner, &database, "_viewer", &w.pat).await;
    let (status, body) = walk_in(&w.app, &w.sink, "second@example.com", 1).await;
    assert_no_person(status, &body);
    assert_eq!(entities_with_email(&w.app, "second@example.com").await, 0);
}

#[tokio::test]
async fn add_user_stops_creating_persons_when_its_writer_loses_expander_on_the_target() {
    let w = world().await;
    let database = w.database().await;
    grant(&w.app, &w.owner, &database, "_owner", &w.pat).await;
    let shared = w.folder(&w.owner, "Shared").await;
    grant(&w.app, &w.owner, &shared, "_expander", &w.pat).await;
    point_add_user(&w.app, &w.pat_token, &database, &shared).await;
    let (status, body) = walk_in(&w.app, &w.sink, "first@example.com", 0).await;
    assert_placed_under(&w.app, status, &body, &shared).await;

    grant(&w.app, &w.owner, &shared, "_viewer", &w.pat).await;
    let (status, body) = walk_in(&w.app, &w.sink, "second@example.com", 1).await;
    assert_no_person(status, &body);
    assert_eq!(entities_with_email(&w.app, "second@example.com").await, 0);

    // an add_user the owner writes later still places persons, Pat's being passed over
    let welcome = w.folder(&w.owner, "Welcome").await;
    point_add_user(&w.app, &w.owner, &database, &welcome).await;
    let (status, body) = walk_in(&w.app, &w.sink, "second@example.com", 2).await;
    assert_placed_under(&w.app, status, &body, &welcome).await;
}

#[tokio::test]
async fn a_person_made_at_a_first_login_edits_their_own_name() {
    let w = world().await;
    let welcome = w.folder(&w.owner, "Welcome").await;
    point_add_user(&w.app, &w.owner, &w.database().await, &welcome).await;
    let (status, body) = walk_in(&w.app, &w.sink, "guest@example.com", 0).await;
    let (person, token) = assert_placed_under(&w.app, status, &body, &welcome).await;

    let (status, written) = w
        .app
        .post(
            &format!("/api/demo/entity/{person}"),
            &token,
            json!({"type": "name", "string": "Guest Person"}),
        )
        .await;
    assert_eq!(status, 200, "{written}");
    let (_, entity) = w.app.get(&format!("/api/demo/entity/{person}"), &token).await;
    assert_eq!(entity["entity"]["name"][0]["string"], "Guest Person", "{entity}");
    // an editor of itself still cannot make itself its owner
    let (status, refused) = w
        .app
        .post(
            &format!("/api/demo/entity/{person}"),
            &token,
            json!({"type": "_owner", "reference": person}),
        )
        .await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (403, Some("forbidden")),
        "{refused}"
    );
}

#[tokio::test]
async fn an_import_records_the_imported_database_entity_with_the_lowest_id() {
    let w = world().await;
    let database = w.database().await;
    let welcome = w.folder(&w.owner, "Welcome").await;
    point_add_user(&w.app, &w.owner, &database, &welcome).await;
    // a later one (a higher id) naming a folder of its own
    let database_type = w.app.find(&w.owner, "entity", "database").await;
    let later = w
        .app
        .create(&w.owner, &database_type, json!([{"type": "name", "string": "later"}]))
        .await;
    let elsewhere = w.folder(&w.owner, "Elsewhere").await;
    point_add_user(&w.app, &w.owner, &later, &elsewhere).await;
    assert!(later > database);

    let dir = support::tempdir::Dir::new();
    let file = dir.0.join("demo.jsonl");
    let file = file.to_str().unwrap();
    let export: &[&str] = &["export", "demo", "--out", file];
    for args in [export, &["import", "copy", file]] {
        let run = support::processes::eds(&w.app.database_url, &dir.0)
            .args(args)
            .output()
            .await
            .unwrap();
        assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    }
    assert_eq!(own_entity(&w.app, "copy").await, Some(database));
    let (status, body) = walk_into(&w.app, &w.sink, "guest@example.com", 0, "copy").await;
    assert_placed_in(&w.app, "copy", status, &body, &welcome).await;
}

#[tokio::test]
async fn a_database_from_before_its_own_entity_gets_its_oldest_live_database_entity() {
    use diesel_async::SimpleAsyncConnection;
    let w = world().await;
    let seeded = w.database().await;
    assert_eq!(own_entity(&w.app, "demo").await.as_deref(), Some(seeded.as_str()));
    let database_type = w.app.find(&w.owner, "entity", "database").await;
    let mut later = Vec::new();
    for name in ["second", "third"] {
        let values = json!([{"type": "name", "string": name}]);
        later.push(w.app.create(&w.owner, &database_type, values).await);
    }
    let (status, body) = w.app.delete(&format!("/api/demo/entity/{seeded}"), &w.owner).await;
    assert_eq!(status, 200, "{body}");

    // the table as it was before the migration, then the migration
    let mut conn = w.app.pool.get().await.unwrap();
    conn.batch_execute("ALTER TABLE databases DROP COLUMN entity_id")
        .await
        .unwrap();
    conn.batch_execute(include_str!(
        "../../migrations/2026-11-26-000016_database_entity/up.sql"
    ))
    .await
    .unwrap();
    drop(conn);
    assert_eq!(own_entity(&w.app, "demo").await.as_deref(), Some(later[0].as_str()));
}
