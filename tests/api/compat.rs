//! The CONTRACT's "Compatibility with the original's clients": requests as
//! the original Entu web app makes them, one test per rule.

use crate::support;

use serde_json::json;
use support::TestApp;

#[tokio::test]
async fn dates_written_as_milliseconds() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    app.define(&owner, &book, "published", "date", json!([])).await;
    app.define(&owner, &book, "at", "datetime", json!([])).await;
    // a date picker's local midnight of 1965-08-02 at UTC+2 and at UTC-7
    let id = app
        .create(
            &owner,
            &book,
            json!([{"type": "published", "date": -139370400000_i64}, {"type": "published", "date": -139338000000_i64},
                   {"type": "at", "datetime": 1704164645000_i64}]),
        )
        .await;
    let (_, body) = app.get(&format!("/api/demo/entity/{id}"), &owner).await;
    let entity = &body["entity"];
    for value in entity["published"].as_array().unwrap() {
        assert_eq!(value["date"], "1965-08-02T00:00:00.000Z", "{entity}");
    }
    assert_eq!(entity["at"][0]["datetime"], "2024-01-02T03:04:05.000Z");
    for bad in [json!(1.5), json!(1e300), json!(i64::MAX)] {
        let (status, error) = app
            .post(
                &format!("/api/demo/entity/{id}"),
                &owner,
                json!({"type": "published", "date": bad}),
            )
            .await;
        assert_eq!(status, 400, "{bad}: {error}");
        assert_eq!(error["status"], 400);
        assert!(error["error"].is_string() && error["message"].is_string(), "{error}");
    }
}

#[tokio::test]
async fn trailing_slash() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (status, usage) = app.get("/api/demo/", &owner).await;
    assert_eq!(status, 200, "{usage}");
    assert_eq!(usage, app.get("/api/demo", &owner).await.1);
    let (status, list) = app
        .get("/api/demo/entity/?_type.string=entity&props=name", &owner)
        .await;
    assert_eq!(status, 200, "{list}");
    assert!(list["count"].as_u64().unwrap() > 0, "{list}");
    let (status, one) = app.get(&format!("/api/demo/entity/{}/", app.person), &owner).await;
    assert_eq!(status, 200, "{one}");
    assert_eq!(one["entity"]["_id"], app.person.as_str());
    let (status, root) = app.call("GET", "/", None, None).await;
    assert_eq!(status, 200, "{root}");
}

#[tokio::test]
async fn props_naming_a_field() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let shelf = app.create_type(&owner, "shelf").await;
    app.create(
        &owner,
        &shelf,
        json!([{"type": "name", "string": "Books"}, {"type": "ordinal", "number": 2}, {"type": "query", "string": "_type.string=book"}, {"type": "note", "string": "not asked"}]),
    )
    .await;
    let (status, list) = app
        .get(
            "/api/demo/entity?_type.string=shelf&props=ordinal.number,name,query.string,_type.string",
            &owner,
        )
        .await;
    assert_eq!(status, 200, "{list}");
    let entity = &list["entities"][0];
    assert_eq!(entity["query"][0]["string"], "_type.string=book", "{entity}");
    assert_eq!(entity["ordinal"][0]["number"], json!(2), "{entity}");
    assert_eq!(entity["name"][0]["string"], "Books", "{entity}");
    assert_eq!(entity["_type"][0]["string"], "shelf", "{entity}");
    assert!(entity.get("note").is_none(), "{entity}");
}

#[tokio::test]
async fn id_exists() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let shelf = app.create_type(&owner, "shelf").await;
    let public = json!({"type": "_sharing", "string": "public"});
    app.post(&format!("/api/demo/entity/{shelf}"), &owner, public.clone())
        .await;
    app.define(&owner, &shelf, "table", "string", json!([public.clone()]))
        .await;
    app.define(&owner, &shelf, "secret", "string", json!([])).await;
    let with = app
        .create(
            &owner,
            &shelf,
            json!([{"type": "table", "string": "t"}, {"type": "secret", "string": "s"}, public]),
        )
        .await;
    let without = app.create(&owner, &shelf, json!([public])).await;
    let (mut both, has) = (vec![with.clone(), without.clone()], vec![with.clone()]);
    both.sort();
    let owner = Some(owner.as_str());
    assert_eq!(shelves(&app, "table._id.exists=true", owner).await, has);
    assert_eq!(shelves(&app, "table._id.exists=false", owner).await, [without]);
    assert_eq!(shelves(&app, "secret._id.exists=true", owner).await, has);
    // only values the caller's view shows count
    assert_eq!(shelves(&app, "table._id.exists=true", None).await, has);
    assert!(shelves(&app, "secret._id.exists=true", None).await.is_empty());
    assert_eq!(shelves(&app, "secret._id.exists=false", None).await, both);
}

