//! The maintained projection equals one rebuilt from the value rows, after a
//! random sequence of writes through the API.

use crate::support;

use eds::db::projection::{TypeCache, rebuild};
use eds::db::values;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value as Json, json};
use support::TestApp;

#[tokio::test]
async fn maintained_projection_equals_a_rebuild_from_value_rows() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (other, _) = app.add_person(&owner, "Other").await;
    let thing = app.create_type(&owner, "thing").await;
    app.post(
        &format!("/api/demo/entity/{thing}"),
        &owner,
        json!({"type": "_sharing", "string": "public"}),
    )
    .await;
    let searchable = json!([{"type": "search", "boolean": true}, {"type": "_sharing", "string": "public"}]);
    app.define(&owner, &thing, "name", "string", searchable.clone()).await;
    app.define(
        &owner,
        &thing,
        "link",
        "reference",
        json!([{"type": "search", "boolean": true}, {"type": "_sharing", "string": "domain"}]),
    )
    .await;
    app.define(&owner, &thing, "size", "number", searchable).await;
    let mut rng = StdRng::seed_from_u64(20261121);
    let mut entities: Vec<String> = Vec::new();
    for step in 0..150 {
        let choice = if entities.len() < 3 { 0 } else { rng.gen_range(0..9) };
        match choice {
            0 => {
                let id = app
                    .create(&owner, &thing, json!([{"type": "name", "string": format!("n{step}")}]))
                    .await;
                entities.push(id);
            }
            1 | 2 => {
                let id = &entities[rng.gen_range(0..entities.len())];
                let value = match rng.gen_range(0..4) {
                    0 => json!({"type": "name", "string": format!("renamed {step}")}),
                    1 => json!({"type": "size", "number": rng.gen_range(0..100)}),
                    2 => json!({"type": "link", "reference": entities[rng.gen_range(0..entities.len())]}),
                    _ => json!({"type": "day", "date": "2025-01-02"}),
                };
                app.post(&format!("/api/demo/entity/{id}"), &owner, value).await;
            }
            3 => {
                // overwrite a random live non-system value by its _id
                let id = &entities[rng.gen_range(0..entities.len())];
                let (_, body) = app.get(&format!("/api/demo/entity/{id}"), &owner).await;
                if let Some(value) = body["entity"]["name"].get(0) {
                    let replaced = value["_id"].clone();
                    app.post(
                        &format!("/api/demo/entity/{id}"),
                        &owner,
                        json!({"type": "name", "string": format!("over {step}"), "_id": replaced}),
                    )
                    .await;
                }
            }
            4 => {
                let id = &entities[rng.gen_range(0..entities.len())];
                let (_, body) = app.get(&format!("/api/demo/entity/{id}"), &owner).await;
                let user_props: Vec<&Json> = body["entity"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .filter(|(key, _)| !key.starts_with('_'))
                    .flat_map(|(_, values)| values.as_array().unwrap())
                    .collect();
                if !user_props.is_empty() {
                    let value = user_props[rng.gen_range(0..user_props.len())]["_id"].as_str().unwrap();
                    app.delete(&format!("/api/demo/property/{value}"), &owner).await;
                }
            }
            5 => {
                let child = &entities[rng.gen_range(0..entities.len())];
                let parent = &entities[rng.gen_range(0..entities.len())];
                app.post(
                    &format!("/api/demo/entity/{child}"),
                    &owner,
                    json!([{"type": "_parent", "reference": parent}, {"type": "_inheritrights", "boolean": true}]),
                )
                .await;
            }
            6 => {
                let id = &entities[rng.gen_range(0..entities.len())];
                let right = ["_viewer", "_editor", "_expander", "_noaccess"][rng.gen_range(0..4)];
                app.post(
                    &format!("/api/demo/entity/{id}"),
                    &owner,
                    json!({"type": right, "reference": other}),
                )
                .await;
            }
            7 => {
                let id = &entities[rng.gen_range(0..entities.len())];
                let sharing = ["public", "domain", "private"][rng.gen_range(0..3)];
                app.post(
                    &format!("/api/demo/entity/{id}"),
                    &owner,
                    json!({"type": "_sharing", "string": sharing}),
                )
                .await;
            }
            _ => {
                if rng.gen_bool(0.2) {
                    let id = entities.remove(rng.gen_range(0..entities.len()));
                    app.delete(&format!("/api/demo/entity/{id}"), &owner).await;
                }
            }
        }
    }

    let mut conn = app.pool.get().await.unwrap();
    let mut checked = 0;
    for id in &entities {
        let stored = values::live_entity(&mut conn, "demo", id, false)
            .await
            .unwrap()
            .unwrap();
        let rows = values::live_values(&mut conn, "demo", id).await.unwrap();
        let (rebuilt, lists) = rebuild(&mut conn, &mut TypeCache::default(), "demo", id, &rows)
            .await
            .unwrap();
        assert_eq!(stored.doc, rebuilt.doc, "{id}");
        assert_eq!(stored.name, rebuilt.name);
        assert_eq!(stored.type_id, rebuilt.type_id);
        assert_eq!(stored.parent_ids, rebuilt.parent_ids);
        assert_eq!(stored.sharing(), rebuilt.sharing);
        assert_eq!(stored.lists(), lists, "{id}: effective rights");
        assert_eq!(
            (stored.public_props, stored.domain_props),
            (rebuilt.public_props, rebuilt.domain_props)
        );
        let search: (String, String, String) = {
            use diesel::prelude::*;
            use diesel_async::RunQueryDsl;
            use eds::db::schema::entities::dsl;
            dsl::entities
                .filter(dsl::db.eq("demo"))
                .filter(dsl::id.eq(id))
                .select((dsl::search_private, dsl::search_domain, dsl::search_public))
                .first(&mut conn)
                .await
                .unwrap()
        };
        assert_eq!(
            search,
            (rebuilt.search_private, rebuilt.search_domain, rebuilt.search_public),
            "{id}: search"
        );
        checked += 1;
    }
    assert!(checked >= 3);
}

