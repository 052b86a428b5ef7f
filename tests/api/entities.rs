//! The entity and property API against real PostgreSQL: one test per rule.

use crate::support;

use serde_json::{Value as Json, json};
use support::TestApp;

fn id_of(body: &Json) -> String {
    body["_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no _id in {body}"))
        .to_owned()
}

async fn live_rows(app: &TestApp, entity: &str) -> i64 {
    use diesel::prelude::*;
    use diesel_async::RunQueryDsl;
    use eds::db::schema::property_values::dsl;
    let mut conn = app.pool.get().await.unwrap();
    dsl::property_values
        .filter(dsl::entity_id.eq(entity))
        .filter(dsl::deleted_at.is_null())
        .count()
        .get_result(&mut conn)
        .await
        .unwrap()
}

#[tokio::test]
async fn root_names_the_service_and_health_answers() {
    let app = TestApp::start().await;
    let (status, body) = app.call("GET", "/", None, None).await;
    assert_eq!((status, body["name"].as_str()), (200, Some("eds")));
    assert!(body["version"].is_string());
    let (status, body) = app.call("GET", "/health", None, None).await;
    assert_eq!((status, body["status"].as_str()), (200, Some("ok")));
    let (status, body) = app.call("GET", "/ready", None, None).await;
    assert_eq!((status, body), (200, json!({"database": true, "storage": true})));
}

#[tokio::test]
async fn api_key_login_returns_accounts_user_token_and_expires() {
    let app = TestApp::start().await;
    for query in ["?db=demo", "?account=demo", ""] {
        let (status, body) = app
            .call("GET", &format!("/api/auth{query}"), Some(&app.key), None)
            .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["accounts"][0]["_id"], "demo");
        assert_eq!(body["accounts"][0]["name"], "demo");
        assert_eq!(body["accounts"][0]["user"]["_id"], app.person.as_str());
        assert_eq!(body["user"]["name"], "Demo Owner");
        let expires = chrono::DateTime::parse_from_rfc3339(body["expires"].as_str().unwrap()).unwrap();
        let hours = (expires.timestamp() - chrono::Utc::now().timestamp()) as f64 / 3600.0;
        assert!((11.9..=12.0).contains(&hours), "{hours}");
        // The token is an access token the API accepts.
        let token = body["token"].as_str().unwrap();
        let (status, _) = app.get("/api/demo/entity", token).await;
        assert_eq!(status, 200);
    }
}

#[tokio::test]
async fn wrong_key_or_database_is_401_with_json_error() {
    let app = TestApp::start().await;
    let wrong = "A".repeat(32);
    for (key, query) in [(wrong.as_str(), ""), ("short", ""), (app.key.as_str(), "?db=other")] {
        let (status, body) = app.call("GET", &format!("/api/auth{query}"), Some(key), None).await;
        assert_eq!(status, 401, "{body}");
        assert_eq!(body["status"], 401);
        assert!(body["error"].is_string() && body["message"].is_string());
    }
    let (status, _) = app.call("GET", "/api/auth", None, None).await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn unacceptable_token_is_401_even_on_reads() {
    let app = TestApp::start().await;
    let (status, body) = app.get("/api/demo/entity", "not-a-jwt").await;
    assert_eq!((status, body["message"].as_str()), (401, Some("Invalid token")));
}

#[tokio::test]
async fn seeded_types_and_definitions_are_readable_by_every_person() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (_, other_key) = app.add_person(&owner, "Other").await;
    let other = app.token_for(&other_key).await;
    let (status, body) = app
        .get("/api/demo/entity?_type.string=entity&name.string=person", &other)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["count"], 1);
    let person_type = &body["entities"][0];
    assert_eq!(person_type["name"][0]["string"], "person");
    assert_eq!(person_type["_type"][0]["string"], "entity");
    // every seeded type, and the definitions of person
    for name in ["database", "entity", "property", "person"] {
        app.find(&other, "entity", name).await;
    }
    let person_type_id = person_type["_id"].as_str().unwrap();
    let (_, definitions) = app
        .get(
            &format!("/api/demo/entity?_type.string=property&_parent.reference={person_type_id}"),
            &other,
        )
        .await;
    let mut names: Vec<&str> = definitions["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"][0]["string"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["email", "name"]);
    // the property type defines the attributes of definitions
    let property_type = app.find(&other, "entity", "property").await;
    let (_, attributes) = app
        .get(
            &format!("/api/demo/entity?_parent.reference={property_type}&limit=50"),
            &other,
        )
        .await;
    for attribute in [
        "name",
        "label",
        "type",
        "list",
        "multilingual",
        "search",
        "formula",
        "reference_query",
        "mandatory",
        "default",
    ] {
        assert!(
            attributes["entities"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| d["name"][0]["string"] == attribute),
            "{attribute}"
        );
    }
    // the database entity and the owner person
    let (_, database) = app.get("/api/demo/entity?_type.string=database", &owner).await;
    assert_eq!(database["entities"][0]["name"][0]["string"], "demo");
    let (_, me) = app.get(&format!("/api/demo/entity/{}", app.person), &owner).await;
    assert_eq!(me["entity"]["email"][0]["string"], "owner@example.com");
    assert_eq!(me["entity"]["service_api_key"][0]["string"], "***");
}

