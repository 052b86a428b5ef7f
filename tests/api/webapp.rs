//! The original Entu web app's calls, replayed as the app makes them: its
//! paths, its `props` lists joined with commas, `Accept: application/json`,
//! JSON bodies on DELETE too. Each test is named after what the app does
//! and checks every field the app's code reads from the answer.

use crate::support;

use serde_json::{Value as Json, json};
use support::TestApp;

/// One call as the app's request helper sends it.
async fn app_call(app: &TestApp, method: &str, path: &str, token: Option<&str>, body: Option<Json>) -> (u16, Json) {
    let http = reqwest::Client::new();
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = http
        .request(method.clone(), format!("{}{path}", app.url))
        .header("Accept", "application/json");
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    // the app's fetch sends its (empty) parameters as a JSON body on DELETE
    match (body, method == reqwest::Method::DELETE) {
        (Some(body), _) => request = request.json(&body),
        (None, true) => request = request.json(&json!({})),
        (None, false) => {}
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Json::Null))
}

async fn app_get(app: &TestApp, path: &str, token: &str) -> (u16, Json) {
    app_call(app, "GET", path, Some(token), None).await
}

/// The first value's `field` of property `prop`, as the app's `getValue` reads it.
fn value<'a>(entity: &'a Json, prop: &str, field: &str) -> &'a Json {
    &entity[prop][0][field]
}

/// A `book` type with a few definitions and two books, one the other's child.
struct Library {
    owner: String,
    book: String,
    parent: String,
    child: String,
}

async fn library(app: &TestApp) -> Library {
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    app.define(
        &owner,
        &book,
        "name",
        "string",
        json!([{"type": "ordinal", "number": 1}, {"type": "search", "boolean": true}]),
    )
    .await;
    app.define(
        &owner,
        &book,
        "published",
        "date",
        json!([{"type": "table", "boolean": true}]),
    )
    .await;
    let parent = app
        .create(&owner, &book, json!([{"type": "name", "string": "Shelf"}]))
        .await;
    let child = app
        .create(
            &owner,
            &book,
            json!([{"type": "name", "string": "Tales"}, {"type": "_parent", "reference": parent}]),
        )
        .await;
    Library {
        owner,
        book,
        parent,
        child,
    }
}

#[tokio::test]
async fn sign_in_callback() {
    let app = TestApp::start().await;
    let (status, answer) = app_call(&app, "GET", "/api/auth?db=demo", Some(&app.key), None).await;
    assert_eq!(status, 200, "{answer}");
    let account = &answer["accounts"][0];
    assert_eq!(account["_id"], "demo", "{answer}");
    assert!(account["name"].is_string(), "{answer}");
    assert_eq!(account["user"]["_id"], app.person.as_str(), "{answer}");
    assert!(answer["token"].is_string() && answer["expires"].is_string(), "{answer}");
    assert!(answer["user"].is_object(), "{answer}");
}

#[tokio::test]
async fn token_refresh() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let (status, answer) = app_call(&app, "GET", "/api/auth/refresh", Some(&token), None).await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer["token"].is_string(), "{answer}");
    let expires = answer["expires"].as_str().unwrap();
    assert!(chrono::DateTime::parse_from_rfc3339(expires).is_ok(), "{answer}");
}

#[tokio::test]
async fn database_page_stats() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    // the app's base URL ends with its account: `{api}/demo/`
    let (status, stats) = app_get(&app, "/api/demo/", &token).await;
    assert_eq!(status, 200, "{stats}");
    for counted in ["entities", "properties", "files"] {
        assert!(stats[counted]["usage"].is_number(), "{counted}: {stats}");
        assert!(stats[counted]["deleted"].is_number(), "{counted}: {stats}");
    }
    assert!(stats["entities"]["usage"].as_u64().unwrap() > 0, "{stats}");
}

