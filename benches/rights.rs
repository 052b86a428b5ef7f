//! Rights inheritance at scale: a rights change on a parent with 10,000
//! inheriting children, timed until every child shows it.
//!
//! `cargo bench --bench rights` (needs the PostgreSQL server binaries, as `make test`).

#[path = "../tests/api/support/mod.rs"]
mod support;

use std::time::Instant;

use eds::model::value::{Value, ValueInput};
use eds::write::{WriteOp, WriteRequest, apply};
use serde_json::json;
use support::TestApp;

/// Children under the parent (`EDS_BENCH_CHILDREN` overrides it).
fn children_count() -> usize {
    std::env::var("EDS_BENCH_CHILDREN")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000)
}

#[tokio::main]
async fn main() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let kind = app.create_type(&owner, "folder").await;
    let parent = app.create(&owner, &kind, json!([])).await;
    let (reader, reader_key) = app.add_person(&owner, "Reader").await;
    let reader_token = app.token_for(&reader_key).await;

    let count = children_count();
    let started = Instant::now();
    let mut children = Vec::with_capacity(count);
    for _ in 0..count {
        let outcome = apply(
            &app.pool,
            WriteRequest {
                db: "demo".into(),
                actor: app.person.clone(),
                op: WriteOp::CreateEntity {
                    values: vec![
                        ValueInput::new("_type", Value::Reference(kind.clone())),
                        ValueInput::new("_parent", Value::Reference(parent.clone())),
                        ValueInput::new("_inheritrights", Value::Boolean(true)),
                    ],
                },
                idempotency: None,
            },
        )
        .await
        .expect("create a child");
        if let eds::write::WriteOutcome::Written { entity_id, .. } = outcome {
            children.push(entity_id);
        }
    }
    println!("created {count} children in {:.1} s", started.elapsed().as_secs_f64());

    let mut grants = Vec::new();
    let mut revokes = Vec::new();
    for round in 0..3 {
        let started = Instant::now();
        let (status, body) = app
            .post(
                &format!("/api/demo/entity/{parent}"),
                &owner,
                json!({"type": "_viewer", "reference": reader}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        grants.push(started.elapsed().as_secs_f64());
        let value = body["properties"][0]["_id"].as_str().unwrap().to_owned();
        for child in [&children[0], &children[count / 2], &children[count - 1]] {
            assert_eq!(
                app.get(&format!("/api/demo/entity/{child}"), &reader_token).await.0,
                200,
                "round {round}"
            );
        }
        let started = Instant::now();
        let (status, body) = app.delete(&format!("/api/demo/property/{value}"), &owner).await;
        assert_eq!(status, 200, "{body}");
        revokes.push(started.elapsed().as_secs_f64());
        assert_eq!(
            app.get(&format!("/api/demo/entity/{}", children[1]), &reader_token)
                .await
                .0,
            404
        );
    }
    println!(
        "rights change on a parent with {count} inheriting children, visible on all in the next read: \
         grant median {:.3} s, revoke median {:.3} s (3 runs each)",
        median(&mut grants),
        median(&mut revokes)
    );
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}
