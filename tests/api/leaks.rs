//! Attacks on the rights model through derived data: formulas, reference
//! names, search and deletions. Each test has a person (Mallory) who may
//! create entities of her own try to learn what the owner keeps private,
//! and checks the legitimate use beside it.

use crate::support;

use serde_json::{Value as Json, json};
use support::TestApp;

const SALARY: i64 = 5000;

struct World {
    app: TestApp,
    owner: String,
    /// An entity type with a `salary` number, owned by the owner.
    employee_type: String,
    mallory: String,
    mallory_token: String,
}

async fn world() -> World {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let employee_type = app.create_type(&owner, "employee").await;
    app.define(&owner, &employee_type, "salary", "number", json!([])).await;
    let (mallory, key) = app.add_person(&owner, "Mallory").await;
    let mallory_token = app.token_for(&key).await;
    World {
        app,
        owner,
        employee_type,
        mallory,
        mallory_token,
    }
}

impl World {
    /// A private employee of the owner's, earning [`SALARY`], with extra values.
    async fn employee(&self, extra: Json) -> String {
        let mut values = vec![
            json!({"type": "salary", "number": SALARY}),
            json!({"type": "name", "string": "Top secret"}),
        ];
        values.extend(extra.as_array().cloned().unwrap_or_default());
        self.app
            .create(&self.owner, &self.employee_type, Json::Array(values))
            .await
    }

    /// A type of `token`'s own named `name`, with the given formula properties
    /// (name, formula) and a reference property `target`.
    async fn probe_type(&self, token: &str, name: &str, formulas: &[(&str, &str)]) -> String {
        let probe = self.app.create_type(token, name).await;
        self.app.define(token, &probe, "target", "reference", json!([])).await;
        for (prop, formula) in formulas {
            let extra = json!([{"type": "formula", "string": formula}]);
            self.app.define(token, &probe, prop, "number", extra).await;
        }
        probe
    }

    /// Mallory's type `probe` summing the salaries its `target` points at,
    /// and her entity of it pointing at `target`, computed. Answers both ids.
    async fn salary_probe(&self, target: &str) -> (String, String) {
        let formulas = [("total", "target.*.salary SUM")];
        let probe = self.probe_type(&self.mallory_token, "probe", &formulas).await;
        let values = json!([{"type": "target", "reference": target}]);
        let entity = self.app.create(&self.mallory_token, &probe, values).await;
        self.app.settle().await;
        (probe, entity)
    }

    async fn read(&self, token: &str, id: &str) -> Json {
        let (status, body) = self.app.get(&format!("/api/demo/entity/{id}"), token).await;
        assert_eq!(status, 200, "{body}");
        body["entity"].clone()
    }

    /// The number of a computed property as `token` reads it.
    async fn computed(&self, token: &str, id: &str, prop: &str) -> Json {
        self.read(token, id).await[prop][0]["number"].clone()
    }
}