#[tokio::test]
async fn organization_of_the_database_type_is_multilingual() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (_, database) = app.get("/api/demo/entity?_type.string=database", &owner).await;
    let database = database["entities"][0]["_id"].as_str().unwrap().to_owned();
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{database}"),
            &owner,
            json!([{"type": "organization", "string": "Näide", "language": "et"}, {"type": "organization", "string": "Example", "language": "en"}]),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["properties"][0]["language"], "et");
}

#[tokio::test]
async fn creation_without_type_is_400() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (status, body) = app
        .post("/api/demo/entity", &owner, json!([{"type": "name", "string": "x"}]))
        .await;
    assert_eq!((status, body["error"].as_str()), (400, Some("type_required")));
}

#[tokio::test]
async fn type_must_reference_an_entity_type() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (status, _) = app
        .post(
            "/api/demo/entity",
            &owner,
            json!([{"type": "_type", "reference": app.person}]),
        )
        .await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn created_entity_reads_back_with_created_owner_and_reference_names() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    let (status, body) = app
        .post(
            "/api/demo/entity",
            &owner,
            json!([{"type": "_type", "reference": book}, {"type": "title", "string": "Dune"}, {"type": "author", "reference": app.person}]),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let id = id_of(&body);
    assert_eq!(id.len(), 24);
    let properties = body["properties"].as_array().unwrap();
    assert_eq!(properties.len(), 3);
    assert_eq!(properties[1]["type"], "title");
    assert_eq!(properties[1]["string"], "Dune");
    assert_eq!(properties[1]["_id"].as_str().unwrap().len(), 24);

    let (status, body) = app.get(&format!("/api/demo/entity/{id}"), &owner).await;
    assert_eq!(status, 200);
    let entity = &body["entity"];
    assert_eq!(entity["_id"], id.as_str());
    assert_eq!(entity["title"][0]["string"], "Dune");
    assert!(entity["title"][0].get("type").is_none());
    let author = &entity["author"][0];
    assert_eq!(author["reference"], app.person.as_str());
    assert_eq!(author["string"], "Demo Owner");
    assert_eq!(author["entity_type"], "person");
    assert_eq!(author["property_type"], "author");
    assert_eq!(entity["_type"][0]["string"], "book");
    assert_eq!(entity["_owner"][0]["reference"], app.person.as_str());
    let created = &entity["_created"][0];
    assert_eq!(created["reference"], app.person.as_str());
    assert!(chrono::DateTime::parse_from_rfc3339(created["datetime"].as_str().unwrap()).is_ok());
}

