//! Restore from history (`POST /api/{db}/entity/{_id}/restore` and the MCP
//! tool `restore_entity`): each rule of the CONTRACT's "Restore", the
//! refusals included, against real PostgreSQL and a real server.

use crate::support;

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::sql_types::{Text, Timestamptz};
use diesel_async::RunQueryDsl;
use serde_json::{Value as Json, json};
use support::TestApp;

/// A moment between two writes: the writes before it are older, those after newer.
async fn moment() -> DateTime<Utc> {
    tokio::time::sleep(Duration::from_millis(30)).await;
    let at = Utc::now();
    tokio::time::sleep(Duration::from_millis(30)).await;
    at
}

fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

async fn restore(app: &TestApp, token: &str, id: &str, body: Option<Json>) -> (u16, Json) {
    let path = format!("/api/demo/entity/{id}/restore");
    app.call("POST", &path, Some(token), body).await
}

async fn restore_at(app: &TestApp, token: &str, id: &str, at: DateTime<Utc>) -> (u16, Json) {
    restore(app, token, id, Some(json!({"at": rfc3339(at)}))).await
}

async fn read(app: &TestApp, token: &str, id: &str) -> Json {
    let (status, body) = app.get(&format!("/api/demo/entity/{id}"), token).await;
    assert_eq!(status, 200, "{body}");
    body["entity"].clone()
}

