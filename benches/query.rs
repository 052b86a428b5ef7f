//! Queries at a million entities: a fixed-seed generator makes `book`
//! entities (title with search, price, published, instock, code), loaded
//! through `eds import` (see `books::load`), the first thousand of them
//! given a `publisher` reference to a person through the write path (kept
//! for later runs), then `wrk` measures seven list queries against two release
//! `eds serve` processes, one with the answer
//! cache (the default) and one computing every answer, with 32 clients and
//! with one, and each query's plan is written with `EXPLAIN (ANALYZE,
//! BUFFERS)` (to `docs/guide/src/performance/` at the default size, else to a folder under
//! the system's temporary directory).
//!
//! `make bench BENCH=query` (installs `wrk` when missing, then runs `cargo
//! bench --bench query`; `EDS_BENCH_ENTITIES` sets the
//! number of books, 1,000,000 by default, `EDS_BENCH_SECONDS` each wrk run's
//! length, 10 by default, `EDS_BENCH_ONLY` one query: equality, range, q,
//! group, props, skip or referrers). The loaded database is kept in a
//! durable cluster under /tmp and reused by later runs of the same size.

use std::path::{Path, PathBuf};
use std::time::Instant;

use books::{DB, SERVE_ENV, books, books_database, books_wanted, load, median, prewarm, scalar, write, wrk};
use diesel_async::RunQueryDsl;
use eds::db::Pool;
use eds::model::value::parse_body;
use eds::query::ListQuery;
use eds::write::WriteOp;

use support::processes::{call_json, serve_logged};

mod books;
#[path = "../tests/api/support/mod.rs"]
mod support;

/// The size whose plans are kept in `docs/guide/src/performance/`.
const DEFAULT_ENTITIES: usize = 1_000_000;

/// How many books refer to the publisher (see [`publisher_with_referrers`]).
const REFERRERS: usize = 1_000;

/// A person "Publisher" whom the first [`REFERRERS`] books (in `_id` order)
/// refer to through a `publisher` reference, made through the write path
/// unless already there (kept for later runs); answers the person's id.
/// Nothing else refers to it, as for most entities whose page the web app
/// opens (the owner, by contrast, is the target of every book's `_owner` and
/// `_created`).
async fn publisher_with_referrers(pool: &Pool, owner: &str) -> String {
    #[derive(diesel::QueryableByName)]
    struct Id {
        #[diesel(sql_type = diesel::sql_types::Text)]
        id: String,
    }
    let named = |name: &str, type_name: &str| {
        format!(
            "SELECT e.id FROM entities e JOIN entities t ON t.db = e.db AND t.id = e.type_id \
             WHERE e.db = '{DB}' AND e.deleted_at IS NULL AND e.name = '{name}' AND t.name = '{type_name}'"
        )
    };
    let mut conn = pool.get().await.unwrap();
    let found: Option<Id> = diesel::sql_query(named("Publisher", "person"))
        .get_result(&mut conn)
        .await
        .ok();
    let publisher = match found {
        Some(found) => found.id,
        None => {
            let person: Id = diesel::sql_query(named("person", "entity"))
                .get_result(&mut conn)
                .await
                .unwrap();
            let values = serde_json::json!([
                {"type": "_type", "reference": person.id}, {"type": "name", "string": "Publisher"},
            ]);
            write(pool, owner, books::values(values)).await
        }
    };
    let missing: Vec<Id> = diesel::sql_query(format!(
        "SELECT b.id FROM (SELECT e.id FROM entities e WHERE e.db = '{DB}' AND e.deleted_at IS NULL \
         AND e.doc ? 'code' ORDER BY e.id LIMIT {REFERRERS}) b WHERE NOT EXISTS (SELECT 1 FROM property_values v \
         WHERE v.db = '{DB}' AND v.entity_id = b.id AND v.prop = 'publisher' AND v.deleted_at IS NULL)"
    ))
    .load(&mut conn)
    .await
    .unwrap();
    drop(conn);
    let started = Instant::now();
    let value = serde_json::json!({"type": "publisher", "reference": publisher}).to_string();
    for book in &missing {
        let op = WriteOp::AddValues {
            entity_id: book.id.clone(),
            values: parse_body(value.as_bytes()).unwrap(),
        };
        write(pool, owner, op).await;
    }
    if !missing.is_empty() {
        println!(
            "{} books given a reference to a publisher: {} ms",
            missing.len(),
            started.elapsed().as_millis()
        );
    }
    publisher
}

