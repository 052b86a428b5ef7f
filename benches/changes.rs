//! The change feed and webhooks under load: one `eds serve` process while
//! clients create entities as fast as it takes them, first with nothing
//! listening, then with 10 webhooks posting to a receiver on loopback, then
//! holding 1,000 open change streams. Reported: the create rate of each
//! part, the webhooks' cost as a ratio, the delivery latency of every
//! stream event (from the write's answer to the event's arrival on each
//! stream: p50, p99, max), and the server's resident memory per stream.
//!
//! `make bench BENCH=changes` (`EDS_BENCH_STREAMS` sets the number of
//! streams, 1,000 by default; `EDS_BENCH_CALLERS` the persons they are
//! spread over, 1 (more: the books are shared with the whole database);
//! `EDS_BENCH_SECONDS` the writing time of each part, 10;
//! `EDS_BENCH_WRITERS` the concurrent writing clients, 16;
//! `EDS_BENCH_WEBHOOKS` the webhooks, 10).

#[path = "../tests/api/webhooks/receiver.rs"]
mod receiver;
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

/// Reads one stream until it ends, noting each event's entity and arrival
/// (as bytes: the reading clients share the machine with the server).
async fn read_stream(response: reqwest::Response, arrivals: Arrivals) {
    const ID: &[u8] = b"\"_id\":\"";
    let mut body = response.bytes_stream();
    let mut buffer: Vec<u8> = Vec::new();
    while let Some(Ok(part)) = body.next().await {
        let now = Instant::now();
        buffer.extend_from_slice(&part);
        let mut seen = Vec::new();
        let mut start = 0;
        while let Some(end) = find(&buffer[start..], b"\n\n") {
            let block = &buffer[start..start + end];
            if let Some(at) = find(block, ID) {
                let id = &block[at + ID.len()..];
                let id = &id[..find(id, b"\"").unwrap_or(id.len())];
                seen.push((String::from_utf8_lossy(id).into_owned(), now));
            }
            start += end + 2;
        }
        buffer.drain(..start);
        arrivals.lock().unwrap().extend(seen);
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}

/// What the writing clients share.
struct Target {
    http: reqwest::Client,
    url: String,
    token: String,
    book: String,
    /// Books are shared with every person of the database (streams of
    /// several callers read them).
    shared: bool,
}

/// `writers` clients creating books one after another for `seconds`;
/// answers when each creation was answered, and the time taken.
async fn create_for(target: &Arc<Target>, writers: usize, seconds: u64, part: &str) -> (Written, f64) {
    let written: Written = Arc::default();
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let clients: Vec<_> = (0..writers)
        .map(|client| {
            let (target, written, part) = (target.clone(), written.clone(), part.to_owned());
            tokio::spawn(async move {
                let mut round = 0;
                while Instant::now() < deadline {
                    let mut body = json!([{"type": "_type", "reference": target.book}, {"type": "name", "string": format!("{part}{client}-{round}")}]);
                    if target.shared {
                        body.as_array_mut().unwrap().push(json!({"type": "_sharing", "string": "domain"}));
                    }
                    let url = format!("{}/api/demo/entity", target.url);
                    let created = processes::call_json(&target.http, &url, &target.token, Some(&body)).await;
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
    (written, started.elapsed().as_secs_f64())
}

fn rate(written: &Written, seconds: f64) -> f64 {
    written.lock().unwrap().len() as f64 / seconds
}

#[tokio::main]
async fn main() {
    let streams = env_number("EDS_BENCH_STREAMS", 1000) as usize;
    let seconds = env_number("EDS_BENCH_SECONDS", 10);
    let writers = env_number("EDS_BENCH_WRITERS", 16) as usize;
    let callers = env_number("EDS_BENCH_CALLERS", 1).max(1) as usize;
    let webhooks = env_number("EDS_BENCH_WEBHOOKS", 10) as usize;
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
        ("EDS__WEBHOOKS__ALLOW_PRIVATE_TARGETS", "true"),
    ];
    let (server, url, _log) = processes::serve_logged(&database_url, &data_dir.0, &env).await;
    let pid = server.id().unwrap();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(streams + writers)
        .build()
        .unwrap();
    let token = processes::login(&http, &url, &key).await;
    let entity_type = processes::entity_type(&http, &url, &token).await;
    let book_type = json!([{"type": "_type", "reference": entity_type}, {"type": "name", "string": "book"}]);
    let book = processes::call_json(&http, &format!("{url}/api/demo/entity"), &token, Some(&book_type)).await;
    let target = Arc::new(Target {
        http: http.clone(),
        url: url.clone(),
        token: token.clone(),
        book: book["_id"].as_str().unwrap().to_owned(),
        shared: callers > 1,
    });
    println!("{writers} writing clients, {seconds} s a part, on {} cores", num_cpus());

    let (alone, took) = create_for(&target, writers, seconds, "a").await;
    let alone_rate = rate(&alone, took);
    println!("alone: {:.0} creates/s", alone_rate);

    let receiver = receiver::Receiver::start().await;
    let webhook_type = format!("{url}/api/demo/entity?_type.string=entity&name.string=webhook");
    let webhook_type = processes::call_json(&http, &webhook_type, &token, None).await["entities"][0]["_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut hooks = Vec::new();
    for _ in 0..webhooks {
        let body = json!([{"type": "_type", "reference": webhook_type}, {"type": "url", "string": receiver.url()}, {"type": "events", "string": "create"}, {"type": "secret", "string": "new"}]);
        let made = processes::call_json(&http, &format!("{url}/api/demo/entity"), &token, Some(&body)).await;
        hooks.push(made["_id"].as_str().unwrap().to_owned());
    }
    let (hooked, took) = create_for(&target, writers, seconds, "w").await;
    let hooked_rate = rate(&hooked, took);
    let expected = hooked.lock().unwrap().len() * webhooks;
    let draining = Instant::now();
    while receiver.count() < expected && draining.elapsed() < Duration::from_secs(300) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!(
        "with {webhooks} webhooks: {hooked_rate:.0} creates/s ({:.2}× alone); {} of {expected} deliveries in {:.1} s after the writes",
        hooked_rate / alone_rate,
        receiver.count(),
        draining.elapsed().as_secs_f64()
    );
    for hook in &hooks {
        let deleted = http
            .delete(format!("{url}/api/demo/entity/{hook}"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        let status = deleted.status();
        assert!(
            status.is_success(),
            "{status}: {}",
            deleted.text().await.unwrap_or_default()
        );
    }

    let readers = if callers > 1 {
        readers(&http, &url, &token, callers).await
    } else {
        vec![token.clone()]
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_before = rss_mb(pid);
    let mut arrivals = Vec::new();
    let opened = Instant::now();
    for stream in 0..streams {
        let response = http
            .get(format!("{url}/api/demo/changes"))
            .bearer_auth(&readers[stream % readers.len()])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{}", response.text().await.unwrap_or_default());
        let seen: Arrivals = Arc::default();
        tokio::spawn(read_stream(response, seen.clone()));
        arrivals.push(seen);
    }
    println!(
        "{streams} streams of {} callers opened in {:.1} s",
        readers.len(),
        opened.elapsed().as_secs_f64()
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss_open = rss_mb(pid);

    let (written, writing) = create_for(&target, writers, seconds, "s").await;
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
    let streamed_rate = written.len() as f64 / writing;
    println!(
        "with {streams} streams: {} creates in {writing:.1} s: {streamed_rate:.0} creates/s ({:.2}× alone), {} events delivered, {missing} missing",
        written.len(),
        streamed_rate / alone_rate,
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

/// The tokens of `count` new persons of the database, each with a key.
async fn readers(http: &reqwest::Client, url: &str, token: &str, count: usize) -> Vec<String> {
    let person_type = format!("{url}/api/demo/entity?_type.string=entity&name.string=person");
    let person_type = processes::call_json(http, &person_type, token, None).await["entities"][0]["_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut tokens = Vec::with_capacity(count);
    for reader in 0..count {
        let person = json!([{"type": "_type", "reference": person_type}, {"type": "name", "string": format!("reader {reader}")}]);
        let person = processes::call_json(http, &format!("{url}/api/demo/entity"), token, Some(&person)).await;
        let key = json!({"type": "service_api_key", "string": "generate"});
        let added = format!("{url}/api/demo/entity/{}", person["_id"].as_str().unwrap());
        let added = processes::call_json(http, &added, token, Some(&key)).await;
        let key = added["properties"][0]["string"].as_str().unwrap();
        tokens.push(processes::login(http, url, key).await);
    }
    tokens
}

fn num_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}