/// The strings of property `prop` of an entity document.
fn strings(entity: &Json, prop: &str) -> Vec<String> {
    entity[prop]
        .as_array()
        .map(|values| {
            values
                .iter()
                .filter_map(|v| v["string"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn value_id(entity: &Json, prop: &str) -> String {
    entity[prop][0]["_id"].as_str().unwrap().to_owned()
}

/// Every value row an entity ever had: id, creation and deletion, in id order.
async fn rows(app: &TestApp, id: &str) -> Vec<(String, DateTime<Utc>, Option<DateTime<Utc>>)> {
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = Text)]
        id: String,
        #[diesel(sql_type = Timestamptz)]
        created_at: DateTime<Utc>,
        #[diesel(sql_type = diesel::sql_types::Nullable<Timestamptz>)]
        deleted_at: Option<DateTime<Utc>>,
    }
    let mut conn = app.pool.get().await.unwrap();
    let found: Vec<Row> = diesel::sql_query(
        "SELECT id, created_at, deleted_at FROM property_values WHERE db = 'demo' AND entity_id = $1 ORDER BY id",
    )
    .bind::<Text, _>(id)
    .load(&mut conn)
    .await
    .unwrap();
    found
        .into_iter()
        .map(|row| (row.id, row.created_at, row.deleted_at))
        .collect()
}

/// An app, the owner's token, a `book` type and a book titled `Emma`.
async fn book() -> (TestApp, String, String, String) {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book_type = app.create_type(&owner, "book").await;
    let book = app
        .create(&owner, &book_type, json!([{"type": "title", "string": "Emma"}]))
        .await;
    (app, owner, book_type, book)
}

#[tokio::test]
async fn restore_brings_back_values_live_at_and_deletes_later_ones() {
    let (app, owner, _, book) = book().await;
    let title = value_id(&read(&app, &owner, &book).await, "title");
    let at = moment().await;
    let path = format!("/api/demo/entity/{book}");
    app.post(
        &path,
        &owner,
        json!([{"type": "title", "string": "Persuasion", "_id": title}, {"type": "note", "string": "later"}]),
    )
    .await;
    let (status, body) = restore_at(&app, &owner, &book, at).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["_id"], book);
    let written = body["properties"].as_array().unwrap();
    assert_eq!(written.len(), 1, "{body}");
    assert_eq!(
        (&written[0]["type"], &written[0]["string"]),
        (&json!("title"), &json!("Emma"))
    );
    assert_ne!(written[0]["_id"], title, "a value written again gets a new id");
    let entity = read(&app, &owner, &book).await;
    assert_eq!(strings(&entity, "title"), ["Emma"]);
    assert!(entity.get("note").is_none(), "{entity}");
    let (_, again) = app
        .get(
            &format!("/api/demo/property/{}", written[0]["_id"].as_str().unwrap()),
            &owner,
        )
        .await;
    assert_eq!(
        again["created"]["by"], app.person,
        "written again by the caller: {again}"
    );
}

#[tokio::test]
async fn restore_without_changes_writes_nothing() {
    let (app, owner, _, book) = book().await;
    let before = rows(&app, &book).await;
    let (status, body) = restore_at(&app, &owner, &book, moment().await).await;
    assert_eq!((status, &body["properties"]), (200, &json!([])), "{body}");
    assert_eq!(rows(&app, &book).await, before);
}

#[tokio::test]
async fn restore_keeps_history_append_only() {
    let (app, owner, _, book) = book().await;
    let at = moment().await;
    let title = value_id(&read(&app, &owner, &book).await, "title");
    app.post(
        &format!("/api/demo/entity/{book}"),
        &owner,
        json!([{"type": "title", "string": "Sanditon", "_id": title}]),
    )
    .await;
    let before = rows(&app, &book).await;
    let (status, body) = restore_at(&app, &owner, &book, at).await;
    assert_eq!(status, 200, "{body}");
    let after = rows(&app, &book).await;
    assert_eq!(
        after.len(),
        before.len() + 1,
        "one value written again, nothing removed"
    );
    for (id, created, deleted) in &before {
        let kept = after
            .iter()
            .find(|row| &row.0 == id)
            .expect("every earlier value stays");
        assert_eq!(&kept.1, created);
        if deleted.is_some() {
            assert_eq!(&kept.2, deleted, "an earlier deletion is never rewritten");
        }
    }
    let (_, history) = app.get(&format!("/api/demo/entity/{book}/history"), &owner).await;
    let titles: Vec<&Json> = history["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == "title")
        .collect();
    assert!(
        titles.len() >= 3,
        "the first title, its overwrite and the restore: {history}"
    );
}

#[tokio::test]
async fn restore_never_brings_back_a_revoked_api_key() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (bob, first_key) = app.add_person(&owner, "Bob").await;
    let revoked = value_id(&read(&app, &owner, &bob).await, "service_api_key");
    let at = moment().await;
    let (status, _) = app.delete(&format!("/api/demo/property/{revoked}"), &owner).await;
    assert_eq!(status, 200);
    let (status, added) = app
        .post(
            &format!("/api/demo/entity/{bob}"),
            &owner,
            json!({"type": "service_api_key", "string": "generate"}),
        )
        .await;
    assert_eq!(status, 200, "{added}");
    let second_key = added["properties"][0]["string"].as_str().unwrap().to_owned();
    let (status, body) = restore_at(&app, &owner, &bob, at).await;
    assert_eq!(status, 200, "{body}");
    assert!(!body.to_string().contains("service_api_key"), "{body}");
    let (status, _) = app.call("GET", "/api/auth?db=demo", Some(&first_key), None).await;
    assert_eq!(status, 401, "the revoked key stays revoked");
    let (status, _) = app.call("GET", "/api/auth?db=demo", Some(&second_key), None).await;
    assert_eq!(status, 200, "a key added since is not touched");
}

#[tokio::test]
async fn restore_never_touches_a_webhook_secret_billing_or_created() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let webhook_type = app.create_type(&owner, "webhook").await;
    let hook = app
        .create(
            &owner,
            &webhook_type,
            json!([{"type": "secret", "string": "s1"}, {"type": "url", "string": "https://a.example"}]),
        )
        .await;
    let entity = read(&app, &owner, &hook).await;
    let (secret, url, created) = (
        value_id(&entity, "secret"),
        value_id(&entity, "url"),
        value_id(&entity, "_created"),
    );
    let at = moment().await;
    let mut conn = app.pool.get().await.unwrap();
    // billing limits are written by the service only: one live at `at` and
    // deleted since, one added since
    diesel::sql_query(
        "INSERT INTO property_values (db, id, entity_id, prop, number, created_at, deleted_at) VALUES \
         ('demo', 'b0000000000000000000000a', $1, 'billing_entities_limit', 5, $2, now()), \
         ('demo', 'b0000000000000000000000b', $1, 'billing_entities_limit', 9, now(), NULL)",
    )
    .bind::<Text, _>(&hook)
    .bind::<Timestamptz, _>(at - chrono::Duration::milliseconds(10))
    .execute(&mut conn)
    .await
    .unwrap();
    let path = format!("/api/demo/entity/{hook}");
    app.post(&path, &owner, json!([{"type": "secret", "string": "s2", "_id": secret}, {"type": "url", "string": "https://b.example", "_id": url}]))
        .await;
    let second_secret = value_id(&read(&app, &owner, &hook).await, "secret");
    assert_ne!(second_secret, secret);
    let (status, body) = restore_at(&app, &owner, &hook, at).await;
    assert_eq!(status, 200, "{body}");
    let written: Vec<&str> = body["properties"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["type"].as_str().unwrap())
        .collect();
    assert_eq!(written, ["url"], "{body}");
    let entity = read(&app, &owner, &hook).await;
    // the secret written since stays, masked as every read shows it
    assert_eq!(value_id(&entity, "secret"), second_secret);
    assert_eq!(strings(&entity, "secret"), ["***"]);
    assert_eq!(strings(&entity, "url"), ["https://a.example"]);
    assert_eq!(value_id(&entity, "_created"), created);
    let billing = rows(&app, &hook).await;
    let live = |id: &str| billing.iter().find(|row| row.0 == id).map(|row| row.2.is_none());
    assert_eq!(
        (live("b0000000000000000000000a"), live("b0000000000000000000000b")),
        (Some(false), Some(true))
    );
}

