//! GraphQL under the REST rights: a person without rights sees no entity
//! and no type; `_viewer` sees; a property hidden from the caller is in
//! neither the schema nor the filters; a reference's entity shows only
//! when the caller may read it.

use crate::support;

use serde_json::{Value as Json, json};
use support::TestApp;

use crate::graphql::{code, gql, ids};

struct World {
    app: TestApp,
    owner: String,
    book: String,
    title: String,
    person: String,
    token: String,
}

async fn world() -> World {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    let title = app.define(&owner, &book, "title", "string", json!([])).await;
    let (person, key) = app.add_person(&owner, "Pat").await;
    let token = app.token_for(&key).await;
    World {
        app,
        owner,
        book,
        title,
        person,
        token,
    }
}

impl World {
    async fn grant(&self, right: &str, entity: &str) {
        let path = format!("/api/demo/entity/{entity}");
        let (status, body) = self
            .app
            .post(&path, &self.owner, json!({"type": right, "reference": self.person}))
            .await;
        assert_eq!(status, 200, "{body}");
    }

    /// Shows the names of types and definitions (and definitions' value
    /// types) in public views: the seeded definitions are `domain`, so
    /// anonymous callers otherwise see types without names.
    async fn publish_type_names(&self) {
        let owner = &self.owner;
        let entity = self.app.find(owner, "entity", "entity").await;
        let property = self.app.find(owner, "entity", "property").await;
        let mut published = vec![entity.clone(), property.clone()];
        for (parent, name) in [(&entity, "name"), (&property, "name"), (&property, "type")] {
            let path =
                format!("/api/demo/entity?_type.reference={property}&_parent.reference={parent}&name.string={name}");
            let (_, list) = self.app.get(&path, owner).await;
            published.push(list["entities"][0]["_id"].as_str().unwrap().to_owned());
        }
        for id in published {
            let public = json!({"type": "_sharing", "string": "public"});
            let (status, body) = self.app.post(&format!("/api/demo/entity/{id}"), owner, public).await;
            assert_eq!(status, 200, "{body}");
        }
        self.app.settle().await;
    }

    async fn book(&self, title: &str) -> String {
        let values = json!([{"type": "title", "string": title}]);
        self.app.create(&self.owner, &self.book, values).await
    }
}

