//! What a database's writer keeps between its transactions: the types it
//! loaded, the persons it checked, held while the database's generation is
//! the one its last transaction left, and dropped when any other
//! transaction (another process's writer, or one outside every writer)
//! changed an entity since. A writer's transaction bumps the generation
//! once, whatever it writes. Within a transaction, new entities are stored
//! together at its end.

use crate::support;

use diesel::sql_types::{BigInt, Text};
use diesel_async::RunQueryDsl;
use eds::auth::api_key::GeneratedKey;
use eds::model::value::parse_body;
use eds::write::{WriteOp, WriteRequest, WriterCache, apply_batch};
use serde_json::{Value as Json, json};
use support::TestApp;

fn create(app: &TestApp, values: Json) -> (WriteRequest, Vec<GeneratedKey>, tracing::Span) {
    create_as(&app.person, values)
}

fn create_as(actor: &str, values: Json) -> (WriteRequest, Vec<GeneratedKey>, tracing::Span) {
    let request = WriteRequest {
        db: "demo".into(),
        actor: actor.to_owned(),
        op: WriteOp::CreateEntity {
            values: parse_body(values.to_string().as_bytes()).unwrap(),
        },
        idempotency: None,
    };
    (request, Vec::new(), tracing::Span::none())
}

async fn generation(app: &TestApp) -> i64 {
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = BigInt)]
        generation: i64,
    }
    let mut conn = app.pool.get().await.unwrap();
    diesel::sql_query("SELECT generation FROM databases WHERE name = 'demo'")
        .get_result::<Row>(&mut conn)
        .await
        .unwrap()
        .generation
}

/// The error code of each outcome, `ok` for a write that passed.
fn codes<T>(outcomes: &[Result<T, eds::error::ApiError>]) -> Vec<String> {
    outcomes
        .iter()
        .map(|outcome| match outcome {
            Ok(_) => "ok".to_owned(),
            Err(error) => error.code.as_str().to_owned(),
        })
        .collect()
}

#[tokio::test]
async fn a_batch_of_writes_bumps_the_generation_once() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let book = app.create_type(&token, "book").await;
    let before = generation(&app).await;
    let books = (0..3)
        .map(|n| {
            create(
                &app,
                json!([{"type": "_type", "reference": book}, {"type": "name", "string": n.to_string()}]),
            )
        })
        .collect();
    let outcomes = apply_batch(&app.pool, books, &mut WriterCache::default()).await;
    assert_eq!(codes(&outcomes), ["ok", "ok", "ok"]);
    assert_eq!(generation(&app).await, before + 1);
}

#[tokio::test]
async fn a_definition_added_by_another_writer_governs_the_next_batch() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let book = app.create_type(&token, "book").await;
    let mut known = WriterCache::default();
    // the writer learns `book` without an `isbn` definition
    let first = vec![create(
        &app,
        json!([{"type": "_type", "reference": book}, {"type": "isbn", "string": "x"}]),
    )];
    assert_eq!(codes(&apply_batch(&app.pool, first, &mut known).await), ["ok"]);

    // the server's own writer (as another process's would) defines it
    app.define(&token, &book, "isbn", "number", json!([])).await;
    let next = vec![create(
        &app,
        json!([{"type": "_type", "reference": book}, {"type": "isbn", "string": "x"}]),
    )];
    assert_eq!(
        codes(&apply_batch(&app.pool, next, &mut known).await),
        ["invalid_value"]
    );
}

#[tokio::test]
async fn a_definition_changed_outside_every_writer_governs_the_next_batch() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let book = app.create_type(&token, "book").await;
    let pages = app.define(&token, &book, "pages", "string", json!([])).await;
    let mut known = WriterCache::default();
    let write = || {
        vec![create(
            &app,
            json!([{"type": "_type", "reference": book}, {"type": "pages", "string": "many"}]),
        )]
    };
    assert_eq!(codes(&apply_batch(&app.pool, write(), &mut known).await), ["ok"]);
    // kept: a second batch passes as the first did
    assert_eq!(codes(&apply_batch(&app.pool, write(), &mut known).await), ["ok"]);

    // a transaction of no writer (as a background re-projection) changes
    // the definition's projection: its commit bumps the generation
    let mut conn = app.pool.get().await.unwrap();
    diesel::sql_query(
        "UPDATE entities SET doc = jsonb_set(doc, '{type}', '[{\"string\": \"number\"}]') \
         WHERE db = 'demo' AND id = $1",
    )
    .bind::<Text, _>(&pages)
    .execute(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        codes(&apply_batch(&app.pool, write(), &mut known).await),
        ["invalid_value"]
    );
}

#[tokio::test]
async fn new_entities_of_several_authors_in_one_batch_are_each_stored_as_their_authors() {
    use eds::write::WriteOutcome;
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let book = app.create_type(&token, "book").await;
    let (other, _) = app.add_person(&token, "Other").await;
    let owner = app.person.clone();
    let authors = [&owner, &other, &owner, &owner];
    let books = authors
        .iter()
        .enumerate()
        .map(|(n, author)| {
            create_as(
                author,
                json!([{"type": "_type", "reference": book}, {"type": "name", "string": n.to_string()}]),
            )
        })
        .collect();
    let outcomes = apply_batch(&app.pool, books, &mut WriterCache::default()).await;
    let ids: Vec<String> = outcomes
        .iter()
        .map(|outcome| match outcome.as_ref().unwrap() {
            WriteOutcome::Written { entity_id, .. } => entity_id.clone(),
            other => panic!("{other:?}"),
        })
        .collect();

    #[derive(diesel::QueryableByName)]
    struct Stored {
        #[diesel(sql_type = Text)]
        created_by: String,
        #[diesel(sql_type = Text)]
        name: String,
        #[diesel(sql_type = Text)]
        owner: String,
    }
    let mut conn = app.pool.get().await.unwrap();
    for (n, (id, author)) in ids.iter().zip(authors).enumerate() {
        let stored: Stored = diesel::sql_query(
            "SELECT e.created_by, e.name, o.reference AS owner FROM entities e JOIN property_values o \
             ON o.db = e.db AND o.entity_id = e.id AND o.prop = '_owner' WHERE e.db = 'demo' AND e.id = $1",
        )
        .bind::<Text, _>(id)
        .get_result(&mut conn)
        .await
        .unwrap();
        assert_eq!(
            (stored.created_by.as_str(), stored.name, stored.owner.as_str()),
            (author.as_str(), n.to_string(), author.as_str())
        );
    }
}