#[tokio::test]
async fn restore_undeletes_with_values_before_deletion() {
    let (app, owner, book_type, book) = book().await;
    app.post(
        &format!("/api/demo/entity/{book}"),
        &owner,
        json!({"type": "year", "number": 1815}),
    )
    .await;
    let (status, _) = app.delete(&format!("/api/demo/entity/{book}"), &owner).await;
    assert_eq!(status, 200);
    let (status, _) = app.get(&format!("/api/demo/entity/{book}"), &owner).await;
    assert_eq!(status, 404);
    let (status, body) = restore(&app, &owner, &book, None).await;
    assert_eq!(status, 200, "{body}");
    let mut written: Vec<&str> = body["properties"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["type"].as_str().unwrap())
        .collect();
    written.sort();
    assert_eq!(written, ["_created", "_owner", "_type", "title", "year"], "{body}");
    let entity = read(&app, &owner, &book).await;
    assert_eq!(strings(&entity, "title"), ["Emma"]);
    assert_eq!(entity["year"][0]["number"], 1815);
    assert_eq!(entity["_type"][0]["reference"], book_type);
    let (_, listed) = app
        .get("/api/demo/entity?_type.string=book&title.string=Emma", &owner)
        .await;
    assert_eq!(listed["count"], 1, "{listed}");
}

#[tokio::test]
async fn restore_undelete_fixes_referrers_names_and_search() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let author_type = app.create_type(&owner, "author").await;
    let book_type = app.create_type(&owner, "book").await;
    app.define(
        &owner,
        &book_type,
        "writer",
        "reference",
        json!([{"type": "search", "boolean": true}]),
    )
    .await;
    let author = app
        .create(&owner, &author_type, json!([{"type": "name", "string": "Tolkien"}]))
        .await;
    let book = app
        .create(&owner, &book_type, json!([{"type": "writer", "reference": author}]))
        .await;
    let search = "/api/demo/entity?_type.string=book&q=tolkien";
    let found = |body: &Json| body["count"].as_u64();
    assert_eq!(found(&app.get(search, &owner).await.1), Some(1));
    app.delete(&format!("/api/demo/entity/{author}"), &owner).await;
    assert_eq!(
        found(&app.get(search, &owner).await.1),
        Some(0),
        "the name left the referrer's search text"
    );
    let (status, body) = restore(&app, &owner, &author, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        found(&app.get(search, &owner).await.1),
        Some(1),
        "the name is back in the referrer's search text"
    );
    assert_eq!(read(&app, &owner, &book).await["writer"][0]["string"], "Tolkien");
}

