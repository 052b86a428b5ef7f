//! Reads per second with 0, 1 and 2 streaming replicas: a primary and two
//! standbys made by `pg_basebackup -R` (the test harness's
//! `support::standby`), `EDS_BENCH_ENTITIES` books (20,000 by default)
//! loaded on the primary, then one release `eds serve` per replica count
//! (answer cache off, so every list is computed) measured by `wrk` with 32
//! clients on a get by id and on a list query, `EDS_BENCH_SECONDS` each (10
//! by default). Prints requests/s, the ratio to 0 replicas, and the share of
//! reads each server answered.
//!
//! `make bench BENCH=replicas` (or `cargo bench --bench replicas`). On one
//! machine every server shares the same cores: the ratio shows the routing's
//! cost and what spreading buys there, not what separate machines would.

use books::{DB, SERVE_ENV, load, wrk};
use support::processes::{call_json, serve_logged};
use support::standby::replication;

mod books;
#[path = "../tests/api/support/mod.rs"]
mod support;

const CLIENTS: u32 = 32;

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[tokio::main]
async fn main() {
    let entities = env_number("EDS_BENCH_ENTITIES", 20_000);
    let seconds = env_number("EDS_BENCH_SECONDS", 10) as u32;
    let replication = tokio::task::spawn_blocking(|| replication(2)).await.unwrap();
    let name = tokio::task::spawn_blocking(|| replication.fresh_database())
        .await
        .unwrap();
    let primary_url = replication.primary.url(&name);
    let pool = eds::db::pool(&primary_url, 4, 0).unwrap();
    let owner = load(&pool, entities).await;
    let key = books::api_key(&pool, &owner).await;
    // the standbys replay the load
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let data_dir = support::tempdir::Dir::new();
    let http = reqwest::Client::new();
    let mut rows = Vec::new();
    for replicas in 0..=2 {
        let urls: Vec<String> = replication.standbys[..replicas]
            .iter()
            .map(|standby| standby.url(&name))
            .collect();
        let urls = urls.join(",");
        let mut env = SERVE_ENV.to_vec();
        env.extend([
            ("EDS__DATABASE__REPLICA_URLS", urls.as_str()),
            ("EDS__DATABASE__ANSWER_CACHE_BYTES", "0"),
            ("EDS__DATABASE__MIGRATE_ON_START", "false"),
        ]);
        let (_server, base, _) = serve_logged(&primary_url, &data_dir.0, &env).await;
        wait_usable(&http, &base, replicas).await;
        let auth = call_json(&http, &format!("{base}/api/auth?db={DB}"), &key, None).await;
        let token = auth["token"].as_str().unwrap().to_owned();
        let list = format!("{base}/api/{DB}/entity?instock.boolean=true&sort=-price&limit=20");
        let first = call_json(&http, &list, &token, None).await;
        let id = first["entities"][0]["_id"].as_str().expect("a book").to_owned();
        let get = format!("{base}/api/{DB}/entity/{id}");
        let mut measured = Vec::new();
        for url in [&get, &list] {
            // warm the pools and caches first
            wrk(url, Some(&token), None, 2, CLIENTS);
            let (rate, latency, errors) = wrk(url, Some(&token), None, seconds, CLIENTS);
            assert_eq!(errors, 0, "non-2xx answers from {url}");
            measured.push((rate, latency.map_or(0.0, |(p50, _)| p50)));
        }
        let shares = read_shares(&http, &base).await;
        rows.push((replicas, measured, shares));
    }
    let base_rates: Vec<f64> = rows[0].1.iter().map(|(rate, _)| *rate).collect();
    println!("\nreplicas | get by id req/s (ratio, p50 ms) | list req/s (ratio, p50 ms) | share of reads");
    for (replicas, measured, shares) in &rows {
        let cells: Vec<String> = measured
            .iter()
            .zip(&base_rates)
            .map(|((rate, p50), base)| format!("{rate:.0} ({:.2}x, {p50:.2})", rate / base))
            .collect();
        println!("{replicas} | {} | {} | {shares}", cells[0], cells[1]);
    }
}

/// The text of `/metrics` of the server at `base`.
async fn metrics(http: &reqwest::Client, base: &str) -> String {
    let response = http.get(format!("{base}/metrics")).send().await.unwrap();
    response.text().await.unwrap()
}

/// Waits until the server at `base` uses all its `replicas`.
async fn wait_usable(http: &reqwest::Client, base: &str, replicas: usize) {
    for _ in 0..300 {
        let text = metrics(http, base).await;
        let usable = text
            .lines()
            .filter(|line| line.starts_with("eds_replica_usable{") && line.ends_with(" 1"))
            .count();
        if usable == replicas {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the replicas were not used within 30 s");
}

/// Each server's share of the reads, as `/metrics` shows it.
async fn read_shares(http: &reqwest::Client, base: &str) -> String {
    // the shares are computed at each check (every second)
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let text = metrics(http, base).await;
    let shares: Vec<String> = text
        .lines()
        .filter_map(|line| line.strip_prefix("eds_replica_read_share{server=\""))
        .map(|rest| rest.replacen("\"}", "", 1))
        .collect();
    if shares.is_empty() {
        "primary 1".to_owned()
    } else {
        shares.join(", ")
    }
}
