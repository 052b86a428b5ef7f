//! GraphQL against REST: the same list query (a page of 20 books sorted by
//! price, with their titles and prices) through `GET /api/{db}/entity` and
//! through `POST /api/{db}/graphql`, requests/s side by side from the same
//! concurrent clients; and the answer to the full introspection query with
//! 200 entity types (the schema cached, as every request after the first
//! finds it).
//!
//! `make bench BENCH=graphql` (`EDS_BENCH_SECONDS` sets each run's time, 5
//! by default; `EDS_BENCH_CLIENTS` the concurrent clients, 8).

#[path = "../tests/api/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{Storage, TestApp};

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|n| n.parse().ok()).unwrap_or(default)
}

/// Requests/s of `send` from `clients` concurrent clients for `seconds`.
async fn rate<F, Fut>(clients: u64, seconds: u64, send: F) -> f64
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let end = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let send = send.clone();
            tokio::spawn(async move {
                let mut done = 0u64;
                while Instant::now() < end {
                    send().await;
                    done += 1;
                }
                done
            })
        })
        .collect();
    let mut total = 0;
    for task in tasks {
        total += task.await.unwrap();
    }
    total as f64 / started.elapsed().as_secs_f64()
}

#[tokio::main]
async fn main() {
    let seconds = env_number("EDS_BENCH_SECONDS", 5);
    let clients = env_number("EDS_BENCH_CLIENTS", 8);
    // rate limits off, and REST's answer cache off: both sides compute every answer
    let overrides = [
        ("limits.enabled", "false".to_owned()),
        ("database.answer_cache_bytes", "0".to_owned()),
    ];
    let app = TestApp::start_with(Storage::Local, &overrides).await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    app.define(&owner, &book, "title", "string", json!([])).await;
    app.define(&owner, &book, "price", "number", json!([])).await;
    for n in 0..200 {
        let values =
            json!([{"type": "title", "string": format!("book {n}")}, {"type": "price", "number": (n * 37) % 101}]);
        app.create(&owner, &book, values).await;
    }

    let http = app.http.clone();
    let rest_url = format!(
        "{}/api/demo/entity?_type.reference={book}&sort=-price.number&limit=20&props=title,price",
        app.url
    );
    let token = owner.clone();
    let rest = rate(clients, seconds, move || {
        let (http, url, token) = (http.clone(), rest_url.clone(), token.clone());
        async move {
            let response = http.get(url).bearer_auth(token).send().await.unwrap();
            assert_eq!(response.status(), 200);
            response.bytes().await.unwrap();
        }
    })
    .await;
    let http = app.http.clone();
    let graphql_url = format!("{}/api/demo/graphql", app.url);
    let token = owner.clone();
    let body =
        json!({"query": "{ book(sort: \"-price.number\", limit: 20) { _id title { string } price { number } } }"});
    let graphql = rate(clients, seconds, move || {
        let (http, url, token, body) = (http.clone(), graphql_url.clone(), token.clone(), body.clone());
        async move {
            let response = http.post(url).bearer_auth(token).json(&body).send().await.unwrap();
            assert_eq!(response.status(), 200);
            response.bytes().await.unwrap();
        }
    })
    .await;
    println!("list of 20 books, {clients} clients, {seconds} s each:");
    println!("  REST     {rest:>8.0} requests/s");
    println!("  GraphQL  {graphql:>8.0} requests/s ({:.2}× REST)", graphql / rest);

    for n in 1..200 {
        app.create_type(&owner, &format!("type {n}")).await;
    }
    let introspection = json!({"query": INTROSPECTION});
    let url = format!("{}/api/demo/graphql", app.url);
    let mut times = Vec::new();
    for _ in 0..30 {
        let started = Instant::now();
        let response = app
            .http
            .post(&url)
            .bearer_auth(&owner)
            .json(&introspection)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let answer: serde_json::Value = response.json().await.unwrap();
        assert!(answer["data"]["__schema"]["types"].as_array().unwrap().len() > 200);
        times.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    let first = times[0];
    let mut warm = times[1..].to_vec();
    warm.sort_by(f64::total_cmp);
    println!(
        "introspection with 200 types: first {first:.1} ms (schema built), then median {:.1} ms, max {:.1} ms",
        warm[warm.len() / 2],
        warm[warm.len() - 1]
    );
}

const INTROSPECTION: &str = "query IntrospectionQuery { __schema { queryType { name } mutationType { name }
  types { kind name description
    fields(includeDeprecated: true) { name description args { name type { ...TypeRef } defaultValue } type { ...TypeRef } }
    inputFields { name type { ...TypeRef } } interfaces { ...TypeRef } possibleTypes { ...TypeRef } }
  directives { name locations args { name type { ...TypeRef } } } } }
fragment TypeRef on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } }";