#[tokio::test]
async fn restore_recomputes_formulas() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let cart = app.create_type(&owner, "cart").await;
    let item = app.create_type(&owner, "item").await;
    let formula = |text: &str| json!([{"type": "formula", "string": text}]);
    app.define(&owner, &cart, "sum", "number", formula("_child.item.price SUM"))
        .await;
    app.define(&owner, &item, "double", "number", formula("price 2 MULTIPLY"))
        .await;
    let parent = app.create(&owner, &cart, json!([])).await;
    let child = app
        .create(
            &owner,
            &item,
            json!([{"type": "_parent", "reference": parent}, {"type": "price", "number": 3}]),
        )
        .await;
    let price = value_id(&read(&app, &owner, &child).await, "price");
    let at = moment().await;
    app.post(
        &format!("/api/demo/entity/{child}"),
        &owner,
        json!({"type": "price", "number": 4, "_id": price}),
    )
    .await;
    assert_eq!(read(&app, &owner, &child).await["double"][0]["number"], 8);
    let (status, body) = restore_at(&app, &owner, &child, at).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(read(&app, &owner, &child).await["double"][0]["number"], 6);
    app.delete(&format!("/api/demo/entity/{child}"), &owner).await;
    app.settle().await;
    assert!(read(&app, &owner, &parent).await["sum"][0]["number"].as_i64() != Some(3));
    let (status, body) = restore(&app, &owner, &child, None).await;
    assert_eq!(status, 200, "{body}");
    app.settle().await;
    assert_eq!(
        read(&app, &owner, &parent).await["sum"][0]["number"],
        3,
        "the parent's formula reads it again"
    );
}

#[tokio::test]
async fn restore_type_is_an_overwrite() {
    let (app, owner, book_type, book) = book().await;
    let film_type = app.create_type(&owner, "film").await;
    let type_value = value_id(&read(&app, &owner, &book).await, "_type");
    let at = moment().await;
    app.post(
        &format!("/api/demo/entity/{book}"),
        &owner,
        json!({"type": "_type", "reference": film_type, "_id": type_value}),
    )
    .await;
    let (status, body) = restore_at(&app, &owner, &book, at).await;
    assert_eq!(status, 200, "{body}");
    let types = read(&app, &owner, &book).await["_type"].clone();
    assert_eq!(types.as_array().unwrap().len(), 1, "{types}");
    assert_eq!(types[0]["reference"], book_type);
}

#[tokio::test]
async fn restore_counter_taken_is_409() {
    let (app, owner, book_type, book) = book().await;
    app.define(&owner, &book_type, "no", "counter", json!([])).await;
    let (_, numbered) = app
        .post(
            &format!("/api/demo/entity/{book}"),
            &owner,
            json!({"type": "no", "counter": true}),
        )
        .await;
    let number = numbered["properties"][0]["string"].as_str().unwrap().to_owned();
    let at = moment().await;
    let no = numbered["properties"][0]["_id"].as_str().unwrap();
    app.delete(&format!("/api/demo/property/{no}"), &owner).await;
    let other = app
        .create(
            &owner,
            &book_type,
            json!([{"type": "no", "counter": true, "string": number.clone()}]),
        )
        .await;
    let before = rows(&app, &book).await;
    let (status, body) = restore_at(&app, &owner, &book, at).await;
    assert_eq!(
        (status, body["error"].as_str(), body["status"].as_u64()),
        (409, Some("counter_taken"), Some(409)),
        "{body}"
    );
    assert_eq!(rows(&app, &book).await, before, "nothing written");
    let taken = value_id(&read(&app, &owner, &other).await, "no");
    app.delete(&format!("/api/demo/property/{taken}"), &owner).await;
    let (status, body) = restore_at(&app, &owner, &book, at).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(strings(&read(&app, &owner, &book).await, "no"), [number]);
}

#[tokio::test]
async fn restore_rights_property_needs_owner() {
    let (app, owner, _, book) = book().await;
    let (bob, key) = app.add_person(&owner, "Bob").await;
    let (carol, _) = app.add_person(&owner, "Carol").await;
    let bob_token = app.token_for(&key).await;
    let path = format!("/api/demo/entity/{book}");
    app.post(&path, &owner, json!({"type": "_editor", "reference": bob}))
        .await;
    let at = moment().await;
    app.post(&path, &owner, json!({"type": "_viewer", "reference": carol}))
        .await;
    let between = moment().await;
    let title = value_id(&read(&app, &owner, &book).await, "title");
    app.post(
        &path,
        &bob_token,
        json!({"type": "title", "string": "Persuasion", "_id": title}),
    )
    .await;
    let before = rows(&app, &book).await;
    let (status, body) = restore_at(&app, &bob_token, &book, at).await;
    assert_eq!((status, body["error"].as_str()), (403, Some("forbidden")), "{body}");
    assert_eq!(
        rows(&app, &book).await,
        before,
        "refused whole: the title is not restored either"
    );
    let (status, body) = restore_at(&app, &bob_token, &book, between).await;
    assert_eq!(status, 200, "an editor restores values that are not rights: {body}");
    assert_eq!(strings(&read(&app, &owner, &book).await, "title"), ["Emma"]);
    let (status, body) = restore_at(&app, &owner, &book, at).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        read(&app, &owner, &book)
            .await
            .get("_viewer")
            .is_none_or(|viewers| !viewers.to_string().contains(&carol))
    );
}

