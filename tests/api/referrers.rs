//! Referrers: `_reference.<field>` filters on the reference values of an
//! entity's own (not system) properties, each carrying its property's name
//! as `property_type`, as the original web app's entity page asks for them
//! (`_reference.reference=ID&_reference.property_type.ne=_parent&group=_type.reference&props=_type`).

use crate::support;

use std::collections::BTreeSet;

use serde_json::{Value as Json, json};
use support::TestApp;

struct Library {
    app: TestApp,
    owner: String,
    reader: String,
    reader_id: String,
    /// The entity the others refer to.
    target: String,
    book_type: String,
    note_type: String,
    /// Public book referring to the target through `writer` (shown publicly).
    public_writer: String,
    /// Public book referring to it through `reviewer` (no view shows it).
    public_reviewer: String,
    /// Private book (the reader has no right on it) referring through `writer`.
    private_writer: String,
    /// A private note (of a type that defines nothing) the reader views,
    /// referring through `writer`.
    note: String,
    /// A child of the target (its `_parent`), referring to nothing else.
    child: String,
}

/// A public `book` type defining `writer` (public) and `reviewer` (private),
/// a `note` type, and the entities of [`Library`].
async fn library() -> Library {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (reader_id, key) = app.add_person(&owner, "Reader").await;
    let reader = app.token_for(&key).await;
    let sharing = |level: &str| json!({"type": "_sharing", "string": level});
    let author_type = app.create_type(&owner, "author").await;
    let target = app
        .create(
            &owner,
            &author_type,
            json!([{"type": "name", "string": "Tolkien"}, sharing("public")]),
        )
        .await;
    let book_type = app.create_type(&owner, "book").await;
    app.post(&format!("/api/demo/entity/{book_type}"), &owner, sharing("public"))
        .await;
    app.define(&owner, &book_type, "writer", "reference", json!([sharing("public")]))
        .await;
    app.define(&owner, &book_type, "reviewer", "reference", json!([])).await;
    let note_type = app.create_type(&owner, "note").await;
    let refer = |prop: &str| json!({"type": prop, "reference": target});
    let public_writer = app
        .create(&owner, &book_type, json!([refer("writer"), sharing("public")]))
        .await;
    let public_reviewer = app
        .create(&owner, &book_type, json!([refer("reviewer"), sharing("public")]))
        .await;
    let private_writer = app.create(&owner, &book_type, json!([refer("writer")])).await;
    let note = app
        .create(
            &owner,
            &note_type,
            json!([refer("writer"), {"type": "_viewer", "reference": reader_id}]),
        )
        .await;
    let child = app.create(&owner, &note_type, json!([refer("_parent")])).await;
    Library {
        app,
        owner,
        reader,
        reader_id,
        target,
        book_type,
        note_type,
        public_writer,
        public_reviewer,
        private_writer,
        note,
        child,
    }
}

impl Library {
    async fn answer(&self, token: Option<&str>, query: &str) -> Json {
        let (status, body) = self
            .app
            .call("GET", &format!("/api/demo/entity?{query}"), token, None)
            .await;
        assert_eq!(status, 200, "{query}: {body}");
        body
    }

