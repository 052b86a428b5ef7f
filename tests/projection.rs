//! The maintained projection equals one rebuilt from the value rows, after a
//! random sequence of writes through the API.

mod common;

use common::TestApp;
use eds::db::projection::{TypeCache, rebuild};
use eds::db::values;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value as Json, json};

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
