//! Rights, sharing and history: every row of "Who may do what", each deletion
//! restriction, inheritance, public and anonymous access.

use crate::support;

use serde_json::{Value as Json, json};
use support::TestApp;

struct World {
    app: TestApp,
    owner: String,
    doc_type: String,
    person: String,
    token: String,
}

async fn world() -> World {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let doc_type = app.create_type(&owner, "doc").await;
    app.define(
        &owner,
        &doc_type,
        "title",
        "string",
        json!([{"type": "search", "boolean": true}]),
    )
    .await;
    let (person, key) = app.add_person(&owner, "Pat").await;
    let token = app.token_for(&key).await;
    World {
        app,
        owner,
        doc_type,
        person,
        token,
    }
}

impl World {
    /// A private entity titled `title`, on which Pat holds `right` (if any).
    async fn entity(&self, title: &str, right: Option<&str>) -> String {
        let mut values = vec![json!({"type": "title", "string": title})];
        if let Some(right) = right {
            values.push(json!({"type": right, "reference": self.person}));
        }
        self.app.create(&self.owner, &self.doc_type, Json::Array(values)).await
    }

    async fn pat(&self, method: &str, path: &str, body: Option<Json>) -> (u16, Json) {
        self.app.call(method, path, Some(&self.token), body).await
    }
}

#[tokio::test]
async fn rights_matrix() {
    let w = world().await;
    // Pat is an expander of this one, so may hang entities under it
    let new_parent = w.entity("new parent", Some("_expander")).await;
    let rights = [
        None,
        Some("_viewer"),
        Some("_expander"),
        Some("_editor"),
        Some("_owner"),
    ];
    for (level, right) in rights.iter().enumerate() {
        let title = format!("matrix{level}");
        let id = w.entity(&title, *right).await;
        let visible = level >= 1;
        let expected = |allowed: bool, ok: u16| {
            if !visible {
                404
            } else if allowed {
                ok
            } else {
                403
            }
        };
        let label = format!("{right:?}");

        let (status, _) = w.pat("GET", &format!("/api/demo/entity/{id}"), None).await;
        assert_eq!(status, if visible { 200 } else { 404 }, "read {label}");
        let (_, list) = w
            .pat("GET", &format!("/api/demo/entity?title.string={title}"), None)
            .await;
        assert_eq!(list["count"], visible as i64, "list {label}");
        let (_, found) = w.pat("GET", &format!("/api/demo/entity?q={title}"), None).await;
        assert_eq!(found["count"], visible as i64, "search {label}");
        let (status, _) = w.pat("GET", &format!("/api/demo/entity/{id}/history"), None).await;
        assert_eq!(status, expected(true, 200), "history {label}");

        let write = json!({"type": "note", "string": "x"});
        let (status, _) = w.pat("POST", &format!("/api/demo/entity/{id}"), Some(write)).await;
        assert_eq!(status, expected(level >= 3, 200), "write {label}");

        let child = json!([{"type": "_type", "reference": w.doc_type}, {"type": "_parent", "reference": id}]);
        let (status, _) = w.pat("POST", "/api/demo/entity", Some(child)).await;
        assert_eq!(status, if level >= 2 { 201 } else { 403 }, "create child {label}");

        let sharing = json!({"type": "_sharing", "string": "domain"});
        let (status, _) = w.pat("POST", &format!("/api/demo/entity/{id}"), Some(sharing)).await;
        assert_eq!(status, expected(level == 4, 200), "rights change {label}");

        let parent = json!({"type": "_parent", "reference": new_parent});
        let (status, _) = w.pat("POST", &format!("/api/demo/entity/{id}"), Some(parent)).await;
        assert_eq!(status, expected(level == 4, 200), "parent change {label}");

        let (status, _) = w.pat("DELETE", &format!("/api/demo/entity/{id}"), None).await;
        assert_eq!(status, expected(level == 4, 200), "delete {label}");
    }
}