#[tokio::test]
async fn dates_go_in_as_days_and_come_out_as_midnight_utc() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let kind = app.create_type(&owner, "event").await;
    let id = app
        .create(
            &owner,
            &kind,
            json!([{"type": "day", "date": "2024-02-29"}, {"type": "at", "datetime": "2024-02-29T12:30:00+02:00"}, {"type": "n", "number": 5}, {"type": "x", "number": 2.5}, {"type": "ok", "boolean": false}]),
        )
        .await;
    let (_, body) = app.get(&format!("/api/demo/entity/{id}"), &owner).await;
    let entity = &body["entity"];
    assert_eq!(entity["day"][0]["date"], "2024-02-29T00:00:00.000Z");
    assert_eq!(entity["at"][0]["datetime"], "2024-02-29T10:30:00.000Z");
    assert_eq!(entity["n"][0]["number"], json!(5));
    assert_eq!(entity["x"][0]["number"], json!(2.5));
    assert_eq!(entity["ok"][0]["boolean"], false);
    let (status, _) = app
        .post(
            &format!("/api/demo/entity/{id}"),
            &owner,
            json!({"type": "day", "date": "29.02.2024"}),
        )
        .await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn value_of_another_type_than_the_definition_is_400_and_nothing_is_written() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    app.define(&owner, &book, "price", "number", json!([])).await;
    let id = app
        .create(&owner, &book, json!([{"type": "price", "number": 10}]))
        .await;
    let before = live_rows(&app, &id).await;
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{id}"),
            &owner,
            json!([{"type": "note", "string": "fine"}, {"type": "price", "string": "ten"}]),
        )
        .await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_value")));
    assert_eq!(live_rows(&app, &id).await, before);
    let (_, entity) = app.get(&format!("/api/demo/entity/{id}"), &owner).await;
    assert!(entity["entity"].get("note").is_none());
}

