//! The change feed under load: one `eds serve` process holding 1,000 open
//! change streams while clients create entities as fast as it takes them;
//! reported: the create rate, the delivery latency of every event (from the
//! write's answer to the event's arrival on each stream: p50, p99, max), and
//! the server's resident memory per open stream.
//!
//! `make bench BENCH=changes` (`EDS_BENCH_STREAMS` sets the number of
//! streams, 1,000 by default; `EDS_BENCH_SECONDS` the writing time, 10;
//! `EDS_BENCH_WRITERS` the concurrent writing clients, 4).

#[path = "../tests/api/support/mod.rs"]
mod support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::json;
use support::processes;

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|n| n.parse().ok()).unwrap_or(default)
}

/// The resident set of process `pid`, in MB.
fn rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// The `p`-th percentile (nearest rank) of `sorted`, in milliseconds.
fn percentile_ms(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1] * 1000.0
}

/// When each entity's creation was answered.
type Written = Arc<Mutex<HashMap<String, Instant>>>;
/// Each event's entity and arrival time, per stream.
type Arrivals = Arc<Mutex<Vec<(String, Instant)>>>;

/// Reads one stream until it ends, noting each event's entity and arrival.
async fn read_stream(response: reqwest::Response, arrivals: Arrivals) {
    let mut body = response.bytes_stream();
    let mut buffer = String::new();
    while let Some(Ok(part)) = body.next().await {
        let now = Instant::now();
        buffer.push_str(&String::from_utf8_lossy(&part));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            if let Some(at) = block.find("\"_id\":\"") {
                let id = block[at + 7..].split('"').next().unwrap_or_default().to_owned();
                arrivals.lock().unwrap().push((id, now));
            }
        }
    }
}

#[tokio::main]
async fn main() {
    let streams = env_number("EDS_BENCH_STREAMS", 1000) as usize;
    let seconds = env_number("EDS_BENCH_SECONDS", 10);
    let writers = env_number("EDS_BENCH_WRITERS", 4) as usize;
    let database_url = support::fresh_database();
    let data_dir = support::tempdir::Dir::new();
    let key = processes::create_demo(&database_url, &data_dir.0, "bench@example.com")
        .await
        .key;
    let limit = (streams + 10).to_string();
    let env = [
        ("EDS__CHANGES__MAX_STREAMS", limit.as_str()),
        ("EDS__CHANGES__MAX_STREAMS_PER_CALLER", limit.as_str()),
        ("EDS__LIMITS__ENABLED", "false"),
    ];
    let (server, url, _log) = processes::serve_logged(&database_url, &data_dir.0, &env).await;
    let pid = server.id().unwrap();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(streams + writers)
        .build()
        .unwrap();
    let token = processes::login(&http, &url, &key).await;
    let entity_type = processes::entity_type(&http, &url, &token).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_before = rss_mb(pid);

    let mut arrivals = Vec::new();
    let opened = Instant::now();
    for _ in 0..streams {
        let response = http
            .get(format!("{url}/api/demo/changes"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{}", response.text().await.unwrap_or_default());
        let seen: Arrivals = Arc::default();
        tokio::spawn(read_stream(response, seen.clone()));
        arrivals.push(seen);
    }
    println!("{streams} streams opened in {:.1} s", opened.elapsed().as_secs_f64());
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss_open = rss_mb(pid);

    let written: Written = Arc::default();
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let clients: Vec<_> = (0..writers)
        .map(|client| {
            let (http, url, token, entity_type, written) =
                (http.clone(), url.clone(), token.clone(), entity_type.clone(), written.clone());
            tokio::spawn(async move {
                let mut round = 0;
                while Instant::now() < deadline {
                    let body = json!([{"type": "_type", "reference": entity_type}, {"type": "name", "string": format!("w{client}-{round}")}]);
                    let created = processes::call_json(&http, &format!("{url}/api/demo/entity"), &token, Some(&body)).await;
                    let answered = Instant::now();
                    if let Some(id) = created["_id"].as_str() {
                        written.lock().unwrap().insert(id.to_owned(), answered);
                    }
                    round += 1;
                }
            })
        })
        .collect();
    for client in clients {
        client.await.unwrap();
    }
    let writing = started.elapsed().as_secs_f64();
    // the last events' delivery
    tokio::time::sleep(Duration::from_secs(3)).await;
    let rss_loaded = rss_mb(pid);

    let written = written.lock().unwrap().clone();
    let mut latencies = Vec::new();
    let mut missing = 0;
    for seen in &arrivals {
        let seen: HashMap<String, Instant> = seen.lock().unwrap().iter().cloned().collect();
        for (id, answered) in &written {
            match seen.get(id) {
                // an event may arrive before the write's answer does
                Some(arrived) => latencies.push(arrived.saturating_duration_since(*answered).as_secs_f64()),
                None => missing += 1,
            }
        }
    }
    latencies.sort_by(f64::total_cmp);
    println!(
        "{} creates in {writing:.1} s by {writers} clients: {:.0} creates/s, {} events delivered to {streams} streams, {missing} missing",
        written.len(),
        written.len() as f64 / writing,
        latencies.len()
    );
    if !latencies.is_empty() {
        println!(
            "delivery latency after the write's answer: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            percentile_ms(&latencies, 50.0),
            percentile_ms(&latencies, 99.0),
            percentile_ms(&latencies, 100.0)
        );
    }
    println!(
        "server RSS: {rss_before:.1} MB idle, {rss_open:.1} MB with {streams} streams ({:.1} KB per stream), {rss_loaded:.1} MB after the writes",
        (rss_open - rss_before) * 1024.0 / streams as f64
    );
    drop(server);
}