#[tokio::test]
async fn a_formula_does_not_read_a_referenced_entity_its_readers_cannot_read() {
    let w = world().await;
    let secret = w.employee(json!([])).await;
    let (probe, attack) = w.salary_probe(&secret).await;
    assert_eq!(
        w.computed(&w.mallory_token, &attack, "total").await,
        Json::Null,
        "a sum of nothing"
    );
    // nor as the salary changes
    let (status, body) = w
        .app
        .post(
            &format!("/api/demo/entity/{secret}"),
            &w.owner,
            json!([{"type": "salary", "number": 7000}]),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    w.app.settle().await;
    assert_eq!(
        w.computed(&w.mallory_token, &attack, "total").await,
        Json::Null,
        "a sum of nothing"
    );

    // the same formula on an entity only the owner reads sees the salary
    let own = w
        .app
        .create(&w.owner, &probe, json!([{"type": "target", "reference": secret}]))
        .await;
    w.app.settle().await;
    assert_eq!(w.computed(&w.owner, &own, "total").await, json!(SALARY + 7000));
}

#[tokio::test]
async fn a_formula_does_not_read_or_count_children_its_readers_cannot_read() {
    let w = world().await;
    let folder_type = w
        .probe_type(
            &w.mallory_token,
            "folder",
            &[("total", "_child.*.salary SUM"), ("children", "_child.*._id COUNT")],
        )
        .await;
    // Mallory's folder, where the owner may file entities (a shared folder
    // holding private items)
    let folder = w
        .app
        .create(
            &w.mallory_token,
            &folder_type,
            json!([{"type": "_expander", "reference": w.app.person}]),
        )
        .await;
    w.employee(json!([{"type": "_parent", "reference": folder}])).await;
    w.app.settle().await;
    let entity = w.read(&w.mallory_token, &folder).await;
    assert!(entity.get("total").is_none(), "a sum of nothing: {entity}");
    assert_eq!(entity["children"][0]["number"], json!(0), "{entity}");
}

#[tokio::test]
async fn a_formula_does_not_read_or_count_referrers_its_readers_cannot_read() {
    let w = world().await;
    let board_type = w
        .probe_type(
            &w.mallory_token,
            "board",
            &[
                ("total", "_referrer.*.salary SUM"),
                ("referrers", "_referrer.*._id COUNT"),
            ],
        )
        .await;
    let board = w.app.create(&w.mallory_token, &board_type, json!([])).await;
    // the owner's private employee points at Mallory's board
    w.employee(json!([{"type": "board", "reference": board}])).await;
    w.app.settle().await;
    let entity = w.read(&w.mallory_token, &board).await;
    assert!(entity.get("total").is_none(), "a sum of nothing: {entity}");
    assert_eq!(entity["referrers"][0]["number"], json!(0), "{entity}");
}

#[tokio::test]
async fn a_formula_reads_the_values_every_reader_of_its_entity_may_read() {
    let w = world().await;
    let owner = &w.owner;
    let invoice_type = w.app.create_type(owner, "invoice").await;
    let extra = json!([{"type": "formula", "string": "_child.row.amount SUM"}]);
    w.app.define(owner, &invoice_type, "total", "number", extra).await;
    let row_type = w.app.create_type(owner, "row").await;
    w.app.define(owner, &row_type, "amount", "number", json!([])).await;
    // Mallory views the invoice, and its rows inherit that right
    let invoice = w
        .app
        .create(
            owner,
            &invoice_type,
            json!([{"type": "_viewer", "reference": w.mallory}]),
        )
        .await;
    for amount in [10, 32] {
        let values = json!([
            {"type": "_parent", "reference": invoice},
            {"type": "_inheritrights", "boolean": true},
            {"type": "amount", "number": amount},
        ]);
        w.app.create(owner, &row_type, values).await;
    }
    w.app.settle().await;
    assert_eq!(w.computed(owner, &invoice, "total").await, json!(42));
    assert_eq!(w.computed(&w.mallory_token, &invoice, "total").await, json!(42));

    // a row Mallory may not read counts for no one: she reads the same total
    let values = json!([{"type": "_parent", "reference": invoice}, {"type": "amount", "number": 1000}]);
    let hidden_row = w.app.create(owner, &row_type, values).await;
    w.app.settle().await;
    assert_eq!(w.computed(owner, &invoice, "total").await, json!(42));
    assert_eq!(w.computed(&w.mallory_token, &invoice, "total").await, json!(42));
    // once she may read it, it counts
    let grant = json!([{"type": "_viewer", "reference": w.mallory}]);
    let (status, body) = w
        .app
        .post(&format!("/api/demo/entity/{hidden_row}"), owner, grant)
        .await;
    assert_eq!(status, 200, "{body}");
    w.app.settle().await;
    assert_eq!(w.computed(&w.mallory_token, &invoice, "total").await, json!(1042));
}

#[tokio::test]
async fn a_formula_value_goes_at_the_commit_that_hides_what_it_read() {
    let w = world().await;
    // Mallory may read this employee, for now
    let secret = w.employee(json!([{"type": "_viewer", "reference": w.mallory}])).await;
    let (_, watcher) = w.salary_probe(&secret).await;
    assert_eq!(w.computed(&w.mallory_token, &watcher, "total").await, json!(SALARY));

    let employee = w.read(&w.owner, &secret).await;
    let right = employee["_viewer"][0]["_id"].as_str().unwrap().to_owned();
    let (status, body) = w.app.delete(&format!("/api/demo/property/{right}"), &w.owner).await;
    assert_eq!(status, 200, "{body}");
    // read at once, before the formula queue has run
    let value = w.computed(&w.mallory_token, &watcher, "total").await;
    assert_ne!(
        value,
        json!(SALARY),
        "the salary still shows after the right was removed"
    );
    w.app.settle().await;
    assert_eq!(
        w.computed(&w.mallory_token, &watcher, "total").await,
        Json::Null,
        "a sum of nothing"
    );
}

/// Mallory's own entity pointing at `target` through an undefined reference property `link`.
async fn mallory_link(w: &World, target: &str) -> String {
    let own_type = w.app.create_type(&w.mallory_token, "note").await;
    let extra = json!([{"type": "search", "boolean": true}]);
    w.app
        .define(&w.mallory_token, &own_type, "link", "reference", extra)
        .await;
    w.app
        .create(
            &w.mallory_token,
            &own_type,
            json!([{"type": "link", "reference": target}]),
        )
        .await
}

#[tokio::test]
async fn a_reference_does_not_show_the_name_or_type_of_an_entity_the_caller_cannot_read() {
    let w = world().await;
    let secret = w.employee(json!([])).await;
    let note = mallory_link(&w, &secret).await;
    let link = &w.read(&w.mallory_token, &note).await["link"][0];
    assert_eq!(link["reference"], json!(secret));
    assert_eq!(link["property_type"], json!("link"));
    assert!(link.get("string").is_none(), "{link}");
    assert!(link.get("entity_type").is_none(), "{link}");

    // a viewer of the target reads its name through the reference
    let grant = json!([{"type": "_viewer", "reference": w.mallory}]);
    let (status, body) = w.app.post(&format!("/api/demo/entity/{secret}"), &w.owner, grant).await;
    assert_eq!(status, 200, "{body}");
    let link = &w.read(&w.mallory_token, &note).await["link"][0];
    assert_eq!(link["string"], json!("Top secret"));
    assert_eq!(link["entity_type"], json!("employee"));
}

#[tokio::test]
async fn a_reference_shows_the_type_but_not_a_name_its_target_s_view_hides() {
    let w = world().await;
    // Mallory reads the shared employee, but its view leaves out `name`
    let shared = w.employee(json!([{"type": "_sharing", "string": "domain"}])).await;
    let seen = w.read(&w.mallory_token, &shared).await;
    assert!(seen.get("name").is_none(), "{seen}");
    let note = mallory_link(&w, &shared).await;
    let link = &w.read(&w.mallory_token, &note).await["link"][0];
    assert_eq!(link["entity_type"], json!("employee"));
    assert!(link.get("string").is_none(), "{link}");
    // the owner's view shows it, through her own referrer too
    let memo_type = w.app.create_type(&w.owner, "memo").await;
    let memo = w
        .app
        .create(&w.owner, &memo_type, json!([{"type": "link", "reference": shared}]))
        .await;
    let link = &w.read(&w.owner, &memo).await["link"][0];
    assert_eq!(link["string"], json!("Top secret"));
}

#[tokio::test]
async fn a_reference_name_filter_does_not_match_names_the_caller_cannot_read() {
    let w = world().await;
    let secret = w.employee(json!([])).await;
    mallory_link(&w, &secret).await;
    // the yes/no oracle: does the hidden name start with T?
    for query in [
        "link.string.regex=^T",
        "link.string=Top%20secret",
        "link.string.exists=true",
    ] {
        let path = format!("/api/demo/entity?{query}");
        let (status, body) = w.app.get(&path, &w.mallory_token).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["count"], json!(0), "{query}: {body}");
    }
    // the owner's own referrer matches by the name she may read
    let own_type = w.app.create_type(&w.owner, "memo").await;
    w.app
        .create(&w.owner, &own_type, json!([{"type": "link", "reference": secret}]))
        .await;
    let (status, body) = w.app.get("/api/demo/entity?link.string.regex=^T", &w.owner).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["count"], json!(1), "{body}");
}