#[tokio::test]
async fn property_without_definition_is_typed_by_its_field() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    let id = app
        .create(&owner, &book, json!([{"type": "anything", "number": 3}]))
        .await;
    let (status, _) = app
        .post(
            &format!("/api/demo/entity/{id}"),
            &owner,
            json!({"type": "anything", "string": "three"}),
        )
        .await;
    assert_eq!(status, 200);
    let (_, entity) = app.get(&format!("/api/demo/entity/{id}"), &owner).await;
    assert_eq!(entity["entity"]["anything"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn language_must_be_two_lowercase_letters_on_a_multilingual_property() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    app.define(
        &owner,
        &book,
        "title",
        "string",
        json!([{"type": "multilingual", "boolean": true}]),
    )
    .await;
    app.define(&owner, &book, "isbn", "string", json!([])).await;
    let id = app
        .create(
            &owner,
            &book,
            json!([{"type": "title", "string": "Düün", "language": "et"}]),
        )
        .await;
    for bad in ["EN", "eng", "e", "1a"] {
        let (status, body) = app
            .post(
                &format!("/api/demo/entity/{id}"),
                &owner,
                json!({"type": "title", "string": "x", "language": bad}),
            )
            .await;
        assert_eq!(
            (status, body["error"].as_str()),
            (400, Some("invalid_language")),
            "{bad}"
        );
    }
    let (status, _) = app
        .post(
            &format!("/api/demo/entity/{id}"),
            &owner,
            json!({"type": "isbn", "string": "1", "language": "en"}),
        )
        .await;
    assert_eq!(status, 400, "language on a property that is not multilingual");
    let (_, entity) = app.get(&format!("/api/demo/entity/{id}"), &owner).await;
    assert_eq!(entity["entity"]["title"][0]["language"], "et");
}

#[tokio::test]
async fn overwrite_by_id_soft_deletes_the_old_value_and_gives_a_new_id() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    let id = app
        .create(&owner, &book, json!([{"type": "title", "string": "Old"}]))
        .await;
    let (_, entity) = app.get(&format!("/api/demo/entity/{id}"), &owner).await;
    let old = entity["entity"]["title"][0]["_id"].as_str().unwrap().to_owned();
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{id}"),
            &owner,
            json!({"type": "title", "string": "New", "_id": old}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let new = body["properties"][0]["_id"].as_str().unwrap().to_owned();
    assert_ne!(new, old);
    let (_, entity) = app.get(&format!("/api/demo/entity/{id}"), &owner).await;
    let titles = entity["entity"]["title"].as_array().unwrap();
    assert_eq!((titles.len(), titles[0]["string"].as_str()), (1, Some("New")));
    // the old value is kept, marked deleted by the owner
    let (status, _) = app.get(&format!("/api/demo/property/{old}"), &owner).await;
    assert_eq!(status, 404);
    let row = eds::db::values::find_value(&mut app.pool.get().await.unwrap(), "demo", &old)
        .await
        .unwrap()
        .unwrap();
    assert!(row.deleted_at.is_some());
    // overwriting it again is refused: it is no longer live
    let (status, _) = app
        .post(
            &format!("/api/demo/entity/{id}"),
            &owner,
            json!({"type": "title", "string": "Again", "_id": old}),
        )
        .await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn id_of_another_property_or_entity_is_400_and_nothing_is_written() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    let a = app
        .create(
            &owner,
            &book,
            json!([{"type": "title", "string": "A"}, {"type": "note", "string": "n"}]),
        )
        .await;
    let b = app
        .create(&owner, &book, json!([{"type": "title", "string": "B"}]))
        .await;
    let (_, entity) = app.get(&format!("/api/demo/entity/{a}"), &owner).await;
    let title = entity["entity"]["title"][0]["_id"].as_str().unwrap().to_owned();
    let before = live_rows(&app, &b).await;
    for body in [
        json!([{"type": "extra", "string": "x"}, {"type": "title", "string": "X", "_id": title}]),
        json!([{"type": "note", "string": "X", "_id": title}]),
    ] {
        let target = if body[0]["type"] == "extra" { &b } else { &a };
        let (status, _) = app.post(&format!("/api/demo/entity/{target}"), &owner, body).await;
        assert_eq!(status, 400);
    }
    assert_eq!(live_rows(&app, &b).await, before);
}

#[tokio::test]
async fn failed_multi_value_post_writes_none_of_its_values() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    let (status, _) = app
        .post(
            "/api/demo/entity",
            &owner,
            json!([{"type": "_type", "reference": book}, {"type": "title", "string": "A"}, {"type": "ref", "reference": "000000000000000000000000"}]),
        )
        .await;
    assert_eq!(status, 400);
    let (_, list) = app.get("/api/demo/entity?_type.string=book", &owner).await;
    assert_eq!(list["count"], 0);
}

#[tokio::test]
async fn single_object_body_adds_one_value() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    let id = app.create(&owner, &book, json!([])).await;
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{id}"),
            &owner,
            json!({"type": "title", "string": "Solo"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["_id"], id.as_str());
    assert_eq!(body["properties"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn list_property_takes_one_value_per_posted_object() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    app.define(
        &owner,
        &book,
        "tag",
        "string",
        json!([{"type": "list", "boolean": true}]),
    )
    .await;
    let id = app
        .create(
            &owner,
            &book,
            json!([{"type": "tag", "string": "a"}, {"type": "tag", "string": "b"}]),
        )
        .await;
    app.post(
        &format!("/api/demo/entity/{id}"),
        &owner,
        json!([{"type": "tag", "string": "c"}]),
    )
    .await;
    let (_, entity) = app.get(&format!("/api/demo/entity/{id}"), &owner).await;
    let tags: Vec<&str> = entity["entity"]["tag"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["string"].as_str().unwrap())
        .collect();
    assert_eq!(tags, ["a", "b", "c"]);
}

#[tokio::test]
async fn reference_to_a_missing_entity_is_400() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    let id = app.create(&owner, &book, json!([])).await;
    for reference in ["000000000000000000000000", "not-an-id"] {
        let (status, _) = app
            .post(
                &format!("/api/demo/entity/{id}"),
                &owner,
                json!({"type": "author", "reference": reference}),
            )
            .await;
        assert_eq!(status, 400, "{reference}");
    }
}

#[tokio::test]
async fn type_changes_by_overwriting_the_type_value_by_id() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    let film = app.create_type(&owner, "film").await;
    let id = app.create(&owner, &book, json!([])).await;
    let (status, _) = app
        .post(
            &format!("/api/demo/entity/{id}"),
            &owner,
            json!({"type": "_type", "reference": film}),
        )
        .await;
    assert_eq!(status, 400, "a second _type is refused");
    let (_, entity) = app.get(&format!("/api/demo/entity/{id}"), &owner).await;
    let type_value = entity["entity"]["_type"][0]["_id"].as_str().unwrap().to_owned();
    let (status, _) = app
        .post(
            &format!("/api/demo/entity/{id}"),
            &owner,
            json!({"type": "_type", "reference": film, "_id": type_value}),
        )
        .await;
    assert_eq!(status, 200);
    let (_, films) = app.get("/api/demo/entity?_type.string=film", &owner).await;
    assert_eq!(films["entities"][0]["_id"], id.as_str());
    let (_, books) = app.get("/api/demo/entity?_type.string=book", &owner).await;
    assert_eq!(books["count"], 0);
}