#[tokio::test]
async fn restore_of_a_deleted_entity_needs_owner() {
    let (app, owner, _, book) = book().await;
    let (bob, key) = app.add_person(&owner, "Bob").await;
    let bob_token = app.token_for(&key).await;
    app.post(
        &format!("/api/demo/entity/{book}"),
        &owner,
        json!({"type": "_editor", "reference": bob}),
    )
    .await;
    app.delete(&format!("/api/demo/entity/{book}"), &owner).await;
    let (status, body) = restore(&app, &bob_token, &book, None).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("forbidden")),
        "an editor sees it as it was deleted: {body}"
    );
    let (status, _) = app.get(&format!("/api/demo/entity/{book}"), &owner).await;
    assert_eq!(status, 404, "still deleted");
}

#[tokio::test]
async fn restore_parent_needs_expander() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let folder_type = app.create_type(&owner, "folder").await;
    let book_type = app.create_type(&owner, "book").await;
    let (bob, key) = app.add_person(&owner, "Bob").await;
    let bob_token = app.token_for(&key).await;
    let folder = app
        .create(&owner, &folder_type, json!([{"type": "_expander", "reference": bob}]))
        .await;
    let book = app
        .create(
            &bob_token,
            &book_type,
            json!([{"type": "_parent", "reference": folder}]),
        )
        .await;
    let at = moment().await;
    let parent = value_id(&read(&app, &bob_token, &book).await, "_parent");
    let (status, _) = app.delete(&format!("/api/demo/property/{parent}"), &bob_token).await;
    assert_eq!(status, 200);
    // a person holds one right per entity: the viewer right replaces the expander
    let (status, _) = app
        .post(
            &format!("/api/demo/entity/{folder}"),
            &owner,
            json!({"type": "_viewer", "reference": bob}),
        )
        .await;
    assert_eq!(status, 200);
    let before = rows(&app, &book).await;
    let (status, body) = restore_at(&app, &bob_token, &book, at).await;
    assert_eq!((status, body["error"].as_str()), (403, Some("forbidden")), "{body}");
    assert_eq!(rows(&app, &book).await, before);
    app.post(
        &format!("/api/demo/entity/{folder}"),
        &owner,
        json!({"type": "_expander", "reference": bob}),
    )
    .await;
    let (status, body) = restore_at(&app, &bob_token, &book, at).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(read(&app, &bob_token, &book).await["_parent"][0]["reference"], folder);
}

#[tokio::test]
async fn restore_keeps_an_owner() {
    let (app, owner, _, book) = book().await;
    let at = moment().await;
    let owner_value = value_id(&read(&app, &owner, &book).await, "_owner");
    // an owner granted after `at` (as imported histories have them)
    let mut conn = app.pool.get().await.unwrap();
    diesel::sql_query("UPDATE property_values SET created_at = now() WHERE db = 'demo' AND id = $1")
        .bind::<Text, _>(&owner_value)
        .execute(&mut conn)
        .await
        .unwrap();
    let before = rows(&app, &book).await;
    let (status, body) = restore_at(&app, &owner, &book, at).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (403, Some("An entity keeps at least one _owner")),
        "{body}"
    );
    assert_eq!(rows(&app, &book).await, before);
}