/// A type with more entities than a write re-projects itself, each public,
/// with a `title` shown in the domain view; answers the type, the
/// definition of `title` and the entities.
async fn large_type(app: &TestApp, owner: &str) -> (String, String, Vec<String>) {
    let note = app.create_type(owner, "note").await;
    let public = json!({"type": "_sharing", "string": "public"});
    let (status, body) = app
        .post(&format!("/api/demo/entity/{note}"), owner, public.clone())
        .await;
    assert_eq!(status, 200, "{body}");
    let domain = json!([{"type": "_sharing", "string": "domain"}]);
    let title = app.define(owner, &note, "title", "string", domain).await;
    let count = eds::db::reprojection_queue::INLINE_MEMBERS + 1;
    let mut notes = Vec::with_capacity(count);
    for chunk in (0..count).collect::<Vec<_>>().chunks(32) {
        let created = chunk.iter().map(|n| {
            app.create(
                owner,
                &note,
                json!([{"type": "title", "string": format!("note {n}")}, public]),
            )
        });
        notes.extend(futures_util::future::join_all(created).await);
    }
    (note, title, notes)
}

/// How many notes the public view shows with a title.
async fn publicly_titled(app: &TestApp) -> i64 {
    let (status, body) = app
        .call(
            "GET",
            "/api/demo/entity?_type.string=note&title.string.exists=true&limit=1",
            None,
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body["count"].as_i64().unwrap()
}

/// A transaction on a connection of its own holding the row of `entity`.
async fn hold(app: &TestApp, entity: &str) -> diesel_async::AsyncPgConnection {
    use diesel_async::{AsyncConnection, RunQueryDsl};
    let mut conn = diesel_async::AsyncPgConnection::establish(&app.database_url)
        .await
        .unwrap();
    diesel::sql_query("BEGIN").execute(&mut conn).await.unwrap();
    diesel::sql_query("SELECT 1 FROM entities WHERE db = 'demo' AND id = $1 FOR UPDATE")
        .bind::<diesel::sql_types::Text, _>(entity)
        .execute(&mut conn)
        .await
        .unwrap();
    conn
}

async fn release(mut conn: diesel_async::AsyncPgConnection) {
    use diesel_async::RunQueryDsl;
    diesel::sql_query("COMMIT").execute(&mut conn).await.unwrap();
}

#[tokio::test]
async fn a_definition_shown_more_widely_reprojects_a_large_type_in_the_background() {
    let app = TestApp::start_with(support::Storage::Local, &[("actors.formula_poll_ms", "10".to_owned())]).await;
    let owner = app.owner_token().await;
    let (_, title, notes) = large_type(&app, &owner).await;
    assert_eq!(publicly_titled(&app).await, 0, "the domain view's title is not public");

    // A write holding one note would hold up a re-projection inside the
    // definition's write: the write answers regardless.
    let held = hold(&app, &notes[0]).await;
    let widen = json!({"type": "_sharing", "string": "public"});
    let (status, body) = app.post(&format!("/api/demo/entity/{title}"), &owner, widen).await;
    assert_eq!(status, 200, "{body}");
    let everyone_else = i64::try_from(notes.len() - 1).unwrap();
    let mut shown = 0;
    for _ in 0..2000 {
        shown = publicly_titled(&app).await;
        if shown >= everyone_else {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(shown, everyone_else, "every note but the held one is re-projected");
    let (_, held_note) = app
        .call("GET", &format!("/api/demo/entity/{}", notes[0]), None, None)
        .await;
    assert!(held_note["entity"].get("title").is_none(), "{held_note}");

    release(held).await;
    app.settle().await;
    assert_eq!(publicly_titled(&app).await, everyone_else + 1);
    let (_, note) = app
        .call("GET", &format!("/api/demo/entity/{}", notes[0]), None, None)
        .await;
    assert_eq!(note["entity"]["title"][0]["string"], "note 0", "{note}");
}

#[tokio::test]
async fn a_definition_shown_more_narrowly_holds_for_a_large_type_at_commit() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (_, title, notes) = large_type(&app, &owner).await;
    let widen = json!({"type": "_sharing", "string": "public"});
    app.post(&format!("/api/demo/entity/{title}"), &owner, widen).await;
    app.settle().await;
    assert_eq!(publicly_titled(&app).await, i64::try_from(notes.len()).unwrap());

    // The narrowing re-projects every note in its own transaction: it waits
    // for a write holding one, and answers with all of them narrowed.
    let held = hold(&app, &notes[notes.len() / 2]).await;
    let narrow = json!({"type": "_sharing", "string": "domain"});
    let path = format!("/api/demo/entity/{title}");
    let narrowing = app.post(&path, &owner, narrow);
    tokio::pin!(narrowing);
    let waited = tokio::time::timeout(std::time::Duration::from_millis(500), &mut narrowing).await;
    assert!(waited.is_err(), "the narrowing waits for the held note");
    release(held).await;
    let (status, body) = narrowing.await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        publicly_titled(&app).await,
        0,
        "no note shows its title publicly after the commit"
    );
    let mut conn = app.pool.get().await.unwrap();
    assert_eq!(eds::db::reprojection_queue::pending(&mut conn).await.unwrap(), 0);
}

/// How many notes the owner finds searching for `word`.
async fn found(app: &TestApp, owner: &str, word: &str) -> i64 {
    let path = format!("/api/demo/entity?_type.string=note&q={word}&limit=1");
    let (status, body) = app.call("GET", &path, Some(owner), None).await;
    assert_eq!(status, 200, "{body}");
    body["count"].as_i64().unwrap()
}

#[tokio::test]
async fn a_definition_made_searchable_reprojects_a_large_types_search_text_in_the_background() {
    let app = TestApp::start_with(support::Storage::Local, &[("actors.formula_poll_ms", "10".to_owned())]).await;
    let owner = app.owner_token().await;
    let (_, title, notes) = large_type(&app, &owner).await;
    assert_eq!(found(&app, &owner, "note").await, 0, "titles are not searched yet");

    let generation = || async {
        let mut conn = app.pool.get().await.unwrap();
        eds::db::generation::generation(&mut conn, "demo")
            .await
            .unwrap()
            .unwrap()
    };
    let before = generation().await;
    // Only the notes' search text changes: their documents and views stay
    // as they are, and the background pass must not take them as unchanged.
    let searched = json!({"type": "search", "boolean": true});
    let (status, body) = app.post(&format!("/api/demo/entity/{title}"), &owner, searched).await;
    assert_eq!(status, 200, "{body}");
    app.settle().await;
    assert_eq!(found(&app, &owner, "note").await, i64::try_from(notes.len()).unwrap());
    // the write bumped the generation once, then each batch that rewrote rows
    let batches = notes.len().div_ceil(eds::db::reprojection_queue::BATCH);
    assert_eq!(generation().await, before + 1 + i64::try_from(batches).unwrap());
}