#[tokio::test]
async fn property_read_has_type_and_created() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    let (_, body) = app
        .post(
            "/api/demo/entity",
            &owner,
            json!([{"type": "_type", "reference": book}, {"type": "title", "string": "T"}]),
        )
        .await;
    let value = body["properties"][1]["_id"].as_str().unwrap().to_owned();
    let (status, body) = app.get(&format!("/api/demo/property/{value}"), &owner).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["_id"], value.as_str());
    assert_eq!(body["type"], "title");
    assert_eq!(body["string"], "T");
    assert_eq!(body["created"]["by"], app.person.as_str());
    assert!(chrono::DateTime::parse_from_rfc3339(body["created"]["at"].as_str().unwrap()).is_ok());
}

#[tokio::test]
async fn deleted_property_is_gone_from_the_entity() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    let (_, body) = app
        .post(
            "/api/demo/entity",
            &owner,
            json!([{"type": "_type", "reference": book}, {"type": "title", "string": "T"}]),
        )
        .await;
    let id = id_of(&body);
    let value = body["properties"][1]["_id"].as_str().unwrap().to_owned();
    let (status, body) = app.delete(&format!("/api/demo/property/{value}"), &owner).await;
    assert_eq!((status, body), (200, json!({"deleted": true})));
    let (_, entity) = app.get(&format!("/api/demo/entity/{id}"), &owner).await;
    assert!(entity["entity"].get("title").is_none());
    let (status, _) = app.delete(&format!("/api/demo/property/{value}"), &owner).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn type_and_created_cannot_be_deleted_nor_the_last_owner() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    let id = app.create(&owner, &book, json!([])).await;
    let (_, entity) = app.get(&format!("/api/demo/entity/{id}"), &owner).await;
    for prop in ["_type", "_created", "_owner"] {
        let value = entity["entity"][prop][0]["_id"].as_str().unwrap();
        let (status, body) = app.delete(&format!("/api/demo/property/{value}"), &owner).await;
        assert_eq!(status, 403, "{prop}: {body}");
    }
}

#[tokio::test]
async fn deleted_entity_is_404_and_its_children_stay() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    let parent = app.create(&owner, &book, json!([])).await;
    let child = app
        .create(&owner, &book, json!([{"type": "_parent", "reference": parent}]))
        .await;
    let (status, body) = app.delete(&format!("/api/demo/entity/{parent}"), &owner).await;
    assert_eq!((status, body), (200, json!({"deleted": true})));
    assert_eq!(app.get(&format!("/api/demo/entity/{parent}"), &owner).await.0, 404);
    assert_eq!(app.get(&format!("/api/demo/entity/{child}"), &owner).await.0, 200);
    assert_eq!(app.delete(&format!("/api/demo/entity/{parent}"), &owner).await.0, 404);
    assert_eq!(live_rows(&app, &parent).await, 0);
}