#[tokio::test]
async fn side_menu() {
    let app = TestApp::start().await;
    let Library { owner, book, .. } = library(&app).await;
    let person = app.find(&owner, "entity", "person").await;
    // `book` is offered under the person's menu entry ("add from")
    app.post(
        &format!("/api/demo/entity/{book}"),
        &owner,
        json!([{"type": "add_from", "reference": person}]),
    )
    .await;
    let (status, menu) = app_get(
        &app,
        "/api/demo/entity?_type.string=menu&props=ordinal.number,group,name,query.string",
        &owner,
    )
    .await;
    assert_eq!(status, 200, "{menu}");
    let entry = &menu["entities"][0];
    assert!(entry["_id"].is_string(), "{menu}");
    assert!(value(entry, "group", "string").is_string(), "{menu}");
    assert!(value(entry, "name", "string").is_string(), "{menu}");
    assert!(value(entry, "ordinal", "number").is_number(), "{menu}");
    assert_eq!(value(entry, "query", "string"), "_type.string=person");

    let (status, add_from) = app_get(
        &app,
        "/api/demo/entity?_type.string=entity&add_from._id.exists=true&props=name,label,add_from.reference",
        &owner,
    )
    .await;
    assert_eq!(status, 200, "{add_from}");
    let offered = add_from["entities"].as_array().unwrap();
    assert_eq!(offered.len(), 1, "{add_from}");
    assert_eq!(offered[0]["_id"], book.as_str());
    assert_eq!(value(&offered[0], "name", "string"), "book");
    assert_eq!(value(&offered[0], "add_from", "reference"), person.as_str());
}