#[tokio::test]
async fn parent_change_needs_expander_on_the_new_parent() {
    let w = world().await;
    let mine = w.entity("mine", Some("_owner")).await;
    let viewed = w.entity("viewed", Some("_viewer")).await;
    let (status, _) = w
        .pat(
            "POST",
            &format!("/api/demo/entity/{mine}"),
            Some(json!({"type": "_parent", "reference": viewed})),
        )
        .await;
    assert_eq!(status, 403);
    let (status, _) = w
        .pat(
            "POST",
            &format!("/api/demo/entity/{mine}"),
            Some(json!({"type": "_parent", "reference": "000000000000000000000000"})),
        )
        .await;
    assert_eq!(status, 403, "a missing parent answers like a forbidden one");
}

#[tokio::test]
async fn inheritance_over_three_levels_with_noaccess_in_the_middle() {
    let w = world().await;
    let top = w.entity("top", Some("_viewer")).await;
    let middle = w.entity("middle", None).await;
    let bottom = w.entity("bottom", None).await;
    for (child, parent) in [(&middle, &top), (&bottom, &middle)] {
        let (status, body) = w
            .app
            .post(
                &format!("/api/demo/entity/{child}"),
                &w.owner,
                json!([{"type": "_parent", "reference": parent}, {"type": "_inheritrights", "boolean": true}]),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    for id in [&top, &middle, &bottom] {
        assert_eq!(w.pat("GET", &format!("/api/demo/entity/{id}"), None).await.0, 200);
    }
    let (_, body) = w
        .app
        .post(
            &format!("/api/demo/entity/{middle}"),
            &w.owner,
            json!({"type": "_noaccess", "reference": w.person}),
        )
        .await;
    let noaccess = body["properties"][0]["_id"].as_str().unwrap().to_owned();
    assert_eq!(w.pat("GET", &format!("/api/demo/entity/{top}"), None).await.0, 200);
    assert_eq!(w.pat("GET", &format!("/api/demo/entity/{middle}"), None).await.0, 404);
    assert_eq!(w.pat("GET", &format!("/api/demo/entity/{bottom}"), None).await.0, 404);
    // lifting it shows on the grandchild in the next read
    w.app.delete(&format!("/api/demo/property/{noaccess}"), &w.owner).await;
    assert_eq!(w.pat("GET", &format!("/api/demo/entity/{bottom}"), None).await.0, 200);
    // a rights change on the top reaches the bottom
    let (_, top_doc) = w.app.get(&format!("/api/demo/entity/{top}"), &w.owner).await;
    let viewer = top_doc["entity"]["_viewer"][0]["_id"].as_str().unwrap().to_owned();
    w.app.delete(&format!("/api/demo/property/{viewer}"), &w.owner).await;
    assert_eq!(w.pat("GET", &format!("/api/demo/entity/{bottom}"), None).await.0, 404);
}

#[tokio::test]
async fn domain_entities_are_readable_by_every_person_and_show_the_domain_view() {
    let w = world().await;
    let id = w
        .app
        .create(
            &w.owner,
            &w.doc_type,
            json!([{"type": "title", "string": "shared"}, {"type": "_sharing", "string": "domain"}]),
        )
        .await;
    let (status, body) = w.pat("GET", &format!("/api/demo/entity/{id}"), None).await;
    assert_eq!(status, 200);
    // `title`'s definition is private: the domain view shows only system sharing properties
    assert!(body["entity"].get("title").is_none(), "{body}");
    assert!(body["entity"].get("_type").is_some() && body["entity"].get("_sharing").is_some());
    // the same view governs a single value: a hidden property reads as missing
    let (_, full) = w.app.get(&format!("/api/demo/entity/{id}"), &w.owner).await;
    let title = full["entity"]["title"][0]["_id"].as_str().unwrap().to_owned();
    assert_eq!(w.pat("GET", &format!("/api/demo/property/{title}"), None).await.0, 404);
    assert_eq!(
        w.pat("GET", &format!("/api/demo/property/{title}/thumbnail/50"), None)
            .await
            .0,
        404
    );
    assert_eq!(
        w.app.call("GET", &format!("/api/demo/entity/{id}"), None, None).await.0,
        404
    );
    // domain visibility alone gives no history
    assert_eq!(
        w.pat("GET", &format!("/api/demo/entity/{id}/history"), None).await.0,
        403
    );
}

#[tokio::test]
async fn sharing_is_public_domain_or_private_and_nothing_else() {
    let w = world().await;
    let id = w.entity("doc", None).await;
    let (status, body) = w
        .app
        .post(
            &format!("/api/demo/entity/{id}"),
            &w.owner,
            json!({"type": "_sharing", "string": "everyone"}),
        )
        .await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_sharing")));
    let (_, entity) = w.app.get(&format!("/api/demo/entity/{id}"), &w.owner).await;
    assert!(entity["entity"].get("_sharing").is_none());
}

#[tokio::test]
async fn anonymous_callers_see_only_public_entities() {
    let w = world().await;
    let public = w
        .app
        .create(&w.owner, &w.doc_type, json!([{"type": "_sharing", "string": "public"}]))
        .await;
    let private = w.entity("private", None).await;
    assert_eq!(
        w.app
            .call("GET", &format!("/api/demo/entity/{public}"), None, None)
            .await
            .0,
        200
    );
    assert_eq!(
        w.app
            .call("GET", &format!("/api/demo/entity/{private}"), None, None)
            .await
            .0,
        404
    );
    let (_, list) = w.app.call("GET", "/api/demo/entity", None, None).await;
    assert_eq!(list["count"], 1);
    assert_eq!(
        w.app
            .call("GET", &format!("/api/demo/entity/{public}/history"), None, None)
            .await
            .0,
        401
    );
}

#[tokio::test]
async fn a_new_right_for_a_person_replaces_their_other_right() {
    let w = world().await;
    let id = w.entity("doc", Some("_viewer")).await;
    let (status, _) = w
        .app
        .post(
            &format!("/api/demo/entity/{id}"),
            &w.owner,
            json!({"type": "_editor", "reference": w.person}),
        )
        .await;
    assert_eq!(status, 200);
    let (_, body) = w.app.get(&format!("/api/demo/entity/{id}"), &w.owner).await;
    assert!(body["entity"].get("_viewer").is_none(), "{body}");
    assert_eq!(body["entity"]["_editor"][0]["reference"], w.person.as_str());
}

#[tokio::test]
async fn a_write_that_would_leave_no_owner_is_403_and_writes_nothing() {
    let w = world().await;
    let id = w.entity("doc", None).await;
    let (status, _) = w
        .app
        .post(
            &format!("/api/demo/entity/{id}"),
            &w.owner,
            json!({"type": "_viewer", "reference": w.app.person}),
        )
        .await;
    assert_eq!(status, 403);
    let (_, body) = w.app.get(&format!("/api/demo/entity/{id}"), &w.owner).await;
    assert_eq!(body["entity"]["_owner"][0]["reference"], w.app.person.as_str());
    assert!(body["entity"].get("_viewer").is_none());
    // with a second owner the first may step down
    w.app
        .post(
            &format!("/api/demo/entity/{id}"),
            &w.owner,
            json!({"type": "_owner", "reference": w.person}),
        )
        .await;
    let (status, _) = w
        .app
        .post(
            &format!("/api/demo/entity/{id}"),
            &w.owner,
            json!({"type": "_viewer", "reference": w.app.person}),
        )
        .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn deletion_restrictions() {
    let w = world().await;
    let id = w.entity("doc", Some("_editor")).await;
    let (_, body) = w.app.get(&format!("/api/demo/entity/{id}"), &w.owner).await;
    let value = |prop: &str| body["entity"][prop][0]["_id"].as_str().unwrap().to_owned();
    // _type never, not even by the owner
    assert_eq!(
        w.app
            .delete(&format!("/api/demo/property/{}", value("_type")), &w.owner)
            .await
            .0,
        403
    );
    assert_eq!(
        w.app
            .delete(&format!("/api/demo/property/{}", value("_created")), &w.owner)
            .await
            .0,
        403
    );
    assert_eq!(
        w.app
            .delete(&format!("/api/demo/property/{}", value("_owner")), &w.owner)
            .await
            .0,
        403
    );
    // rights properties need the owner; other values the editor
    assert_eq!(
        w.pat("DELETE", &format!("/api/demo/property/{}", value("_editor")), None)
            .await
            .0,
        403
    );
    assert_eq!(
        w.pat("DELETE", &format!("/api/demo/property/{}", value("title")), None)
            .await
            .0,
        200
    );
}

#[tokio::test]
async fn billing_values_cannot_be_written_through_the_api() {
    let w = world().await;
    let (_, database) = w.app.get("/api/demo/entity?_type.string=database", &w.owner).await;
    let database = database["entities"][0]["_id"].as_str().unwrap().to_owned();
    let (status, _) = w
        .app
        .post(
            &format!("/api/demo/entity/{database}"),
            &w.owner,
            json!({"type": "billing_entities_limit", "number": 9}),
        )
        .await;
    assert_eq!(status, 403);
}

#[tokio::test]
async fn api_keys_are_added_by_the_owner_or_the_entity_itself() {
    let w = world().await;
    let id = w.entity("doc", Some("_editor")).await;
    let key = json!({"type": "service_api_key", "string": "generate"});
    assert_eq!(
        w.pat("POST", &format!("/api/demo/entity/{id}"), Some(key.clone()))
            .await
            .0,
        403
    );
    let (status, body) = w
        .pat("POST", &format!("/api/demo/entity/{}", w.person), Some(key.clone()))
        .await;
    assert_eq!(status, 200, "{body}");
    let plain = body["properties"][0]["string"].as_str().unwrap().to_owned();
    assert_eq!(plain.len(), 32);
    assert_eq!(
        w.app.post(&format!("/api/demo/entity/{id}"), &w.owner, key).await.0,
        200
    );
    // shown masked everywhere else, history included
    let (_, history) = w
        .app
        .get(&format!("/api/demo/entity/{}/history", w.person), &w.owner)
        .await;
    assert!(!history.to_string().contains(&plain));
    assert!(history.to_string().contains("***"));
}

#[tokio::test]
async fn history_lists_additions_deletions_and_overwrites_newest_first() {
    let w = world().await;
    let id = w.entity("first", None).await;
    let (_, body) = w.app.get(&format!("/api/demo/entity/{id}"), &w.owner).await;
    let title = body["entity"]["title"][0]["_id"].as_str().unwrap().to_owned();
    w.app
        .post(
            &format!("/api/demo/entity/{id}"),
            &w.owner,
            json!({"type": "title", "string": "second", "_id": title}),
        )
        .await;
    let (status, history) = w.app.get(&format!("/api/demo/entity/{id}/history"), &w.owner).await;
    assert_eq!(status, 200, "{history}");
    let changes = history["changes"].as_array().unwrap();
    assert_eq!(history["count"].as_u64().unwrap() as usize, changes.len());
    let newest = &changes[0];
    assert_eq!(newest["type"], "title");
    assert_eq!(newest["old"]["string"], "first");
    assert_eq!(newest["new"]["string"], "second");
    assert_eq!(newest["by"], w.app.person.as_str());
    assert!(
        changes
            .iter()
            .any(|c| c["type"] == "_created" && c.get("old").is_none())
    );
    let (_, page) = w
        .app
        .get(&format!("/api/demo/entity/{id}/history?limit=1&skip=1"), &w.owner)
        .await;
    assert_eq!(page["changes"].as_array().unwrap().len(), 1);
    assert_eq!(page["changes"][0], changes[1]);
}

#[tokio::test]
async fn api_keys_on_an_entity_the_caller_may_not_add_them_to_are_refused_before_hashing_while_other_writes_go_on() {
    let w = world().await;
    let hidden = w.entity("hidden", None).await;
    let edited = w.entity("edited", Some("_editor")).await;
    let keys = Json::Array(vec![json!({"type": "service_api_key", "string": "generate"}); 10]);
    let pat = &w;
    let ask = |id: String| {
        let keys = keys.clone();
        async move { pat.pat("POST", &format!("/api/demo/entity/{id}"), Some(keys)).await }
    };
    let missing = "000000000000000000000000".to_owned();
    let note = json!({"type": "title", "string": "written meanwhile"});
    let edited_path = format!("/api/demo/entity/{edited}");
    let (refused, written) = tokio::join!(
        futures_util::future::join_all([
            ask(hidden.clone()),
            ask(missing.clone()),
            ask(edited.clone()),
            ask(hidden.clone()),
            ask(edited.clone()),
        ]),
        w.pat("POST", &edited_path, Some(note)),
    );
    let not_found = (
        404,
        json!({"status": 404, "error": "not_found", "message": "Entity not found"}),
    );
    let forbidden = (
        403,
        json!({"status": 403, "error": "forbidden", "message": "Missing rights to write service_api_key"}),
    );
    assert_eq!(
        refused,
        [
            not_found.clone(),
            not_found.clone(),
            forbidden.clone(),
            not_found,
            forbidden
        ]
    );
    assert_eq!(written.0, 200, "{}", written.1);
    let (_, entity) = w.app.get(&format!("/api/demo/entity/{edited}"), &w.owner).await;
    assert!(entity["entity"].get("service_api_key").is_none(), "{entity}");
    assert_eq!(entity["entity"]["title"][1]["string"], "written meanwhile", "{entity}");
    // on themselves they may
    let two = Json::Array(vec![json!({"type": "service_api_key", "string": "generate"}); 2]);
    let (status, body) = w
        .pat("POST", &format!("/api/demo/entity/{}", w.person), Some(two))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["properties"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn sharing_written_without_an_id_replaces_the_live_value() {
    let w = world().await;
    let id = w
        .app
        .create(&w.owner, &w.doc_type, json!([{"type": "_sharing", "string": "public"}]))
        .await;
    let path = format!("/api/demo/entity/{id}");
    assert_eq!(w.app.call("GET", &path, None, None).await.0, 200);
    let (status, body) = w
        .app
        .post(&path, &w.owner, json!({"type": "_sharing", "string": "private"}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        w.app.call("GET", &path, None, None).await,
        (
            404,
            json!({"status": 404, "error": "not_found", "message": "Entity not found"})
        )
    );
    let (_, entity) = w.app.get(&path, &w.owner).await;
    let sharing = entity["entity"]["_sharing"].as_array().unwrap();
    assert_eq!(sharing.len(), 1, "{entity}");
    assert_eq!(sharing[0]["string"], "private");
    let (_, history) = w.app.get(&format!("{path}/history"), &w.owner).await;
    let change = history["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|change| change["type"] == "_sharing")
        .unwrap();
    assert_eq!(change["old"]["string"], "public", "{history}");
    assert_eq!(change["new"]["string"], "private", "{history}");

    // two in one write, or on creation, are refused and change nothing
    let two = json!([{"type": "_sharing", "string": "public"}, {"type": "_sharing", "string": "domain"}]);
    let refusal = (
        400,
        json!({"status": 400, "error": "invalid_value", "message": "An entity has exactly one _sharing; write one value"}),
    );
    assert_eq!(w.app.post(&path, &w.owner, two.clone()).await, refusal);
    let mut create = vec![json!({"type": "_type", "reference": w.doc_type})];
    create.extend(two.as_array().unwrap().iter().cloned());
    assert_eq!(
        w.app.post("/api/demo/entity", &w.owner, Json::Array(create)).await,
        refusal
    );
    assert_eq!(w.app.get(&path, &w.owner).await.1, entity);
}

#[tokio::test]
async fn inheritrights_written_without_an_id_replaces_the_live_value() {
    let w = world().await;
    let top = w.entity("top", Some("_viewer")).await;
    let child = w.entity("child", None).await;
    let path = format!("/api/demo/entity/{child}");
    let (status, body) = w
        .app
        .post(
            &path,
            &w.owner,
            json!([{"type": "_parent", "reference": top}, {"type": "_inheritrights", "boolean": true}]),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(w.pat("GET", &path, None).await.0, 200);

    let (status, body) = w
        .app
        .post(&path, &w.owner, json!({"type": "_inheritrights", "boolean": false}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        w.pat("GET", &path, None).await,
        (
            404,
            json!({"status": 404, "error": "not_found", "message": "Entity not found"})
        )
    );
    let (_, entity) = w.app.get(&path, &w.owner).await;
    let inherit = entity["entity"]["_inheritrights"].as_array().unwrap();
    assert_eq!(inherit.len(), 1, "{entity}");
    assert_eq!(inherit[0]["boolean"], false);
    let (_, history) = w.app.get(&format!("{path}/history"), &w.owner).await;
    let change = history["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|change| change["type"] == "_inheritrights")
        .unwrap();
    assert_eq!(
        (&change["old"]["boolean"], &change["new"]["boolean"]),
        (&json!(true), &json!(false)),
        "{history}"
    );
    // and back
    w.app
        .post(&path, &w.owner, json!({"type": "_inheritrights", "boolean": true}))
        .await;
    assert_eq!(w.pat("GET", &path, None).await.0, 200);
}

#[tokio::test]
async fn removing_a_parent_value_needs_expander_on_that_parent() {
    let w = world().await;
    let parent = w.entity("parent", Some("_viewer")).await;
    let other = w.entity("other", Some("_expander")).await;
    let child = w.entity("child", Some("_owner")).await;
    let path = format!("/api/demo/entity/{child}");
    let (_, body) = w
        .app
        .post(&path, &w.owner, json!({"type": "_parent", "reference": parent}))
        .await;
    let value = body["properties"][0]["_id"].as_str().unwrap().to_owned();
    let (_, before) = w.app.get(&path, &w.owner).await;
    let refusal = (
        403,
        json!({"status": 403, "error": "forbidden", "message": "Removing _parent needs _expander on the parent entity"}),
    );
    // Pat owns the child but only views the parent: neither deletes nor overwrites
    assert_eq!(
        w.pat("DELETE", &format!("/api/demo/property/{value}"), None).await,
        refusal
    );
    let moved = json!({"type": "_parent", "reference": other, "_id": value});
    assert_eq!(w.pat("POST", &path, Some(moved.clone())).await, refusal);
    assert_eq!(w.app.get(&path, &w.owner).await.1, before);

    // with _expander on the parent both are allowed
    w.app
        .post(
            &format!("/api/demo/entity/{parent}"),
            &w.owner,
            json!({"type": "_expander", "reference": w.person}),
        )
        .await;
    let (status, body) = w.pat("POST", &path, Some(moved)).await;
    assert_eq!(status, 200, "{body}");
    let value = body["properties"][0]["_id"].as_str().unwrap().to_owned();
    let (_, entity) = w.app.get(&path, &w.owner).await;
    assert_eq!(entity["entity"]["_parent"][0]["reference"], other.as_str(), "{entity}");
    let (status, body) = w.pat("DELETE", &format!("/api/demo/property/{value}"), None).await;
    assert_eq!(status, 200, "{body}");
    let (_, entity) = w.app.get(&path, &w.owner).await;
    assert!(entity["entity"].get("_parent").is_none(), "{entity}");
}

#[tokio::test]
async fn a_parent_value_naming_a_deleted_parent_is_removed_by_the_child_owner_alone() {
    let w = world().await;
    let parent = w.entity("parent", Some("_viewer")).await;
    let child = w.entity("child", Some("_owner")).await;
    let (_, body) = w
        .app
        .post(
            &format!("/api/demo/entity/{child}"),
            &w.owner,
            json!({"type": "_parent", "reference": parent}),
        )
        .await;
    let value = body["properties"][0]["_id"].as_str().unwrap().to_owned();
    let (status, _) = w.pat("DELETE", &format!("/api/demo/property/{value}"), None).await;
    assert_eq!(status, 403);
    w.app.delete(&format!("/api/demo/entity/{parent}"), &w.owner).await;
    let (status, body) = w.pat("DELETE", &format!("/api/demo/property/{value}"), None).await;
    assert_eq!((status, body), (200, json!({"deleted": true})));
}