#[tokio::test]
async fn unknown_database_entity_and_property_are_404() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    for path in [
        "/api/nodb/entity",
        "/api/demo/entity/000000000000000000000000",
        "/api/demo/entity/malformed",
        "/api/demo/property/000000000000000000000000",
        "/api/demo/property/xyz",
        "/api/demo/nothing",
    ] {
        let (status, body) = app.get(path, &owner).await;
        assert_eq!((status, body["status"].as_u64()), (404, Some(404)), "{path}");
    }
    // a database's routes share one scope: a method none of them takes on
    // a path they serve is answered like an unknown path
    for (method, path) in [("PUT", "/api/demo/entity"), ("POST", "/api/demo")] {
        let (status, body) = app.call(method, path, Some(&owner), Some(json!([]))).await;
        assert_eq!((status, body["status"].as_u64()), (404, Some(404)), "{method} {path}");
    }
    for (method, path) in [
        ("POST", "/api/demo/entity/malformed"),
        ("DELETE", "/api/demo/entity/000000000000000000000000"),
        ("DELETE", "/api/demo/property/malformed"),
    ] {
        let (status, _) = app
            .call(method, path, Some(&owner), Some(json!({"type": "a", "string": "b"})))
            .await;
        assert_eq!(status, 404, "{method} {path}");
        let (status, _) = app
            .call(method, path, None, Some(json!({"type": "a", "string": "b"})))
            .await;
        assert_eq!(status, 401, "{method} {path} without a token");
    }
}

#[tokio::test]
async fn malformed_bodies_are_400() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    let id = app.create(&owner, &book, json!([])).await;
    let path = format!("{}/api/demo/entity/{id}", app.url);
    for body in [
        "{not json",
        "42",
        "[1,2]",
        r#"[{"string":"no type"}]"#,
        r#"{"type":"a","string":"x","number":1}"#,
    ] {
        let response = app
            .http
            .post(&path)
            .bearer_auth(&owner)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{body}");
        let error: Json = response.json().await.unwrap();
        assert_eq!(error["status"], 400);
    }
}

#[tokio::test]
async fn writes_without_token_are_401_and_private_reads_are_404() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    let id = app.create(&owner, &book, json!([])).await;
    let (status, _) = app.call("POST", "/api/demo/entity", None, Some(json!([]))).await;
    assert_eq!(status, 401);
    let (status, _) = app.call("DELETE", &format!("/api/demo/entity/{id}"), None, None).await;
    assert_eq!(status, 401);
    let (status, _) = app.call("GET", &format!("/api/demo/entity/{id}"), None, None).await;
    assert_eq!(status, 404);
    let (status, body) = app.call("GET", "/api/demo/entity", None, None).await;
    assert_eq!((status, body["count"].as_i64()), (200, Some(0)));
}

#[tokio::test]
async fn public_entity_is_readable_without_token() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    let id = app
        .create(
            &owner,
            &book,
            json!([{"type": "_sharing", "string": "public"}, {"type": "title", "string": "Open"}]),
        )
        .await;
    let (status, body) = app.call("GET", &format!("/api/demo/entity/{id}"), None, None).await;
    assert_eq!(status, 200, "{body}");
    let (_, list) = app.call("GET", "/api/demo/entity", None, None).await;
    assert_eq!(list["count"], 1);
}