#[tokio::test]
async fn search_does_not_find_an_entity_by_a_referenced_name_its_readers_cannot_read() {
    let w = world().await;
    let secret = w.employee(json!([])).await;
    let note = mallory_link(&w, &secret).await;
    let search = |token: String| {
        let app = &w.app;
        async move {
            let (status, body) = app.get("/api/demo/entity?q=secret", &token).await;
            assert_eq!(status, 200, "{body}");
            body["entities"]
                .as_array()
                .unwrap()
                .iter()
                .map(|entity| entity["_id"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert!(!search(w.mallory_token.clone()).await.contains(&note));

    // once Mallory may read the name, her note is found by it
    let grant = json!([{"type": "_viewer", "reference": w.mallory}]);
    let (status, body) = w.app.post(&format!("/api/demo/entity/{secret}"), &w.owner, grant).await;
    assert_eq!(status, 200, "{body}");
    assert!(search(w.mallory_token.clone()).await.contains(&note));

    // and no longer, at once, when the right goes
    let employee = w.read(&w.owner, &secret).await;
    let right = employee["_viewer"][0]["_id"].as_str().unwrap().to_owned();
    let (status, body) = w.app.delete(&format!("/api/demo/property/{right}"), &w.owner).await;
    assert_eq!(status, 200, "{body}");
    assert!(!search(w.mallory_token.clone()).await.contains(&note));
}

/// A public `book` type with a public `title` definition, and a public book
/// titled Dune; answers the type, the definition and the book.
async fn public_dune(app: &TestApp, owner: &str) -> (String, String, String) {
    let book = app.create_type(owner, "book").await;
    let public = json!([{"type": "_sharing", "string": "public"}]);
    let (status, body) = app
        .post(&format!("/api/demo/entity/{book}"), owner, public.clone())
        .await;
    assert_eq!(status, 200, "{body}");
    let title = app.define(owner, &book, "title", "string", public).await;
    let values = json!([{"type": "title", "string": "Dune"}, {"type": "_sharing", "string": "public"}]);
    let dune = app.create(owner, &book, values).await;
    (book, title, dune)
}

#[tokio::test]
async fn deleting_a_property_definition_removes_its_values_from_shared_views() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (_, title, dune) = public_dune(&app, &owner).await;
    let path = format!("/api/demo/entity/{dune}");
    let (status, body) = app.call("GET", &path, None, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["entity"]["title"][0]["string"], json!("Dune"));

    let (status, body) = app.delete(&format!("/api/demo/entity/{title}"), &owner).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = app.call("GET", &path, None, None).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["entity"].get("title").is_none(), "{body}");
    let (_, body) = app.call("GET", "/api/demo/entity?title.string=Dune", None, None).await;
    assert_eq!(body["count"], json!(0), "{body}");
    // the owner still reads every value
    let (_, body) = app.get(&path, &owner).await;
    assert_eq!(body["entity"]["title"][0]["string"], json!("Dune"));
}

#[tokio::test]
async fn a_definition_given_another_type_removes_its_values_from_shared_views() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (_, title, dune) = public_dune(&app, &owner).await;
    let path = format!("/api/demo/entity/{dune}");
    let (_, body) = app.call("GET", &path, None, None).await;
    assert_eq!(body["entity"]["title"][0]["string"], json!("Dune"), "{body}");

    // the definition becomes an entity of another type: `title` has no
    // definition left, so it is private again
    let other = app.create_type(&owner, "other").await;
    let (_, definition) = app.get(&format!("/api/demo/entity/{title}"), &owner).await;
    let type_value = definition["entity"]["_type"][0]["_id"].as_str().unwrap().to_owned();
    let retype = json!([{"_id": type_value, "type": "_type", "reference": other}]);
    let (status, body) = app.post(&format!("/api/demo/entity/{title}"), &owner, retype).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = app.call("GET", &path, None, None).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["entity"].get("title").is_none(), "{body}");
    let (_, body) = app.call("GET", "/api/demo/entity?title.string=Dune", None, None).await;
    assert_eq!(body["count"], json!(0), "{body}");
}