/// Waits until no other session of the cluster is running a statement.
async fn wait_until_idle(pool: &Pool) {
    let busy = "SELECT count(*) AS n FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() \
                AND backend_type = 'client backend'";
    while scalar(pool, busy).await > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

#[tokio::main]
async fn main() {
    let count = books_wanted();
    let seconds: u32 = std::env::var("EDS_BENCH_SECONDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10);
    let (name, database_url, pool) = books_database(count);
    let owner = load(&pool, count).await;
    let publisher = publisher_with_referrers(&pool, &owner).await;
    prewarm(&pool).await;
    // A write to the person who owns (and so is referenced by) every book.
    let started = Instant::now();
    let key = books::api_key(&pool, &owner).await;
    println!(
        "an API key added to the owner of {count} books: {} ms",
        started.elapsed().as_millis()
    );

    let data_dir: PathBuf = std::env::temp_dir().join(format!("{name}-files"));
    // One server with the answer cache (the default), one computing every answer.
    let (_cached_server, cached_url, _) = serve_logged(&database_url, &data_dir, &SERVE_ENV).await;
    let uncached_env: Vec<(&str, &str)> = SERVE_ENV
        .into_iter()
        .chain([("EDS__DATABASE__ANSWER_CACHE_BYTES", "0")])
        .collect();
    let (_uncached_server, uncached_url, _) = serve_logged(&database_url, &data_dir, &uncached_env).await;
    let url = cached_url.clone();
    let http = reqwest::Client::new();
    let auth = call_json(&http, &format!("{url}/api/auth?db={DB}"), &key, None).await;
    let token = auth["token"].as_str().unwrap().to_owned();

    // two words of a title in the middle of the sequence
    let title = books(count / 2 + 1).last().unwrap().title;
    let words: Vec<&str> = title.split(' ').collect();
    let queries = [
        (
            "equality",
            "equality filter on `code`",
            format!("code.string=BK-{:07}", count / 2),
        ),
        (
            "range",
            "range on `price` (about 1%) + sort + 20 per page with count",
            "price.number.gte=500&price.number.lt=510&sort=-price.number&limit=20".to_owned(),
        ),
        ("q", "two-word `q`", format!("q={}+{}&limit=20", words[0], words[1])),
        ("group", "`group=instock.boolean`", "group=instock.boolean".to_owned()),
        ("props", "`props` projection", "props=title,price&limit=20".to_owned()),
        (
            "referrers",
            "referrers of an entity by type, as the web app asks (1,000)",
            format!(
                "_reference.reference={publisher}&_reference.property_type.ne=_parent&group=_type.reference&props=_type"
            ),
        ),
        (
            "skip",
            "sorted by `price`, a page from the middle",
            format!("sort=-price.number&skip={}&limit=20", count / 2),
        ),
    ];
    // plans of another size go to a scratch folder, not over the kept ones
    let explain_dir = if count == DEFAULT_ENTITIES {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/guide/src/performance")
    } else {
        std::env::temp_dir().join(format!("eds-bench-plans-{count}"))
    };
    std::fs::create_dir_all(&explain_dir).unwrap();
    println!("plans: {}", explain_dir.display());
    println!("| query | answer cache | requests/s | p50 ms | p99 ms | non-2xx answers | count |");
    println!("|---|---|---|---|---|---|---|");
    let only = std::env::var("EDS_BENCH_ONLY").ok();
    for (slug, label, query) in &queries {
        if only.as_deref().is_some_and(|only| only != *slug) {
            continue;
        }
        // The previous query's last requests may still be running (wrk
        // leaves, the server finishes them): plans and the first answer are
        // taken once PostgreSQL is idle.
        wait_until_idle(&pool).await;
        let path = format!("{url}/api/{DB}/entity?{query}");
        let mut attempts = 0;
        let answer = loop {
            let answer = call_json(&http, &path, &token, None).await;
            attempts += 1;
            if answer["error"] != "query_timeout" || attempts == 5 {
                break answer;
            }
            tokio::time::sleep(std::time::Duration::from_secs(3)).await;
        };
        assert!(answer.get("error").is_none(), "{query}: {answer}");
        let params: Vec<(String, String)> = serde_urlencoded::from_str(query).unwrap();
        let parsed = ListQuery::parse(&params).unwrap();
        let mut conn = pool.get().await.unwrap();
        let plans = eds::query::sql::explain(&mut conn, DB, Some(&owner), &parsed)
            .await
            .unwrap();
        std::fs::write(
            explain_dir.join(format!("query-{slug}.txt")),
            format!(
                "-- {label}: GET /api/{DB}/entity?{query}\n-- {count} books, EXPLAIN (ANALYZE, BUFFERS) of each statement it runs\n\n{}\n",
                plans.join("\n\n")
            ),
        )
        .unwrap();
        // 32 clients against each server, then one client against the
        // engine alone: its p50 is the time one request takes
        for (cache, server, clients) in [
            ("on", &cached_url, 32),
            ("off", &uncached_url, 32),
            ("off, one client", &uncached_url, 1),
        ] {
            let (path, token) = (format!("{server}/api/{DB}/entity?{query}"), token.clone());
            let runs = tokio::task::spawn_blocking(move || {
                wrk(&path, Some(&token), None, 3, clients); // warm-up
                (0..3)
                    .map(|_| wrk(&path, Some(&token), None, seconds, clients))
                    .collect::<Vec<_>>()
            })
            .await
            .unwrap();
            let latencies: Vec<(f64, f64)> = runs.iter().filter_map(|run| run.1).collect();
            let latency = if latencies.is_empty() {
                "no answer within the run | —".to_owned()
            } else {
                format!(
                    "{:.1} | {:.1}",
                    median(latencies.iter().map(|l| l.0).collect()),
                    median(latencies.iter().map(|l| l.1).collect())
                )
            };
            let rate = median(runs.iter().map(|run| run.0).collect());
            // a decimal below 10, so one request in two seconds is not 0
            let rate = if rate < 10.0 {
                format!("{rate:.1}")
            } else {
                format!("{rate:.0}")
            };
            println!(
                "| {label} | {cache} | {rate} | {latency} | {} | {} |",
                runs.iter().map(|run| run.2).sum::<u64>(),
                answer["count"]
            );
        }
    }
}