#[tokio::test]
async fn list_envelope_default_order_limit_and_skip() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    let mut ids = Vec::new();
    for n in 0..5 {
        ids.push(app.create(&owner, &book, json!([{"type": "n", "number": n}])).await);
    }
    let (status, body) = app.get("/api/demo/entity?_type.string=book", &owner).await;
    assert_eq!(status, 200);
    assert_eq!(
        (body["count"].as_i64(), body["limit"].as_i64(), body["skip"].as_i64()),
        (Some(5), Some(100), Some(0))
    );
    let listed: Vec<&str> = body["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["_id"].as_str().unwrap())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(listed, sorted.iter().map(String::as_str).collect::<Vec<_>>());
    let (_, page) = app
        .get("/api/demo/entity?_type.string=book&limit=2&skip=1", &owner)
        .await;
    assert_eq!(
        (page["count"].as_i64(), page["limit"].as_i64(), page["skip"].as_i64()),
        (Some(5), Some(2), Some(1))
    );
    assert_eq!(page["entities"].as_array().unwrap().len(), 2);
    assert_eq!(page["entities"][0]["_id"], sorted[1].as_str());
    for limit in ["0", "abc"] {
        let (_, body) = app
            .get(&format!("/api/demo/entity?_type.string=book&limit={limit}"), &owner)
            .await;
        assert_eq!(body["limit"], 100, "{limit}");
    }
}

#[tokio::test]
async fn exact_filters_on_string_and_reference() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    let dune = app
        .create(
            &owner,
            &book,
            json!([{"type": "title", "string": "Dune"}, {"type": "by", "reference": app.person}]),
        )
        .await;
    app.create(&owner, &book, json!([{"type": "title", "string": "Emma"}]))
        .await;
    let (_, body) = app.get("/api/demo/entity?title.string=Dune", &owner).await;
    assert_eq!(
        (body["count"].as_i64(), body["entities"][0]["_id"].as_str()),
        (Some(1), Some(dune.as_str()))
    );
    let (_, body) = app
        .get(&format!("/api/demo/entity?by.reference={}", app.person), &owner)
        .await;
    assert_eq!(body["count"], 1);
    let (_, body) = app.get("/api/demo/entity?by.string=Demo%20Owner", &owner).await;
    assert_eq!(body["count"], 1, "a reference's string is the referenced name");
    let (status, body) = app.get("/api/demo/entity?by.reference=bad", &owner).await;
    assert_eq!((status, body["message"].as_str()), (400, Some("Invalid ID")));
}

#[tokio::test]
async fn person_with_key_from_the_cli_code_path_can_create_but_not_change_others() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    let mine = app.create(&owner, &book, json!([])).await;
    let (_, key) = app.add_person(&owner, "Second").await;
    let second = app.token_for(&key).await;
    let theirs = app
        .create(&second, &book, json!([{"type": "title", "string": "Mine"}]))
        .await;
    let (status, _) = app.get(&format!("/api/demo/entity/{theirs}"), &second).await;
    assert_eq!(status, 200);
    // the owner's private entity is invisible to the second person
    let (status, _) = app
        .post(
            &format!("/api/demo/entity/{mine}"),
            &second,
            json!({"type": "title", "string": "x"}),
        )
        .await;
    assert_eq!(status, 404);
    // a visible entity without the editor right: 403
    let second_id = app.find(&owner, "person", "Second").await;
    app.post(
        &format!("/api/demo/entity/{mine}"),
        &owner,
        json!({"type": "_viewer", "reference": second_id}),
    )
    .await;
    let (status, _) = app
        .post(
            &format!("/api/demo/entity/{mine}"),
            &second,
            json!({"type": "title", "string": "x"}),
        )
        .await;
    assert_eq!(status, 403);
}

