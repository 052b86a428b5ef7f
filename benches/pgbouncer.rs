//! eds with and without a transaction-pooling PgBouncer: `wrk` measures a
//! get by id and a list against three release-built `eds serve` processes on
//! one database of fixed-seed books (10,000 by default) in the test cluster:
//! `direct` (`database.url` the cluster itself: named statements kept
//! prepared per connection, the limits in the `options` parameter),
//! `unnamed` (the pooled mode's connections, each statement parsed again
//! with its Bind, on the cluster itself: the cost of that alone) and
//! `pgbouncer` (Debian's PgBouncer 1.18 in front, pool_mode = transaction,
//! as many server connections as eds's pool). The answer cache is off, so
//! every request reads PostgreSQL.
//!
//! `make bench BENCH=pgbouncer` (`EDS_BENCH_ENTITIES` sets the number of
//! books, `EDS_BENCH_SECONDS` each wrk run's length, 5 by default,
//! `EDS_BENCH_RUNS` the runs whose median is printed, 3 by default).

use books::{DB, SERVE_ENV, api_key, load, median, wrk};
use support::pgbouncer::{database_name, pgbouncer};
use support::processes::{call_json, serve_logged};

mod books;
#[path = "../tests/api/support/mod.rs"]
mod support;

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|n| n.parse().ok()).unwrap_or(default)
}

#[tokio::main]
async fn main() {
    let count = setting("EDS_BENCH_ENTITIES", 10_000);
    let seconds = setting("EDS_BENCH_SECONDS", 5) as u32;
    let runs = setting("EDS_BENCH_RUNS", 3);
    let bouncer = pgbouncer();
    let database_url = support::fresh_database();
    let name = database_name(&database_url);
    bouncer.pool_size(&name, 16).await;
    let pool = eds::db::pool(&database_url, 4, 600_000).unwrap();
    let owner = load(&pool, count).await;
    let key = api_key(&pool, &owner).await;
    let direct = bouncer.direct_url(&name);
    // another spelling of the same address: the pooled mode, without a pooler
    let unnamed = direct.replace("@127.0.0.1:", "@localhost:");
    let sides = [
        ("direct", direct.clone()),
        ("unnamed", unnamed),
        ("pgbouncer", bouncer.url(&name)),
    ];
    println!("{count} books, wrk -c32 for {seconds} s, median of {runs} runs (requests/s, p50 ms)");
    println!("| setup | get by id | list |");
    println!("|---|---|---|");
    for (side, url) in sides {
        let data_dir = support::tempdir::Dir::new();
        let mut env: Vec<(&str, &str)> = SERVE_ENV.to_vec();
        env.extend([
            ("EDS__DATABASE__DIRECT_URL", direct.as_str()),
            ("EDS__DATABASE__ANSWER_CACHE_BYTES", "0"),
        ]);
        let (mut child, base, _) = serve_logged(&url, &data_dir.0, &env).await;
        let http = reqwest::Client::new();
        let auth = call_json(&http, &format!("{base}/api/auth?db={DB}"), &key, None).await;
        let token = auth["token"].as_str().expect("a token").to_owned();
        let list = format!("{base}/api/{DB}/entity?_type.string=book&limit=20&props=name,price");
        let found = call_json(&http, &list, &token, None).await;
        let id = found["entities"][0]["_id"].as_str().expect("a book").to_owned();
        let get = format!("{base}/api/{DB}/entity/{id}");
        let mut cells = Vec::new();
        for path in [&get, &list] {
            wrk(path, Some(&token), None, 2, 32); // warm-up
            let measured: Vec<(f64, f64)> = (0..runs)
                .map(|_| {
                    let (rate, latency, errors) = wrk(path, Some(&token), None, seconds, 32);
                    assert_eq!(errors, 0, "{side}: answers other than 2xx");
                    (rate, latency.map(|(p50, _)| p50).unwrap_or(f64::NAN))
                })
                .collect();
            let rate = median(measured.iter().map(|m| m.0).collect());
            let p50 = median(measured.iter().map(|m| m.1).collect());
            cells.push(format!("{rate:.0} ({p50:.1})"));
        }
        println!("| {side} | {} | {} |", cells[0], cells[1]);
        child.kill().await.unwrap();
    }
}
