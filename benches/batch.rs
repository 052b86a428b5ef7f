//! Large batches against one `eds serve` on a durable PostgreSQL cluster
//! (`fsync` and `synchronous_commit` on):
//!
//! 1. a 1,000-operation batch (creates of 5 values each), alone and then
//!    while 16 clients make single creates: how long the batch holds the
//!    database's write lock (targets: at most 2 s) and the single creates'
//!    p50/p99 latency (target: p99 at most 2.5 s);
//! 2. the museum case: `_viewer` for one person on 6,352 entities as one
//!    batch of `add` operations, timed, while that person counts the
//!    entities they see (all or none, never a part).
//!
//! The write lock's hold is sampled every 5 ms from `pg_locks`: the age of
//! the transaction holding the database's advisory lock.
//!
//! `cargo bench --bench batch` (`EDS_BENCH_CLIENTS` overrides the 16 clients).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use diesel_async::{AsyncConnection, AsyncPgConnection};
use eds::db::{self, local_cluster::LocalCluster};
use serde_json::{Value as Json, json};

use support::processes::{call_json, create_demo, entity_type, login, serve_logged};

#[path = "../tests/api/support/mod.rs"]
mod support;

/// The server's defaults, without rate limits (every client is one address).
const SERVE_ENV: [(&str, &str); 4] = [
    ("EDS__HTTP__WORKERS", "0"),
    ("EDS__DATABASE__POOL_SIZE", "16"),
    ("EDS__LIMITS__ENABLED", "false"),
    ("RUST_LOG", "warn,eds=info"),
];
const BATCH_OPERATIONS: usize = 1_000;
const MUSEUM_ENTITIES: usize = 6_352;

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A durable cluster of its own, so the figures include real commits.
fn durable_cluster() -> LocalCluster {
    let dir = std::env::temp_dir().join("eds-bench-pg-durable");
    let cluster = LocalCluster::new(&dir).expect("PostgreSQL server binaries");
    cluster.ensure_running(false).expect("start the benchmark cluster");
    cluster
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Samples, until `stop`, the age (ms) of the transaction holding an
/// advisory lock in `database_url`'s database (the writer's write lock);
/// answers the longest seen.
async fn longest_lock_hold(database_url: String, stop: Arc<AtomicBool>) -> f64 {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Held {
        #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Double>)]
        ms: Option<f64>,
    }
    let mut conn = AsyncPgConnection::establish(&database_url).await.unwrap();
    let mut longest: f64 = 0.0;
    while !AtomicBool::load(&stop, Ordering::Relaxed) {
        let held: Held = diesel::sql_query(
            "SELECT max(extract(epoch FROM clock_timestamp() - a.xact_start) * 1000)::float8 AS ms \
             FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
             WHERE l.locktype = 'advisory' AND l.granted AND l.database = \
             (SELECT oid FROM pg_database WHERE datname = current_database())",
        )
        .get_result(&mut conn)
        .await
        .unwrap();
        longest = longest.max(held.ms.unwrap_or(0.0));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    longest
}

/// Sends a batch of `operations`; answers its status, body and seconds.
async fn send_batch(http: &reqwest::Client, url: &str, token: &str, operations: Vec<Json>) -> (u16, Json, f64) {
    let sent = Instant::now();
    let response = http
        .post(format!("{url}/api/demo/batch"))
        .bearer_auth(token)
        .json(&json!({"operations": operations}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body = response.json().await.unwrap_or(Json::Null);
    (status, body, sent.elapsed().as_secs_f64())
}

/// `count` creates of entities of `item_type` with 5 values each.
fn creates(item_type: &str, count: usize, tag: &str) -> Vec<Json> {
    (0..count)
        .map(|i| {
            json!({"op": "create", "properties": [
                {"type": "_type", "reference": item_type},
                {"type": "name", "string": format!("{tag} {i}")},
                {"type": "code", "string": format!("{tag}-{i:05}")},
                {"type": "note", "string": "made by the batch benchmark"},
                {"type": "size", "number": i},
            ]})
        })
        .collect()
}

struct Server {
    url: String,
    token: String,
    item_type: String,
    database_url: String,
    http: reqwest::Client,
    _process: tokio::process::Child,
    data_dir: std::path::PathBuf,
}

async fn start(cluster: &LocalCluster) -> Server {
    let name = format!("bench_batch_{}", eds::model::ids::new_id());
    db::create_database_if_missing(&cluster.url("postgres").unwrap(), &name, None).unwrap();
    let database_url = cluster.url(&name).unwrap();
    let data_dir = std::env::temp_dir().join(&name);
    let key = create_demo(&database_url, &data_dir, "load@example.com").await.key;
    let (process, url, _) = serve_logged(&database_url, &data_dir, &SERVE_ENV).await;
    let http = reqwest::Client::new();
    let token = login(&http, &url, &key).await;
    let meta = entity_type(&http, &url, &token).await;
    let created = call_json(
        &http,
        &format!("{url}/api/demo/entity"),
        &token,
        Some(&json!([{"type": "_type", "reference": meta}, {"type": "name", "string": "item"}])),
    )
    .await;
    let item_type = created["_id"].as_str().unwrap().to_owned();
    Server {
        url,
        token,
        item_type,
        database_url,
        http,
        _process: process,
        data_dir,
    }
}

/// Runs `batches` 1,000-operation batches one after the other, with
/// `clients` clients making single creates meanwhile (from 1 s before to
/// 1 s after); prints one row.
async fn batches_among_single_creates(server: &Server, clients: usize, batches: usize) {
    let stop_clients = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for client in 0..clients {
        let (http, url, token, item_type) = (
            server.http.clone(),
            server.url.clone(),
            server.token.clone(),
            server.item_type.clone(),
        );
        let stop = stop_clients.clone();
        tasks.push(tokio::spawn(async move {
            let (mut latencies, mut errors) = (Vec::new(), 0);
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                let sent = Instant::now();
                let response = http
                    .post(format!("{url}/api/demo/entity"))
                    .bearer_auth(&token)
                    .json(&json!([{"type": "_type", "reference": item_type}, {"type": "name", "string": format!("single {client} {i}")}]))
                    .send()
                    .await;
                match response {
                    Ok(response) if response.status() == 201 => latencies.push(sent.elapsed().as_secs_f64() * 1000.0),
                    _ => errors += 1,
                }
                i += 1;
            }
            (latencies, errors)
        }));
    }
    let stop_sampler = Arc::new(AtomicBool::new(false));
    let sampler = tokio::spawn(longest_lock_hold(server.database_url.clone(), stop_sampler.clone()));
    if clients > 0 {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let mut batch_seconds = Vec::new();
    for run in 0..batches {
        let operations = creates(&server.item_type, BATCH_OPERATIONS, &format!("batch {clients} {run}"));
        let (status, body, seconds) = send_batch(&server.http, &server.url, &server.token, operations).await;
        assert_eq!(status, 200, "{body}");
        batch_seconds.push(seconds);
    }
    if clients > 0 {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    stop_clients.store(true, Ordering::Relaxed);
    let (mut latencies, mut errors) = (Vec::new(), 0);
    for task in tasks {
        let (more, failed) = task.await.unwrap();
        latencies.extend(more);
        errors += failed;
    }
    stop_sampler.store(true, Ordering::Relaxed);
    let longest_hold = sampler.await.unwrap();
    latencies.sort_by(f64::total_cmp);
    let batch_times: Vec<String> = batch_seconds.iter().map(|s| format!("{s:.2}")).collect();
    let (p50, p99) = if clients > 0 {
        (
            format!("{:.0}", percentile(&latencies, 0.5)),
            format!("{:.0}", percentile(&latencies, 0.99)),
        )
    } else {
        ("-".to_owned(), "-".to_owned())
    };
    println!(
        "| {clients} | {} | {:.2} | {} | {p50} | {p99} | {errors} |",
        batch_times.join(", "),
        longest_hold / 1000.0,
        latencies.len(),
    );
}

/// The museum case: a person gets `_viewer` on 6,352 entities in one batch
/// while they count what they see.
async fn museum(server: &Server) {
    let (http, url, token) = (&server.http, server.url.as_str(), server.token.as_str());
    let meta = entity_type(http, url, token).await;
    let created = call_json(
        http,
        &format!("{url}/api/demo/entity"),
        token,
        Some(&json!([{"type": "_type", "reference": meta}, {"type": "name", "string": "exhibit"}])),
    )
    .await;
    let exhibit_type = created["_id"].as_str().unwrap().to_owned();
    let mut exhibits = Vec::with_capacity(MUSEUM_ENTITIES);
    for chunk in (0..MUSEUM_ENTITIES).collect::<Vec<_>>().chunks(BATCH_OPERATIONS) {
        let operations = creates(&exhibit_type, chunk.len(), &format!("exhibit {}", chunk[0]));
        let (status, body, _) = send_batch(http, url, token, operations).await;
        assert_eq!(status, 200, "{body}");
        exhibits.extend(body["results"].as_array().unwrap().iter().map(|r| r["_id"].clone()));
    }
    let person_type = call_json(
        http,
        &format!("{url}/api/demo/entity?_type.string=entity&name.string=person"),
        token,
        None,
    )
    .await["entities"][0]["_id"]
        .clone();
    let person = call_json(
        http,
        &format!("{url}/api/demo/entity"),
        token,
        Some(&json!([{"type": "_type", "reference": person_type}, {"type": "name", "string": "Curator"}])),
    )
    .await["_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let key = call_json(
        http,
        &format!("{url}/api/demo/entity/{person}"),
        token,
        Some(&json!([{"type": "service_api_key", "string": "generate"}])),
    )
    .await["properties"][0]["string"]
        .as_str()
        .unwrap()
        .to_owned();
    let curator = login(http, url, &key).await;
    let seen_url = format!("{url}/api/demo/entity?_type.string=exhibit&limit=1");
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (http, curator, seen_url, stop) = (http.clone(), curator.clone(), seen_url.clone(), stop.clone());
        tokio::spawn(async move {
            let mut counts = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                counts.push(
                    call_json(&http, &seen_url, &curator, None).await["count"]
                        .as_u64()
                        .unwrap(),
                );
                // a reader among others, not a load of its own on the 2 cores
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            counts
        })
    };
    let stop_sampler = Arc::new(AtomicBool::new(false));
    let sampler = tokio::spawn(longest_lock_hold(server.database_url.clone(), stop_sampler.clone()));
    let grants: Vec<Json> = exhibits
        .iter()
        .map(|id| json!({"op": "add", "entity": id, "properties": [{"type": "_viewer", "reference": person}]}))
        .collect();
    let body_bytes = json!({"operations": grants}).to_string().len();
    let (status, body, seconds) = send_batch(http, url, token, grants).await;
    assert_eq!(status, 200, "{body}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.store(true, Ordering::Relaxed);
    stop_sampler.store(true, Ordering::Relaxed);
    let counts = reader.await.unwrap();
    let longest_hold = sampler.await.unwrap();
    let partial = counts
        .iter()
        .filter(|n| **n != 0 && **n != MUSEUM_ENTITIES as u64)
        .count();
    let after = call_json(http, &seen_url, &curator, None).await["count"]
        .as_u64()
        .unwrap();
    println!(
        "museum case: _viewer on {MUSEUM_ENTITIES} entities in one batch ({} KB body): {seconds:.2} s, \
         write lock held {:.2} s; the curator counted {} times during it: {} saw none, {} saw all, {partial} saw a part; \
         after: {after}",
        body_bytes / 1024,
        longest_hold / 1000.0,
        counts.len(),
        counts.iter().filter(|n| **n == 0).count(),
        counts.iter().filter(|n| **n == MUSEUM_ENTITIES as u64).count(),
    );
}

#[tokio::main]
async fn main() {
    let clients = env_number("EDS_BENCH_CLIENTS", 16) as usize;
    let cluster = durable_cluster();
    let server = start(&cluster).await;
    println!("batches of {BATCH_OPERATIONS} creates (5 values each), fsync and synchronous_commit on");
    println!(
        "| single-create clients | batch s | write lock held, longest s | single creates | p50 ms | p99 ms | errors |"
    );
    println!("|---|---|---|---|---|---|---|");
    batches_among_single_creates(&server, 0, 3).await;
    batches_among_single_creates(&server, clients, 3).await;
    museum(&server).await;
    let _ = std::fs::remove_dir_all(&server.data_dir);
}