#[tokio::test]
async fn counters_follow_the_largest_number_of_the_property_across_types() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let invoice = app.create_type(&owner, "invoice").await;
    let order = app.create_type(&owner, "order").await;
    app.define(&owner, &invoice, "no", "counter", json!([])).await;
    let first = app
        .create(&owner, &invoice, json!([{"type": "no", "counter": true}]))
        .await;
    let (_, body) = app.get(&format!("/api/demo/entity/{first}"), &owner).await;
    assert_eq!(body["entity"]["no"][0]["string"], "1", "no earlier value: the step");
    assert_eq!(body["entity"]["no"][0]["number"], 1);
    // a string with a number sets the sequence, leading zeros dropped
    let (status, body) = app
        .post(
            "/api/demo/entity",
            &owner,
            json!([{"type": "_type", "reference": order}, {"type": "no", "counter": true, "string": "INV-0041"}]),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["properties"][1]["string"], "INV-41");
    assert_eq!(body["properties"][1]["number"], 41);
    // the next one, for another type, continues the shared sequence
    let (_, body) = app
        .post(
            "/api/demo/entity",
            &owner,
            json!([{"type": "_type", "reference": invoice}, {"type": "no", "counter": true}]),
        )
        .await;
    assert_eq!(
        (
            body["properties"][1]["string"].as_str(),
            body["properties"][1]["number"].as_i64()
        ),
        (Some("INV-42"), Some(42))
    );
    let (_, body) = app
        .post("/api/demo/entity", &owner, json!([{"type": "_type", "reference": invoice}, {"type": "no", "counter": 10}, {"type": "no", "counter": true}]))
        .await;
    assert_eq!(body["properties"][1]["string"], "INV-52");
    assert_eq!(body["properties"][2]["string"], "INV-53");
    // deleted values do not count
    let value = body["properties"][2]["_id"].as_str().unwrap();
    app.delete(&format!("/api/demo/property/{value}"), &owner).await;
    let (_, body) = app
        .post(
            "/api/demo/entity",
            &owner,
            json!([{"type": "_type", "reference": invoice}, {"type": "no", "counter": true}]),
        )
        .await;
    assert_eq!(body["properties"][1]["string"], "INV-53");
}

#[tokio::test]
async fn cors_allows_any_origin_and_answers_preflight_with_204() {
    let app = TestApp::start().await;
    let preflight = app
        .http
        .request(reqwest::Method::OPTIONS, format!("{}/api/demo/entity", app.url))
        .header("Origin", "https://app.example")
        .header("Access-Control-Request-Method", "POST")
        .header("Access-Control-Request-Headers", "authorization, content-type")
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.status(), 204);
    let headers = preflight.headers();
    assert_eq!(headers["access-control-allow-origin"], "*");
    assert!(
        headers["access-control-allow-methods"]
            .to_str()
            .unwrap()
            .contains("POST")
    );
    assert_eq!(headers["access-control-allow-headers"], "authorization, content-type");
    for token in [None, Some("bad")] {
        let mut request = app
            .http
            .get(format!("{}/api/demo/entity", app.url))
            .header("Origin", "https://app.example");
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        assert_eq!(
            response.headers()["access-control-allow-origin"],
            "*",
            "errors carry it too"
        );
    }
}

#[tokio::test]
async fn every_response_carries_a_request_id_given_or_generated() {
    let app = TestApp::start().await;
    let given = app
        .http
        .get(format!("{}/health", app.url))
        .header("X-Request-Id", "trace-42")
        .send()
        .await
        .unwrap();
    assert_eq!(given.headers()["x-request-id"], "trace-42");
    let generated = app
        .http
        .get(format!("{}/api/nodb/entity", app.url))
        .send()
        .await
        .unwrap();
    let id = generated.headers()["x-request-id"].to_str().unwrap().to_owned();
    assert!(eds::model::ids::is_valid_id(&id), "{id}");
}

#[tokio::test]
async fn ready_is_503_when_object_storage_is_unreachable() {
    let app = TestApp::start_with(
        support::Storage::Local,
        &[
            ("storage.backend", "s3".to_owned()),
            ("storage.s3.endpoint", "http://127.0.0.1:9".to_owned()),
            ("storage.s3.bucket", "missing".to_owned()),
            ("storage.s3.access_key", "key".to_owned()),
            ("storage.s3.secret_key", "secret".to_owned()),
            ("storage.s3.timeout_ms", "500".to_owned()),
        ],
    )
    .await;
    let (status, body) = app.call("GET", "/ready", None, None).await;
    assert_eq!((status, body), (503, json!({"database": true, "storage": false})));
    assert_eq!(app.call("GET", "/health", None, None).await.0, 200);
}
