//! Counter load: 32 clients create entities with a counter value for 30 s,
//! against one and then two `eds serve` processes sharing one database, on a
//! durable PostgreSQL cluster (`fsync` and `synchronous_commit` on). Prints
//! writes/s, latency p50/p99, and whether the numbers are unique and gap-free.
//!
//! `cargo bench --bench counters` (`EDS_BENCH_SECONDS`, `EDS_BENCH_CLIENTS`
//! override the duration and the number of clients).

use std::time::{Duration, Instant};

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

struct Run {
    writes: usize,
    seconds: f64,
    latencies_ms: Vec<f64>,
    numbers: Vec<i64>,
    errors: usize,
}

async fn run(cluster: &LocalCluster, processes: usize, clients: usize, duration: Duration) -> Run {
    let name = format!("bench_counters_{}", eds::model::ids::new_id());
    db::create_database_if_missing(&cluster.url("postgres").unwrap(), &name, None).unwrap();
    let database_url = cluster.url(&name).unwrap();
    let durability: String = {
        use diesel::{Connection, RunQueryDsl, sql_query};
        #[derive(diesel::QueryableByName)]
        struct Setting {
            #[diesel(sql_type = diesel::sql_types::Text)]
            setting: String,
        }
        let mut conn = diesel::PgConnection::establish(&database_url).unwrap();
        let rows: Vec<Setting> = sql_query(
            "SELECT string_agg(name || '=' || setting, ' ' ORDER BY name) AS setting FROM pg_settings \
             WHERE name IN ('fsync', 'synchronous_commit')",
        )
        .load(&mut conn)
        .unwrap();
        rows[0].setting.clone()
    };
    assert_eq!(durability, "fsync=on synchronous_commit=on", "a durable cluster");
    let data_dir = std::env::temp_dir().join(&name);
    let key = create_demo(&database_url, &data_dir, "load@example.com").await.key;
    let mut servers = Vec::new();
    for _ in 0..processes {
        let (server, url, _) = serve_logged(&database_url, &data_dir, &SERVE_ENV).await;
        servers.push((server, url));
    }
    let urls: Vec<String> = servers.iter().map(|(_, url)| url.clone()).collect();
    let http = reqwest::Client::new();
    let token = login(&http, &urls[0], &key).await;
    let meta = entity_type(&http, &urls[0], &token).await;
    let created = call_json(
        &http,
        &format!("{}/api/demo/entity", urls[0]),
        &token,
        Some(&json!([{"type": "_type", "reference": meta}, {"type": "name", "string": "ticket"}])),
    )
    .await;
    let ticket_type = created["_id"].as_str().unwrap().to_owned();

    let started = Instant::now();
    let deadline = started + duration;
    let mut tasks = Vec::new();
    for client in 0..clients {
        let (http, token, ticket_type) = (http.clone(), token.clone(), ticket_type.clone());
        let url = urls[client % urls.len()].clone();
        tasks.push(tokio::spawn(async move {
            let (mut latencies, mut numbers, mut errors) = (Vec::new(), Vec::new(), 0);
            while Instant::now() < deadline {
                let sent = Instant::now();
                let response = http
                    .post(format!("{url}/api/demo/entity"))
                    .bearer_auth(&token)
                    .json(&json!([{"type": "_type", "reference": ticket_type}, {"type": "number", "counter": true}]))
                    .send()
                    .await;
                let body: Option<Json> = match response {
                    Ok(response) if response.status() == 201 || response.status() == 200 => response.json().await.ok(),
                    _ => None,
                };
                match body.as_ref().and_then(|body| body["properties"][1]["number"].as_i64()) {
                    Some(number) => {
                        latencies.push(sent.elapsed().as_secs_f64() * 1000.0);
                        numbers.push(number);
                    }
                    None => errors += 1,
                }
            }
            (latencies, numbers, errors)
        }));
    }
    let mut result = Run {
        writes: 0,
        seconds: 0.0,
        latencies_ms: Vec::new(),
        numbers: Vec::new(),
        errors: 0,
    };
    for task in tasks {
        let (latencies, numbers, errors) = task.await.unwrap();
        result.latencies_ms.extend(latencies);
        result.numbers.extend(numbers);
        result.errors += errors;
    }
    result.seconds = started.elapsed().as_secs_f64();
    result.writes = result.numbers.len();
    drop(servers);
    let _ = std::fs::remove_dir_all(&data_dir);
    result
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main]
async fn main() {
    let seconds = env_number("EDS_BENCH_SECONDS", 30);
    let clients = env_number("EDS_BENCH_CLIENTS", 32) as usize;
    let cluster = durable_cluster();
    println!("counter load: {clients} clients, {seconds} s, fsync and synchronous_commit on");
    println!("| processes | writes/s | p50 ms | p99 ms | errors | unique | gap-free |");
    println!("|---|---|---|---|---|---|---|");
    for processes in [1, 2] {
        let mut run = run(&cluster, processes, clients, Duration::from_secs(seconds)).await;
        run.latencies_ms.sort_by(f64::total_cmp);
        run.numbers.sort_unstable();
        let distinct = {
            let mut numbers = run.numbers.clone();
            numbers.dedup();
            numbers.len()
        };
        let gap_free = run.numbers.iter().enumerate().all(|(i, n)| *n == i as i64 + 1);
        println!(
            "| {processes} | {:.0} | {:.1} | {:.1} | {} | {} | {} |",
            run.writes as f64 / run.seconds,
            percentile(&run.latencies_ms, 0.5),
            percentile(&run.latencies_ms, 0.99),
            run.errors,
            if distinct == run.writes { "yes" } else { "NO" },
            if gap_free { "yes" } else { "NO" },
        );
    }
}