    /// The ids a list query answers, and its `count`.
    async fn ids(&self, token: Option<&str>, query: &str) -> (BTreeSet<String>, u64) {
        let body = self.answer(token, query).await;
        let ids = body["entities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|entity| entity["_id"].as_str().unwrap().to_owned())
            .collect();
        (ids, body["count"].as_u64().unwrap())
    }

    fn set(&self, ids: &[&String]) -> BTreeSet<String> {
        ids.iter().map(|id| (*id).clone()).collect()
    }

    /// The web app's referrer query for `id`.
    fn app_query(id: &str) -> String {
        format!("_reference.reference={id}&_reference.property_type.ne=_parent&group=_type.reference&props=_type")
    }
}

#[actix_rt::test]
async fn referrers_of_an_entity_are_listed_through_a_non_system_property() {
    let lib = library().await;
    let owner = Some(lib.owner.as_str());
    let target = &lib.target;
    let all = lib.set(&[&lib.public_writer, &lib.public_reviewer, &lib.private_writer, &lib.note]);
    assert_eq!(
        lib.ids(owner, &format!("_reference.reference={target}")).await,
        (all.clone(), 4)
    );
    assert_eq!(
        lib.ids(owner, &format!("_reference.reference.in={target},{}", lib.book_type))
            .await,
        (all.clone(), 4)
    );
    // positive conditions on one field hold for one value; each field may
    // be met by any reference value, as the original's array fields are
    let writers = lib.set(&[&lib.public_writer, &lib.private_writer, &lib.note]);
    let query = format!("_reference.reference={target}&_reference.property_type=writer");
    assert_eq!(lib.ids(owner, &query).await.0, writers);
    let query = format!("_reference.reference={target}&_reference.property_type.in=reviewer,editor");
    assert_eq!(lib.ids(owner, &query).await.0, lib.set(&[&lib.public_reviewer]));
    let query = format!("_reference.reference={target}&_reference.property_type.regex=/^WRI/i&_type.string=book");
    assert_eq!(
        lib.ids(owner, &query).await.0,
        lib.set(&[&lib.public_writer, &lib.private_writer])
    );
    // `ne` as any `ne`: the entities holding no such reference value at all
    let query = format!("_reference.reference={target}&_reference.property_type.ne=reviewer");
    assert_eq!(lib.ids(owner, &query).await.0, writers);
    let (no_references, _) = lib.ids(owner, "_reference.reference.exists=false&limit=1000").await;
    assert!(no_references.contains(&lib.child) && no_references.contains(target));
    assert!(no_references.is_disjoint(&all));
    let (with_references, _) = lib.ids(owner, "_reference.reference.exists=true").await;
    assert_eq!(
        with_references, all,
        "no seeded entity refers through its own properties"
    );
    // a deleted reference value no longer refers
    let (status, body) = lib.app.get(&format!("/api/demo/entity/{}", lib.note), &lib.owner).await;
    assert_eq!(status, 200, "{body}");
    let value = body["entity"]["writer"][0]["_id"].as_str().unwrap().to_owned();
    let (status, body) = lib.app.delete(&format!("/api/demo/property/{value}"), &lib.owner).await;
    assert_eq!(status, 200, "{body}");
    let (found, count) = lib.ids(owner, &format!("_reference.reference={target}")).await;
    assert_eq!((found.contains(&lib.note), count), (false, 3));
}

#[actix_rt::test]
async fn parent_references_are_not_listed() {
    let lib = library().await;
    let owner = Some(lib.owner.as_str());
    let (found, _) = lib.ids(owner, &format!("_reference.reference={}", lib.target)).await;
    assert!(!found.contains(&lib.child), "the child refers through `_parent` only");
    let (under_target, _) = lib.ids(owner, &format!("_parent.reference={}", lib.target)).await;
    assert_eq!(under_target, lib.set(&[&lib.child]));
    // every entity refers to its owner through `_owner` and `_created`
    let (status, body) = lib.app.get("/api/demo/entity?limit=1", &lib.owner).await;
    assert_eq!(status, 200, "{body}");
    let owner_id = body["entities"][0]["_owner"][0]["reference"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(lib.ids(owner, &format!("_reference.reference={owner_id}")).await.1, 0);
    for query in [
        "_reference.property_type=_parent",
        "_reference.property_type.in=_owner,_type",
    ] {
        assert_eq!(lib.ids(owner, query).await.1, 0, "{query}");
    }
    // `property_type.ne=_parent` holds for every entity, as any `ne` of a value none has
    let (everything, total) = lib.ids(owner, "limit=1000").await;
    assert_eq!(
        lib.ids(owner, "_reference.property_type.ne=_parent&limit=1000").await,
        (everything, total)
    );
}

#[actix_rt::test]
async fn the_group_by_type_answer_is_what_the_web_app_reads() {
    let lib = library().await;
    let body = lib.answer(Some(&lib.owner), &Library::app_query(&lib.target)).await;
    assert_eq!(body["count"], 2, "{body}");
    // the app reads each row's `_type` reference (`getValue(x._type, 'reference')`) and `_count`
    let rows: BTreeSet<(String, u64)> = body["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            assert!(row.get("_id").is_none(), "group rows have no _id: {row}");
            assert!(row["_type"][0]["string"].is_string(), "the type's name: {row}");
            (
                row["_type"][0]["reference"].as_str().unwrap().to_owned(),
                row["_count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        BTreeSet::from([(lib.book_type.clone(), 3), (lib.note_type.clone(), 1)])
    );
    // the list the app opens for one of those types
    let query = format!(
        "_reference.reference={}&_type.reference={}&props=name,_owner&sort=name.string&limit=20",
        lib.target, lib.book_type
    );
    let (found, count) = lib.ids(Some(&lib.owner), &query).await;
    assert_eq!(count, 3);
    assert!(!found.contains(&lib.note));
}

#[actix_rt::test]
async fn a_referrer_the_caller_cannot_read_is_not_listed() {
    let lib = library().await;
    let reader = Some(lib.reader.as_str());
    let query = format!("_reference.reference={}", lib.target);
    let (found, count) = lib.ids(reader, &query).await;
    assert_eq!((found, count), (lib.set(&[&lib.public_writer, &lib.note]), 2));
    let body = lib.answer(reader, &Library::app_query(&lib.target)).await;
    let counts: Vec<(String, u64)> = body["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["_type"][0]["reference"].as_str().unwrap().to_owned(),
                row["_count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(counts.len(), 2, "{body}");
    assert!(counts.contains(&(lib.book_type.clone(), 1)) && counts.contains(&(lib.note_type.clone(), 1)));
    // `_noaccess` takes a readable referrer away
    let (status, body) = lib
        .app
        .post(
            &format!("/api/demo/entity/{}", lib.note),
            &lib.owner,
            json!({"type": "_noaccess", "reference": lib.reader_id}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(lib.ids(reader, &query).await, (lib.set(&[&lib.public_writer]), 1));
}

#[actix_rt::test]
async fn a_referrer_through_a_property_hidden_from_the_callers_view_is_not_listed() {
    let lib = library().await;
    let query = format!("_reference.reference={}", lib.target);
    // both books are public; only `writer` is shown publicly, `reviewer` in no view
    assert_eq!(lib.ids(None, &query).await, (lib.set(&[&lib.public_writer]), 1));
    let (found, _) = lib.ids(Some(&lib.reader), &query).await;
    assert!(!found.contains(&lib.public_reviewer), "{found:?}");
    let body = lib.answer(None, &Library::app_query(&lib.target)).await;
    assert_eq!(body["count"], 1, "{body}");
    assert_eq!(body["entities"][0]["_count"], 1, "{body}");
    let query = format!("_reference.reference={}&_reference.property_type=reviewer", lib.target);
    assert_eq!(lib.ids(None, &query).await.1, 0);
    assert_eq!(lib.ids(Some(&lib.reader), &query).await.1, 0);
}

#[actix_rt::test]
async fn an_unknown_field_of_reference_is_invalid_query() {
    let lib = library().await;
    for key in [
        "_reference.string",
        "_reference.entity_type",
        "_reference.refrence",
        "_reference._id.exists",
    ] {
        let (status, body) = lib
            .app
            .call("GET", &format!("/api/demo/entity?{key}=true"), Some(&lib.owner), None)
            .await;
        assert_eq!(
            (status, &body["error"]),
            (400, &json!("invalid_query")),
            "{key}: {body}"
        );
        assert_eq!(body["status"], 400, "{body}");
        assert!(body["message"].as_str().unwrap().contains("_reference"), "{body}");
    }
    // a malformed id is refused as in any reference filter
    let (status, body) = lib
        .app
        .call("GET", "/api/demo/entity?_reference.reference=nope", None, None)
        .await;
    assert_eq!((status, &body["error"]), (400, &json!("invalid_id")), "{body}");
}