#[tokio::test]
async fn restore_file_value_points_at_original_object() {
    let (app, owner, _, book) = book().await;
    let mut bytes = std::io::Cursor::new(Vec::new());
    image::RgbImage::from_pixel(8, 8, image::Rgb([200, 30, 30]))
        .write_to(&mut bytes, image::ImageFormat::Png)
        .unwrap();
    let bytes = bytes.into_inner();
    let (_, added) = app
        .post(
            &format!("/api/demo/entity/{book}"),
            &owner,
            json!({"type": "photo", "filename": "cover.png", "filesize": bytes.len(), "filetype": "image/png"}),
        )
        .await;
    let value = &added["properties"][0];
    let mut put = app
        .http
        .put(value["upload"]["url"].as_str().unwrap())
        .body(bytes.clone());
    for (name, header) in value["upload"]["headers"].as_object().unwrap() {
        put = put.header(
            name.as_str(),
            header.as_str().map_or_else(|| header.to_string(), str::to_owned),
        );
    }
    assert_eq!(put.send().await.unwrap().status(), 200);
    let at = moment().await;
    app.delete(
        &format!("/api/demo/property/{}", value["_id"].as_str().unwrap()),
        &owner,
    )
    .await;
    let (status, body) = restore_at(&app, &owner, &book, at).await;
    assert_eq!(status, 200, "{body}");
    let restored = &body["properties"][0];
    assert_eq!(
        (&restored["type"], &restored["filename"]),
        (&json!("photo"), &json!("cover.png"))
    );
    assert!(
        restored.get("upload").is_none(),
        "its content is stored already: {restored}"
    );
    let (status, shown) = app
        .get(
            &format!("/api/demo/property/{}", restored["_id"].as_str().unwrap()),
            &owner,
        )
        .await;
    assert_eq!(status, 200, "{shown}");
    let download = app.http.get(shown["url"].as_str().unwrap()).send().await.unwrap();
    assert_eq!(download.status(), 200);
    assert_eq!(download.bytes().await.unwrap().to_vec(), bytes);
    // the thumbnails of the entity's photo and of the value read the same object
    let restored_id = restored["_id"].as_str().unwrap();
    for path in [
        format!("/api/demo/entity/{book}/thumbnail/50"),
        format!("/api/demo/property/{restored_id}/thumbnail/50"),
    ] {
        let (status, signed) = app.get(&path, &owner).await;
        assert_eq!(status, 200, "{path}: {signed}");
        let thumbnail = app.http.get(signed["url"].as_str().unwrap()).send().await.unwrap();
        assert_eq!(thumbnail.status(), 200, "{path}");
        assert!(
            image::load_from_memory(&thumbnail.bytes().await.unwrap()).is_ok(),
            "{path}"
        );
    }
}

#[tokio::test]
async fn restore_future_at_is_400() {
    let (app, owner, _, book) = book().await;
    let (status, body) = restore_at(&app, &owner, &book, Utc::now() + chrono::Duration::hours(1)).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_body")), "{body}");
}

#[tokio::test]
async fn restore_at_before_creation_is_400() {
    let (app, owner, _, book) = book().await;
    let (status, body) = restore_at(&app, &owner, &book, Utc::now() - chrono::Duration::hours(1)).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_body")), "{body}");
}

#[tokio::test]
async fn restore_malformed_at_is_400() {
    let (app, owner, _, book) = book().await;
    for body in [
        json!({"at": "yesterday"}),
        json!({"at": "2026-11-20"}),
        json!({"at": 5}),
        json!({"when": "2026-11-20T09:30:00Z"}),
    ] {
        let (status, answer) = restore(&app, &owner, &book, Some(body.clone())).await;
        assert_eq!(
            (status, answer["error"].as_str()),
            (400, Some("invalid_body")),
            "{body}: {answer}"
        );
    }
}

#[tokio::test]
async fn restore_live_entity_without_at_is_400() {
    let (app, owner, _, book) = book().await;
    for body in [None, Some(json!({}))] {
        let (status, answer) = restore(&app, &owner, &book, body).await;
        assert_eq!(
            (status, answer["error"].as_str()),
            (400, Some("invalid_body")),
            "{answer}"
        );
    }
}

#[tokio::test]
async fn restore_invisible_entity_is_404() {
    let (app, owner, _, book) = book().await;
    let (_, key) = app.add_person(&owner, "Stranger").await;
    let stranger = app.token_for(&key).await;
    let at = Utc::now();
    for id in [book.as_str(), "0123456789abcdef01234567", "not-an-id"] {
        let (status, body) = restore_at(&app, &stranger, id, at).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (404, Some("not_found")),
            "{id}: {body}"
        );
    }
    app.delete(&format!("/api/demo/entity/{book}"), &owner).await;
    let (status, _) = restore(&app, &stranger, &book, None).await;
    assert_eq!(status, 404, "a deleted entity the caller never saw");
}