#[tokio::test]
async fn entity_type_definitions() {
    let app = TestApp::start().await;
    let Library { owner, book, .. } = library(&app).await;
    let (status, plugins) = app_get(
        &app,
        "/api/demo/entity?_type.string=plugin&props=name,type,url,new_window",
        &owner,
    )
    .await;
    assert_eq!(status, 200, "{plugins}");
    assert!(plugins["entities"].is_array(), "{plugins}");
    let (status, entity_type) = app_get(
        &app,
        &format!("/api/demo/entity/{book}?props=description,label,name,plugin"),
        &owner,
    )
    .await;
    assert_eq!(status, 200, "{entity_type}");
    assert_eq!(entity_type["entity"]["_id"], book.as_str());
    assert_eq!(value(&entity_type["entity"], "name", "string"), "book");
    let props = "decimals,default,description,formula,group,hidden,label_plural,label,list,mandatory,markdown,\
                 multilingual,name,ordinal,plugin,readonly,reference_query,set,_sharing,type";
    let (status, definitions) = app_get(
        &app,
        &format!("/api/demo/entity?_parent.reference={book}&props={props}"),
        &owner,
    )
    .await;
    assert_eq!(status, 200, "{definitions}");
    let mut names: Vec<&str> = definitions["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|definition| value(definition, "name", "string").as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["name", "published"], "{definitions}");
    let published = definitions["entities"]
        .as_array()
        .unwrap()
        .iter()
        .find(|definition| value(definition, "name", "string") == "published")
        .unwrap();
    assert_eq!(value(published, "type", "string"), "date");
}

#[tokio::test]
async fn entity_page() {
    let app = TestApp::start().await;
    let Library { owner, child, book, .. } = library(&app).await;
    let (status, page) = app_get(&app, &format!("/api/demo/entity/{child}"), &owner).await;
    assert_eq!(status, 200, "{page}");
    let entity = &page["entity"];
    assert_eq!(entity["_id"], child.as_str());
    assert_eq!(value(entity, "_type", "reference"), book.as_str());
    assert_eq!(value(entity, "_type", "string"), "book");
    assert_eq!(value(entity, "name", "string"), "Tales");
    assert!(
        value(entity, "_parent", "string").is_string(),
        "the parent's name: {entity}"
    );
    assert!(value(entity, "_owner", "reference").is_string(), "{entity}");
}

#[tokio::test]
async fn entity_page_children_by_type() {
    let app = TestApp::start().await;
    let Library {
        owner, parent, book, ..
    } = library(&app).await;
    let (status, children) = app_get(
        &app,
        &format!("/api/demo/entity?_parent.reference={parent}&group=_type.reference&props=_type"),
        &owner,
    )
    .await;
    assert_eq!(status, 200, "{children}");
    let groups = children["entities"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{children}");
    assert_eq!(value(&groups[0], "_type", "reference"), book.as_str());
    assert_eq!(groups[0]["_count"], 1, "{children}");
    // each group's type, as the page then asks for it
    let (status, child_type) = app_get(
        &app,
        &format!("/api/demo/entity/{book}?props=label_plural,label,name"),
        &owner,
    )
    .await;
    assert_eq!(status, 200, "{child_type}");
    assert_eq!(value(&child_type["entity"], "name", "string"), "book");
}

#[tokio::test]
async fn list_of_a_type() {
    let app = TestApp::start().await;
    let Library { owner, .. } = library(&app).await;
    let (status, list) = app_get(
        &app,
        "/api/demo/entity?_type.string=book&sort=-_created.datetime&limit=50&skip=0&props=_type.string,name,published",
        &owner,
    )
    .await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["count"], 2, "{list}");
    let names: Vec<&Json> = list["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entity| value(entity, "name", "string"))
        .collect();
    assert_eq!(names, [&json!("Tales"), &json!("Shelf")], "newest first: {list}");
}

#[tokio::test]
async fn table_columns() {
    let app = TestApp::start().await;
    let Library { owner, book, .. } = library(&app).await;
    let (status, columns) = app_get(
        &app,
        &format!(
            "/api/demo/entity?_parent.reference={book}&table._id.exists=true&props=name,label,type,decimals&sort=ordinal.number"
        ),
        &owner,
    )
    .await;
    assert_eq!(status, 200, "{columns}");
    let shown = columns["entities"].as_array().unwrap();
    assert_eq!(shown.len(), 1, "{columns}");
    assert_eq!(value(&shown[0], "name", "string"), "published");
    assert_eq!(value(&shown[0], "type", "string"), "date");
    // a type without table columns: the app falls back to its `name`
    let (status, fallback) = app_get(
        &app,
        &format!("/api/demo/entity?_parent.reference={book}&name.string=name&props=name,label,type,decimals"),
        &owner,
    )
    .await;
    assert_eq!(status, 200, "{fallback}");
    assert_eq!(value(&fallback["entities"][0], "type", "string"), "string");
}

#[tokio::test]
async fn date_edit() {
    let app = TestApp::start().await;
    let Library { owner, child, .. } = library(&app).await;
    // the date picker's local midnight of 2 August 1965 in Tallinn (UTC+2)
    let (status, written) = app_call(
        &app,
        "POST",
        &format!("/api/demo/entity/{child}"),
        Some(&owner),
        Some(json!([{"type": "published", "date": -139370400000_i64}])),
    )
    .await;
    assert_eq!(status, 200, "{written}");
    let property = written["properties"]
        .as_array()
        .unwrap()
        .iter()
        .find(|property| property["type"] == "published")
        .unwrap();
    let value_id = property["_id"].as_str().unwrap().to_owned();
    let (_, page) = app_get(&app, &format!("/api/demo/entity/{child}"), &owner).await;
    assert_eq!(value(&page["entity"], "published", "date"), "1965-08-02T00:00:00.000Z");
    // editing it again replaces the value by its `_id`
    let (status, edited) = app_call(
        &app,
        "POST",
        &format!("/api/demo/entity/{child}"),
        Some(&owner),
        Some(json!([{"type": "published", "date": -139284000000_i64, "_id": value_id}])),
    )
    .await;
    assert_eq!(status, 200, "{edited}");
    assert!(edited["properties"][0]["_id"].is_string(), "{edited}");
    let (_, page) = app_get(&app, &format!("/api/demo/entity/{child}"), &owner).await;
    let dates = page["entity"]["published"].as_array().unwrap();
    assert_eq!(dates.len(), 1, "{page}");
    assert_eq!(dates[0]["date"], "1965-08-03T00:00:00.000Z");
}

#[tokio::test]
async fn new_entity_from_the_add_menu() {
    let app = TestApp::start().await;
    let Library {
        owner, book, parent, ..
    } = library(&app).await;
    let (status, created) = app_call(
        &app,
        "POST",
        "/api/demo/entity",
        Some(&owner),
        Some(json!([
            {"type": "name", "string": "Poems"},
            {"type": "_parent", "reference": parent},
            {"type": "_type", "reference": book}
        ])),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert!(created["_id"].is_string(), "{created}");
}

#[tokio::test]
async fn history_drawer() {
    let app = TestApp::start().await;
    let Library { owner, child, .. } = library(&app).await;
    let (status, history) = app_get(&app, &format!("/api/demo/entity/{child}/history?limit=20"), &owner).await;
    assert_eq!(status, 200, "{history}");
    assert!(history["count"].as_u64().unwrap() > 0, "{history}");
    let change = &history["changes"][0];
    assert!(change["type"].is_string() && change["at"].is_string(), "{history}");
    // the drawer names each author
    let author = change["by"].as_str().unwrap();
    let (status, person) = app_get(&app, &format!("/api/demo/entity/{author}?props=name"), &owner).await;
    assert_eq!(status, 200, "{person}");
    assert!(value(&person["entity"], "name", "string").is_string(), "{person}");
}

#[tokio::test]
async fn rights_drawer() {
    let app = TestApp::start().await;
    let Library { owner, child, .. } = library(&app).await;
    let (reader, _) = app.add_person(&owner, "Reader").await;
    let (status, rights) = app_get(
        &app,
        &format!("/api/demo/entity/{child}?props=_owner,_editor,_expander,_viewer,_sharing,_inheritrights,_noaccess"),
        &owner,
    )
    .await;
    assert_eq!(status, 200, "{rights}");
    assert!(
        value(&rights["entity"], "_owner", "string").is_string(),
        "the owner's name: {rights}"
    );
    let (status, given) = app_call(
        &app,
        "POST",
        &format!("/api/demo/entity/{child}"),
        Some(&owner),
        Some(json!([{"type": "_viewer", "reference": reader}])),
    )
    .await;
    assert_eq!(status, 200, "{given}");
    let right = given["properties"][0]["_id"].as_str().unwrap();
    let (status, removed) = app_call(
        &app,
        "DELETE",
        &format!("/api/demo/property/{right}"),
        Some(&owner),
        None,
    )
    .await;
    assert_eq!(status, 200, "{removed}");
    assert_eq!(removed["deleted"], true, "{removed}");
}

#[tokio::test]
async fn reference_select() {
    let app = TestApp::start().await;
    let Library { owner, .. } = library(&app).await;
    let (status, found) = app_get(
        &app,
        "/api/demo/entity?q=Tal&props=_type.string,name&sort=name.string&limit=10&_type.string=book",
        &owner,
    )
    .await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(found["count"], 1, "{found}");
    assert_eq!(value(&found["entities"][0], "name", "string"), "Tales");
    assert_eq!(value(&found["entities"][0], "_type", "string"), "book");
}

#[tokio::test]
async fn search_form_properties() {
    let app = TestApp::start().await;
    let Library { owner, .. } = library(&app).await;
    let (status, properties) = app_get(
        &app,
        "/api/demo/entity?_type.string=property&_parent.string.in=book,person&props=_parent,name,label,type&limit=1000",
        &owner,
    )
    .await;
    assert_eq!(status, 200, "{properties}");
    let parents: Vec<&str> = properties["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|definition| value(definition, "_parent", "string").as_str().unwrap())
        .collect();
    assert!(
        parents.iter().all(|parent| ["book", "person"].contains(parent)),
        "{properties}"
    );
    assert!(parents.contains(&"book") && parents.contains(&"person"), "{properties}");
}

#[tokio::test]
async fn delete_entity() {
    let app = TestApp::start().await;
    let Library { owner, child, .. } = library(&app).await;
    let (status, deleted) = app_call(&app, "DELETE", &format!("/api/demo/entity/{child}"), Some(&owner), None).await;
    assert_eq!(status, 200, "{deleted}");
    assert_eq!(deleted["deleted"], true, "{deleted}");
}

#[tokio::test]
async fn duplicate_drawer() {
    let app = TestApp::start().await;
    let Library {
        owner, child, parent, ..
    } = library(&app).await;
    let (status, copies) = app_call(
        &app,
        "POST",
        &format!("/api/demo/entity/{child}/duplicate"),
        Some(&owner),
        Some(json!({"count": 2, "ignoredProperties": ["published"]})),
    )
    .await;
    assert_eq!(status, 200, "{copies}");
    assert_eq!(copies.as_array().unwrap().len(), 2, "{copies}");
    // the copies are the parent's children beside the original
    let (_, children) = app_get(
        &app,
        &format!("/api/demo/entity?_parent.reference={parent}&group=_type.reference&props=_type"),
        &owner,
    )
    .await;
    assert_eq!(children["entities"][0]["_count"], 3, "{children}");
}

#[tokio::test]
async fn entity_page_referrers_by_type() {
    let app = TestApp::start().await;
    let Library {
        owner,
        book,
        parent,
        child,
        ..
    } = library(&app).await;
    app.define(&owner, &book, "sequel_of", "reference", json!([])).await;
    app.post(
        &format!("/api/demo/entity/{child}"),
        &owner,
        json!([{"type": "sequel_of", "reference": parent}]),
    )
    .await;
    let (status, referrers) = app_get(
        &app,
        &format!(
            "/api/demo/entity?_reference.reference={parent}&_reference.property_type.ne=_parent&group=_type.reference&props=_type"
        ),
        &owner,
    )
    .await;
    assert_eq!(status, 200, "{referrers}");
    let groups = referrers["entities"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{referrers}");
    assert_eq!(value(&groups[0], "_type", "reference"), book.as_str());
    assert_eq!(
        groups[0]["_count"], 1,
        "the child refers through `sequel_of`, not only `_parent`: {referrers}"
    );
}