/// The root query fields of the caller's schema.
async fn root_fields(app: &TestApp, token: Option<&str>) -> Vec<String> {
    let (status, answer) = gql(app, token, "{ __schema { queryType { fields { name } } } }", json!({})).await;
    assert_eq!(status, 200, "{answer}");
    let fields = answer["data"]["__schema"]["queryType"]["fields"].as_array().unwrap();
    fields.iter().map(|f| f["name"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn graphql_person_without_rights_sees_no_entity_and_no_type() {
    let w = world().await;
    let id = w.book("private").await;
    assert!(root_fields(&w.app, Some(&w.owner)).await.contains(&"book".to_owned()));
    assert!(!root_fields(&w.app, Some(&w.token)).await.contains(&"book".to_owned()));
    let (rest_status, rest) = w.app.get(&format!("/api/demo/entity/{id}"), &w.token).await;
    assert_eq!(rest_status, 404);
    // the failing field alone is null: the document's other fields answer
    let query = "query($id: String!) { _entity(_id: $id) { _id } __typename }";
    let (status, answer) = gql(&w.app, Some(&w.token), query, json!({"id": id})).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer["data"],
        json!({"_entity": null, "__typename": "Query"}),
        "{answer}"
    );
    assert_eq!(answer["errors"][0]["path"], json!(["_entity"]), "{answer}");
    assert_eq!(code(&answer), rest["error"].as_str().unwrap());
    assert_eq!(answer["errors"][0]["message"], rest["message"]);
    let (status, answer) = gql(&w.app, Some(&w.token), "{ book { _id } }", json!({})).await;
    assert_eq!((status, code(&answer)), (400, "graphql_validation_failed"), "{answer}");
}

#[tokio::test]
async fn graphql_viewer_sees_the_type_and_the_entities_it_views() {
    let w = world().await;
    let seen = w.book("seen").await;
    w.book("unseen").await;
    for entity in [&w.book, &w.title, &seen] {
        w.grant("_viewer", entity).await;
    }
    let (status, answer) = gql(&w.app, Some(&w.token), "{ book { _id title { string } } }", json!({})).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(ids(&answer["data"]["book"]), std::slice::from_ref(&seen));
    assert_eq!(answer["data"]["book"][0]["title"], json!([{"string": "seen"}]));
    let (_, rest) = w
        .app
        .get(&format!("/api/demo/entity?_type.reference={}", w.book), &w.token)
        .await;
    assert_eq!(ids(&rest["entities"]), [seen]);
}

#[tokio::test]
async fn graphql_hidden_property_is_not_in_the_schema_nor_in_filters() {
    let w = world().await;
    let public = json!({"type": "_sharing", "string": "public"});
    for entity in [&w.book, &w.title] {
        w.app
            .post(&format!("/api/demo/entity/{entity}"), &w.owner, public.clone())
            .await;
    }
    w.app.define(&w.owner, &w.book, "secret", "string", json!([])).await;
    w.publish_type_names().await;
    let values = json!([{"type": "title", "string": "open"}, {"type": "secret", "string": "hush"}, public]);
    let id = w.app.create(&w.owner, &w.book, values).await;
    let fields = "{ __type(name: \"T_book\") { fields { name } } }";
    let names = |answer: &Json| -> Vec<String> {
        let fields = answer["data"]["__type"]["fields"].as_array().unwrap();
        fields.iter().map(|f| f["name"].as_str().unwrap().to_owned()).collect()
    };
    let (_, owners) = gql(&w.app, Some(&w.owner), fields, json!({})).await;
    assert!(names(&owners).contains(&"secret".to_owned()), "{owners}");
    // anonymous callers read what REST lets them: the public view
    let (status, anonymous) = gql(&w.app, None, fields, json!({})).await;
    assert_eq!(status, 200, "{anonymous}");
    assert!(names(&anonymous).contains(&"title".to_owned()), "{anonymous}");
    assert!(!names(&anonymous).contains(&"secret".to_owned()), "{anonymous}");
    let query = "query($f: String) { book(filter: $f) { _id _json } }";
    let (_, hidden) = gql(&w.app, None, query, json!({"f": "secret.string=hush"})).await;
    assert_eq!(hidden["data"]["book"], json!([]), "{hidden}");
    let (_, shown) = gql(&w.app, None, query, json!({"f": "title.string=open"})).await;
    assert_eq!(ids(&shown["data"]["book"]), std::slice::from_ref(&id));
    assert!(shown["data"]["book"][0]["_json"].get("secret").is_none(), "{shown}");
    let (_, owners) = gql(&w.app, Some(&w.owner), query, json!({"f": "secret.string=hush"})).await;
    assert_eq!(ids(&owners["data"]["book"]), [id]);
}

#[tokio::test]
async fn graphql_reference_field_loads_referenced_entity_under_callers_rights() {
    let w = world().await;
    let author = w.app.define(&w.owner, &w.book, "author", "reference", json!([])).await;
    let writer = w.app.create_type(&w.owner, "writer").await;
    w.app.define(&w.owner, &writer, "name", "string", json!([])).await;
    let name = |name: &str| json!([{"type": "name", "string": name}]);
    let known = w.app.create(&w.owner, &writer, name("Known")).await;
    let hidden = w.app.create(&w.owner, &writer, name("Hidden")).await;
    let values = json!([{"type": "author", "reference": known}, {"type": "author", "reference": hidden}]);
    let book = w.app.create(&w.owner, &w.book, values).await;
    for entity in [&w.book, &author, &book, &known] {
        w.grant("_viewer", entity).await;
    }
    let query = "{ book { _id author { reference string entity { _id _json } } } }";
    let (status, answer) = gql(&w.app, Some(&w.token), query, json!({})).await;
    assert_eq!(status, 200, "{answer}");
    let authors = answer["data"]["book"][0]["author"].as_array().unwrap();
    assert_eq!(authors[0]["reference"], known.as_str());
    assert_eq!(authors[0]["string"], "Known");
    assert_eq!(authors[0]["entity"]["_id"], known.as_str());
    assert_eq!(authors[0]["entity"]["_json"]["name"][0]["string"], "Known");
    assert_eq!(authors[1]["reference"], hidden.as_str());
    assert_eq!(
        (&authors[1]["string"], &authors[1]["entity"]),
        (&Json::Null, &Json::Null),
        "{answer}"
    );
    let (_, owners) = gql(&w.app, Some(&w.owner), query, json!({})).await;
    let authors = owners["data"]["book"][0]["author"].as_array().unwrap();
    assert_eq!(authors[1]["entity"]["_id"], hidden.as_str(), "{owners}");
    // the owner sees the writer type: the referenced entity is its object
    let typed = "{ book { author { entity { ... on T_writer { name { string } } } } } }";
    let (_, owners) = gql(&w.app, Some(&w.owner), typed, json!({})).await;
    assert_eq!(
        owners["data"]["book"][0]["author"][1]["entity"]["name"][0]["string"], "Hidden",
        "{owners}"
    );
}