#[tokio::test]
async fn deleting_an_entity_type_removes_its_entities_values_from_shared_views() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (book, _, dune) = public_dune(&app, &owner).await;

    let (status, body) = app.delete(&format!("/api/demo/entity/{book}"), &owner).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = app.call("GET", &format!("/api/demo/entity/{dune}"), None, None).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["entity"].get("title").is_none(), "{body}");
}

#[tokio::test]
async fn deleting_a_parent_ends_the_rights_its_children_inherited() {
    let w = world().await;
    let parent = w.employee(json!([{"type": "_viewer", "reference": w.mallory}])).await;
    let values = json!([
        {"type": "_parent", "reference": parent},
        {"type": "_inheritrights", "boolean": true},
        {"type": "salary", "number": 1},
    ]);
    let child = w.app.create(&w.owner, &w.employee_type, values).await;
    let path = format!("/api/demo/entity/{child}");
    let (status, body) = w.app.get(&path, &w.mallory_token).await;
    assert_eq!(status, 200, "{body}");

    let (status, body) = w.app.delete(&format!("/api/demo/entity/{parent}"), &w.owner).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = w.app.get(&path, &w.mallory_token).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"], json!("not_found"), "{body}");
    let (status, _) = w.app.get(&path, &w.owner).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn deleting_a_referenced_entity_removes_its_name_from_referrers_search() {
    let w = world().await;
    let target = w.employee(json!([{"type": "_viewer", "reference": w.mallory}])).await;
    mallory_link(&w, &target).await;
    let (_, body) = w
        .app
        .get("/api/demo/entity?q=secret&_type.string=note", &w.mallory_token)
        .await;
    assert_eq!(body["count"], json!(1), "{body}");

    let (status, body) = w.app.delete(&format!("/api/demo/entity/{target}"), &w.owner).await;
    assert_eq!(status, 200, "{body}");
    let (_, body) = w
        .app
        .get("/api/demo/entity?q=secret&_type.string=note", &w.mallory_token)
        .await;
    assert_eq!(body["count"], json!(0), "{body}");
}