#[tokio::test]
async fn restore_with_an_idempotency_key_applies_once() {
    let (app, owner, _, book) = book().await;
    let at = moment().await;
    app.post(
        &format!("/api/demo/entity/{book}"),
        &owner,
        json!({"type": "note", "string": "later"}),
    )
    .await;
    let send = || {
        app.http
            .post(format!("{}/api/demo/entity/{book}/restore", app.url))
            .bearer_auth(&owner)
            .header("Idempotency-Key", "restore-1")
            .json(&json!({"at": rfc3339(at)}))
            .send()
    };
    let first: Json = send().await.unwrap().json().await.unwrap();
    let rows_after_first = rows(&app, &book).await;
    let repeat: Json = send().await.unwrap().json().await.unwrap();
    assert_eq!(first, repeat);
    assert_eq!(rows(&app, &book).await, rows_after_first, "the repeat wrote nothing");
}

#[tokio::test]
async fn restore_entity_mcp_tool_answers_as_rest() {
    let (app, owner, _, book) = book().await;
    let at = moment().await;
    app.post(
        &format!("/api/demo/entity/{book}"),
        &owner,
        json!({"type": "note", "string": "later"}),
    )
    .await;
    let call = |arguments: Json| {
        let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "restore_entity", "arguments": arguments}});
        app.call("POST", "/api/demo/mcp", Some(&owner), Some(message))
    };
    let (status, body) = call(json!({"_id": book, "at": rfc3339(at)})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["isError"], false, "{body}");
    assert_eq!(
        body["result"]["structuredContent"],
        json!({"_id": book, "properties": []})
    );
    assert!(read(&app, &owner, &book).await.get("note").is_none());
    let (_, body) = call(json!({"_id": book})).await;
    assert_eq!(body["result"]["isError"], true, "a live entity needs `at`: {body}");
    let error: Json = serde_json::from_str(body["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(error["error"], "invalid_body");
    let (_, listed) = app
        .call(
            "POST",
            "/api/demo/mcp",
            Some(&owner),
            Some(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})),
        )
        .await;
    let tool = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "restore_entity")
        .cloned()
        .unwrap();
    assert!(tool["outputSchema"]["properties"].get("properties").is_some(), "{tool}");
    assert!(
        tool["inputSchema"]["properties"].get("idempotency_key").is_some(),
        "{tool}"
    );
}

#[tokio::test]
async fn restore_type_no_longer_an_entity_type_is_400() {
    let (app, owner, book_type, book) = book().await;
    let film_type = app.create_type(&owner, "film").await;
    let type_value = value_id(&read(&app, &owner, &book).await, "_type");
    let at = moment().await;
    let path = format!("/api/demo/entity/{book}");
    app.post(
        &path,
        &owner,
        json!({"type": "_type", "reference": film_type, "_id": type_value}),
    )
    .await;
    let (status, _) = app.delete(&format!("/api/demo/entity/{book_type}"), &owner).await;
    assert_eq!(status, 200);
    let before = rows(&app, &book).await;
    let (status, body) = restore_at(&app, &owner, &book, at).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_type")), "{body}");
    assert_eq!(rows(&app, &book).await, before, "nothing written");
}

#[tokio::test]
async fn restore_of_a_deleted_entity_at_after_its_deletion_restores_it_as_deleted() {
    let (app, owner, _, book) = book().await;
    app.delete(&format!("/api/demo/entity/{book}"), &owner).await;
    let (status, body) = restore_at(&app, &owner, &book, moment().await).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(strings(&read(&app, &owner, &book).await, "title"), ["Emma"]);
}

#[tokio::test]
async fn restore_needs_editor() {
    let (app, owner, _, book) = book().await;
    let (viewer, key) = app.add_person(&owner, "Viewer").await;
    let viewer_token = app.token_for(&key).await;
    let path = format!("/api/demo/entity/{book}");
    app.post(&path, &owner, json!({"type": "_viewer", "reference": viewer}))
        .await;
    let at = moment().await;
    app.post(&path, &owner, json!({"type": "note", "string": "later"}))
        .await;
    let before = rows(&app, &book).await;
    let (status, body) = restore_at(&app, &viewer_token, &book, at).await;
    assert_eq!((status, body["error"].as_str()), (403, Some("forbidden")), "{body}");
    assert_eq!(rows(&app, &book).await, before);
}
