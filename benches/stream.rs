//! Bounded work per list request: 100,000 entities written in bulk, then
//! (1) the peak RSS of the process serving the app while one client reads
//! `limit=1000000` (in `_id` order, and sorted by a value), and (2) `/health`
//! and an indexed lookup's latency while 32 clients send queries no index
//! can answer (`regex`, `ne` with a sort by value), each one distinct so the
//! answer cache computes every one. The app runs in this process with the
//! default pool (16) and `database.expensive_queries` (half of it).
//!
//! `make bench BENCH=stream` (`EDS_BENCH_ENTITIES` sets the number of
//! entities, 100,000 by default; `EDS_BENCH_SECONDS` the overload's length,
//! 10 by default).

#[path = "../tests/api/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use support::{Storage, TestApp};

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|n| n.parse().ok()).unwrap_or(default)
}

/// A `/proc/self/status` figure in MB (`VmHWM`: peak resident set, `VmRSS`: current).
fn proc_status_mb(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// The `p`-th percentile (nearest rank), in milliseconds.
fn percentile_ms(samples: &[f64], p: f64) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1] * 1000.0
}

/// `count` entities the owner sees, each with a title of about 120
/// characters and a number, in the documents and the value rows.
async fn bulk_entities(app: &TestApp, count: u64) {
    let mut conn = <diesel_async::AsyncPgConnection as diesel_async::AsyncConnection>::establish(&app.database_url)
        .await
        .unwrap();
    let started = Instant::now();
    diesel_async::RunQueryDsl::execute(
        diesel::sql_query(
            "WITH n AS (SELECT i, 'bulk' || lpad(i::text, 20, '0') AS id, \
                        'title ' || i || ' ' || repeat(md5(i::text), 3) AS title FROM generate_series(1, $2) i), \
             e AS (INSERT INTO entities (db, id, created_at, viewers, doc) \
                   SELECT 'demo', n.id, now(), ARRAY[$1], jsonb_build_object('_id', n.id, \
                     'n', jsonb_build_array(jsonb_build_object('_id', 'v' || n.id, 'number', n.i % 1000)), \
                     'title', jsonb_build_array(jsonb_build_object('_id', 't' || n.id, 'string', n.title))) \
                   FROM n RETURNING id) \
             INSERT INTO property_values (db, id, entity_id, prop, number, string, created_at) \
             SELECT 'demo', p || e.id, e.id, CASE p WHEN 'v' THEN 'n' ELSE 'title' END, \
                    CASE p WHEN 'v' THEN n.i % 1000 END, CASE p WHEN 't' THEN n.title END, now() \
             FROM e JOIN n ON n.id = e.id CROSS JOIN (VALUES ('v'), ('t')) AS kinds(p)",
        )
        .bind::<diesel::sql_types::Text, _>(&app.person)
        .bind::<diesel::sql_types::Integer, _>(count as i32),
        &mut conn,
    )
    .await
    .unwrap();
    diesel_async::RunQueryDsl::execute(diesel::sql_query("VACUUM ANALYZE entities, property_values"), &mut conn)
        .await
        .unwrap();
    println!(
        "{count} entities written in bulk in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// Reads one answer as a stream, keeping only its length; the peak RSS of
/// this process (reset first) while it is read.
async fn peak_while_reading(app: &TestApp, token: &str, query: &str) {
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let baseline = proc_status_mb("VmRSS");
    let started = Instant::now();
    let response = app
        .http
        .get(format!("{}/api/demo/entity?{query}", app.url))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = response.status();
    let mut body = response.bytes_stream();
    let (mut bytes, mut tail) = (0usize, Vec::new());
    while let Some(part) = body.next().await {
        let part = part.expect("a whole answer");
        bytes += part.len();
        tail = part.slice(part.len().saturating_sub(80)..).to_vec();
    }
    let peak = proc_status_mb("VmHWM");
    println!(
        "`{query}`: {status}, {:.1} MB in {:.2} s, ends {:?}; peak RSS {peak:.0} MB{} (RSS before {baseline:.0} MB; target <= 200 MB)",
        bytes as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&tail),
        if reset { "" } else { " (whole run: reset unavailable)" },
    );
}

/// 32 clients sending distinct unindexable queries for `seconds`, while a
/// sampler times `/health` and an indexed lookup every 10 ms.
async fn overload(app: &TestApp, token: &str, seconds: u64) {
    let done = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicUsize::new(0));
    let statuses = Arc::new(std::sync::Mutex::new(std::collections::BTreeMap::<u16, usize>::new()));
    let clients: Vec<_> = (0..32)
        .map(|client| {
            let (done, sent, statuses) = (done.clone(), sent.clone(), statuses.clone());
            let (http, url, token) = (app.http.clone(), app.url.clone(), token.to_owned());
            tokio::spawn(async move {
                while !done.load(Ordering::Relaxed) {
                    let k = sent.fetch_add(1, Ordering::Relaxed);
                    let query = if client % 2 == 0 {
                        format!("title.string.regex=.*x{k}")
                    } else {
                        format!("n.number.ne=-{k}&sort=-n.number")
                    };
                    let response = http
                        .get(format!("{url}/api/demo/entity?{query}"))
                        .bearer_auth(&token)
                        .send()
                        .await
                        .unwrap();
                    let status = response.status().as_u16();
                    response.bytes().await.ok();
                    *statuses.lock().unwrap().entry(status).or_default() += 1;
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (mut health, mut lookup, mut failed) = (Vec::new(), Vec::new(), 0);
    let until = Instant::now() + Duration::from_secs(seconds);
    while Instant::now() < until {
        for (path, samples) in [
            ("/health".to_owned(), &mut health),
            (format!("/api/demo/entity/{}", app.person), &mut lookup),
        ] {
            let started = Instant::now();
            let response = app
                .http
                .get(format!("{}{path}", app.url))
                .bearer_auth(token)
                .send()
                .await
                .unwrap();
            let ok = response.status() == 200;
            response.bytes().await.unwrap();
            samples.push(started.elapsed().as_secs_f64());
            failed += usize::from(!ok);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    done.store(true, Ordering::Relaxed);
    for client in clients {
        client.await.unwrap();
    }
    println!(
        "32 clients, unindexable queries for {seconds} s: answers by status {:?}",
        statuses.lock().unwrap()
    );
    for (name, samples) in [("/health", &health), ("indexed lookup", &lookup)] {
        println!(
            "{name} meanwhile: p50 {:.1} ms, p99 {:.1} ms ({} samples; target p99 <= 50 ms)",
            percentile_ms(samples, 50.0),
            percentile_ms(samples, 99.0),
            samples.len()
        );
    }
    println!("answers other than 200 among them: {failed}");
}

#[tokio::main]
async fn main() {
    let entities = env_number("EDS_BENCH_ENTITIES", 100_000);
    let seconds = env_number("EDS_BENCH_SECONDS", 10);
    let app = TestApp::start_with(
        Storage::Local,
        &[
            ("database.pool_size", "16".to_owned()),
            ("database.statement_timeout_ms", "5000".to_owned()),
            ("http.workers", "0".to_owned()),
            ("limits.enabled", "false".to_owned()),
        ],
    )
    .await;
    let token = app.owner_token().await;
    bulk_entities(&app, entities).await;
    peak_while_reading(&app, &token, "limit=1000000").await;
    peak_while_reading(&app, &token, "n.number.gte=0&sort=-n.number&limit=1000000").await;
    overload(&app, &token, seconds).await;
}