/// The ids of the shelves matching `filter`, sorted.
async fn shelves(app: &TestApp, filter: &str, token: Option<&str>) -> Vec<String> {
    let path = format!("/api/demo/entity?_type.string=shelf&{filter}&props=_id");
    let (status, list) = app.call("GET", &path, token, None).await;
    assert_eq!(status, 200, "{list}");
    let mut ids: Vec<String> = list["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entity| entity["_id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn every_401_carries_www_authenticate() {
    use reqwest::Method;
    let app = TestApp::start().await;
    assert_eq!(challenge(&app, Method::POST, "/api/demo/entity", None).await, "Bearer");
    assert_eq!(challenge(&app, Method::GET, "/api/auth/refresh", None).await, "Bearer");
    let invalid = r#"Bearer error="invalid_token""#;
    let sent = Some("not-a-jwt");
    assert_eq!(challenge(&app, Method::GET, "/api/demo/entity", sent).await, invalid);
    assert_eq!(challenge(&app, Method::GET, "/api/auth", sent).await, invalid);
    // the MCP route's own challenge names its metadata
    let mcp = challenge(&app, Method::POST, "/api/demo/mcp", sent).await;
    assert!(mcp.starts_with("Bearer resource_metadata="), "{mcp}");
    assert!(mcp.ends_with(r#", error="invalid_token""#), "{mcp}");
}

/// The `WWW-Authenticate` of a request answered 401 with the JSON error body.
async fn challenge(app: &TestApp, method: reqwest::Method, path: &str, token: Option<&str>) -> String {
    let body = match path.ends_with("/mcp") {
        true => json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
        false => json!([{"type": "name", "string": "x"}]),
    };
    let mut request = app.http.request(method, format!("{}{path}", app.url)).json(&body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 401, "{path}");
    let header = response
        .headers()
        .get("www-authenticate")
        .map(|value| value.to_str().unwrap().to_owned());
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["status"], 401, "{body}");
    header.unwrap_or_else(|| panic!("no WWW-Authenticate on {path}"))
}

#[tokio::test]
async fn new_databases_are_seeded_with_the_side_menu_types_and_an_entry_for_persons() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    // the side menu, asked for as the app asks
    let (status, menu) = app
        .get(
            "/api/demo/entity?_type.string=menu&props=ordinal.number,group,name,query.string",
            &owner,
        )
        .await;
    assert_eq!(status, 200, "{menu}");
    let entries = menu["entities"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{menu}");
    assert_eq!(entries[0]["query"][0]["string"], "_type.string=person");
    assert_eq!(entries[0]["name"][0]["string"], "Persons");
    assert!(entries[0]["group"][0]["string"].is_string(), "{menu}");
    assert!(entries[0]["ordinal"][0]["number"].is_number(), "{menu}");
    assert_eq!(
        seeded_definitions(&app, &owner, "menu").await,
        ["group", "name", "ordinal", "query"]
    );
    assert_eq!(
        seeded_definitions(&app, &owner, "plugin").await,
        ["name", "type", "url"]
    );
    // the entry is shared with the database's persons (`_sharing: domain`)
    let (_, entry) = app
        .get(
            &format!("/api/demo/entity/{}", entries[0]["_id"].as_str().unwrap()),
            &owner,
        )
        .await;
    assert_eq!(entry["entity"]["_sharing"][0]["string"], "domain", "{entry}");
}

#[tokio::test]
async fn a_migration_gives_existing_databases_the_seeded_types_they_lack() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    // a database as made before the menu types were seeded: without them,
    // their definitions and the menu entry
    let mut conn = app.pool.get().await.unwrap();
    for statement in [
        "CREATE TEMP TABLE retired AS SELECT id FROM entities WHERE db = 'demo' AND (
             name IN ('menu', 'plugin') AND type_id IN (SELECT id FROM entities WHERE db = 'demo' AND name = 'entity')
             OR type_id IN (SELECT id FROM entities WHERE db = 'demo' AND name = 'menu')
             OR parent_ids && ARRAY(SELECT id FROM entities WHERE db = 'demo' AND name IN ('menu', 'plugin')))",
        "UPDATE property_values SET deleted_at = now() WHERE db = 'demo' AND entity_id IN (SELECT id FROM retired)",
        "UPDATE entities SET deleted_at = now() WHERE db = 'demo' AND id IN (SELECT id FROM retired)",
        // as any write outside the writer: cached answers are of an older generation
        "UPDATE databases SET generation = generation + 1 WHERE name = 'demo'",
    ] {
        diesel_async::RunQueryDsl::execute(diesel::sql_query(statement), &mut conn)
            .await
            .unwrap();
    }
    drop(conn);
    assert!(seeded_definitions(&app, &owner, "menu").await.is_empty());

    assert_eq!(eds::db::add_missing_types(&app.pool).await.unwrap(), 1);
    assert_eq!(
        seeded_definitions(&app, &owner, "menu").await,
        ["group", "name", "ordinal", "query"]
    );
    assert_eq!(
        seeded_definitions(&app, &owner, "plugin").await,
        ["name", "type", "url"]
    );
    assert_eq!(
        eds::db::add_missing_types(&app.pool).await.unwrap(),
        0,
        "a second run adds nothing"
    );
    // the new type is usable at once, by the writer's cache too
    let (_, types) = app
        .get(
            "/api/demo/entity?_type.string=entity&name.string=menu&props=name",
            &owner,
        )
        .await;
    let menu = types["entities"][0]["_id"].as_str().unwrap().to_owned();
    app.create(
        &owner,
        &menu,
        json!([{"type": "name", "string": "Books"}, {"type": "query", "string": "_type.string=book"}]),
    )
    .await;
}

/// The names of the live definitions of seeded type `type_name`, sorted.
async fn seeded_definitions(app: &TestApp, token: &str, type_name: &str) -> Vec<String> {
    let (_, types) = app
        .get(
            &format!("/api/demo/entity?_type.string=entity&name.string={type_name}&props=name"),
            token,
        )
        .await;
    let Some(type_id) = types["entities"][0]["_id"].as_str() else {
        return Vec::new();
    };
    let (_, definitions) = app
        .get(
            &format!("/api/demo/entity?_type.string=property&_parent.reference={type_id}&props=name"),
            token,
        )
        .await;
    let mut names: Vec<String> = definitions["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|definition| definition["name"][0]["string"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}
