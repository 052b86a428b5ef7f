//! Queries at a million entities: a fixed-seed generator loads `book`
//! entities (title with search, price, published, instock, code) through the
//! write path the API uses (`write::apply_batch`, as the writer actor calls
//! it), then `wrk` measures five list queries against two release `eds serve`
//! processes, one with the answer cache (the default) and one computing every
//! answer, and each query's plan is written with `EXPLAIN (ANALYZE, BUFFERS)`.
//!
//! `make bench BENCH=query` (installs `wrk` when missing, then runs `cargo
//! bench --bench query`; `EDS_BENCH_ENTITIES` sets the
//! number of books, 1,000,000 by default, `EDS_BENCH_SECONDS` each wrk run's
//! length, 10 by default, `EDS_BENCH_ONLY` one query: equality, range, q,
//! group or props). The loaded database is kept in a
//! durable cluster under /tmp and reused by later runs of the same size.

use std::path::{Path, PathBuf};
use std::time::Instant;

use diesel::Connection;
use diesel_async::RunQueryDsl;
use eds::db::{self, Pool, local_cluster::LocalCluster};
use eds::model::value::parse_body;
use eds::query::ListQuery;
use eds::write::{WriteOp, WriteOutcome, WriteRequest, apply, apply_batch};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value as Json, json};

use common::processes::{call_json, serve_logged};

#[path = "../tests/common/mod.rs"]
mod common;

/// The server's defaults, without rate limits (every client is one address).
const SERVE_ENV: [(&str, &str); 4] = [
    ("EDS__HTTP__WORKERS", "0"),
    ("EDS__DATABASE__POOL_SIZE", "16"),
    ("EDS__LIMITS__ENABLED", "false"),
    ("RUST_LOG", "warn,eds=info"),
];
const DB: &str = "books";
/// Books per transaction while loading.
const BATCH: usize = 500;

fn entities_wanted() -> usize {
    std::env::var("EDS_BENCH_ENTITIES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000)
}

/// Title words: made-up words from a fixed syllable set, 2,000 of them.
fn vocabulary() -> Vec<String> {
    const SYLLABLES: [&str; 16] = [
        "ka", "lo", "mi", "ren", "tu", "sha", "vor", "pel", "dri", "an", "gu", "ze", "fio", "mar", "ost", "qui",
    ];
    let mut rng = StdRng::seed_from_u64(7);
    let mut words = std::collections::BTreeSet::new();
    while words.len() < 2_000 {
        let length = rng.gen_range(2..=4);
        let word: String = (0..length).map(|_| SYLLABLES[rng.gen_range(0..16)]).collect();
        words.insert(word);
    }
    words.into_iter().collect()
}

struct Book {
    title: String,
    price: f64,
    published: String,
    instock: bool,
    code: String,
}

/// Book `n` of the fixed-seed sequence.
fn books(count: usize) -> impl Iterator<Item = Book> {
    let words = vocabulary();
    let mut rng = StdRng::seed_from_u64(42);
    (0..count).map(move |n| {
        let title = (0..3)
            .map(|_| words[rng.gen_range(0..words.len())].as_str())
            .collect::<Vec<_>>();
        Book {
            title: title.join(" "),
            price: f64::from(rng.gen_range(100..100_000)) / 100.0,
            published: format!(
                "{}-{:02}-{:02}",
                rng.gen_range(1950..2026),
                rng.gen_range(1..13),
                rng.gen_range(1..29)
            ),
            instock: rng.gen_bool(0.5),
            code: format!("BK-{n:07}"),
        }
    })
}

/// A durable cluster whose cache holds the whole data set (about 4.5 GB at a
/// million books), as on a server sized for it.
fn durable_cluster() -> LocalCluster {
    let dir = std::env::temp_dir().join("eds-bench-pg-durable");
    let cluster = LocalCluster::new(&dir).expect("PostgreSQL server binaries");
    cluster.ensure_running(false).expect("start the benchmark cluster");
    let mut conn = diesel::PgConnection::establish(&cluster.url("postgres").unwrap()).unwrap();
    #[derive(diesel::QueryableByName)]
    struct Setting {
        #[diesel(sql_type = diesel::sql_types::Text)]
        setting: String,
    }
    let cache: Setting = diesel::RunQueryDsl::get_result(
        diesel::sql_query("SELECT current_setting('shared_buffers') AS setting"),
        &mut conn,
    )
    .unwrap();
    if cache.setting != SHARED_BUFFERS {
        diesel::RunQueryDsl::execute(
            diesel::sql_query(format!("ALTER SYSTEM SET shared_buffers = '{SHARED_BUFFERS}'")),
            &mut conn,
        )
        .unwrap();
        drop(conn);
        cluster.stop().unwrap();
        cluster.ensure_running(false).unwrap();
    }
    cluster
}

const SHARED_BUFFERS: &str = "6GB";

/// Reads the tables and indexes into PostgreSQL's cache.
async fn prewarm(pool: &Pool) {
    let mut conn = pool.get().await.unwrap();
    diesel::sql_query("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        .execute(&mut conn)
        .await
        .unwrap();
    diesel::sql_query(
        "SELECT sum(pg_prewarm(c.oid::regclass)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i')",
    )
    .execute(&mut conn)
    .await
    .unwrap();
}

async fn scalar(pool: &Pool, sql: &str) -> i64 {
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let mut conn = pool.get().await.unwrap();
    diesel::sql_query(sql).get_result::<Row>(&mut conn).await.unwrap().n
}

/// Waits until no other session of the cluster is running a statement.
async fn wait_until_idle(pool: &Pool) {
    let busy = "SELECT count(*) AS n FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() \
                AND backend_type = 'client backend'";
    while scalar(pool, busy).await > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

async fn write(pool: &Pool, actor: &str, op: WriteOp) -> String {
    let request = WriteRequest {
        db: DB.into(),
        actor: actor.to_owned(),
        op,
    };
    match apply(pool, request).await.expect("a setup write") {
        WriteOutcome::Written { entity_id, values } => {
            if let Some(key) = values.into_iter().find_map(|v| v.plain_key) {
                return key;
            }
            entity_id
        }
        other => panic!("{other:?}"),
    }
}

fn values(json: Json) -> WriteOp {
    WriteOp::CreateEntity {
        values: parse_body(json.to_string().as_bytes()).unwrap(),
    }
}

/// The `book` type and its definitions; answers the type's id.
async fn define_books(pool: &Pool, owner: &str) -> String {
    let mut conn = pool.get().await.unwrap();
    let meta = |name: &str| {
        format!(
            "SELECT e.id AS id FROM entities e JOIN entities t ON t.db = e.db AND t.id = e.type_id \
             WHERE e.db = '{DB}' AND e.name = '{name}' AND t.name = 'entity'"
        )
    };
    #[derive(diesel::QueryableByName)]
    struct Id {
        #[diesel(sql_type = diesel::sql_types::Text)]
        id: String,
    }
    let entity_type = diesel::sql_query(meta("entity"))
        .get_result::<Id>(&mut conn)
        .await
        .unwrap()
        .id;
    let property_type = diesel::sql_query(meta("property"))
        .get_result::<Id>(&mut conn)
        .await
        .unwrap()
        .id;
    let book = write(
        pool,
        owner,
        values(json!([{"type": "_type", "reference": entity_type}, {"type": "name", "string": "book"}])),
    )
    .await;
    for (name, value_type, search) in [
        ("title", "string", true),
        ("price", "number", false),
        ("published", "date", false),
        ("instock", "boolean", false),
        ("code", "string", false),
    ] {
        write(
            pool,
            owner,
            values(json!([
                {"type": "_type", "reference": property_type}, {"type": "_parent", "reference": book},
                {"type": "name", "string": name}, {"type": "type", "string": value_type},
                {"type": "search", "boolean": search},
            ])),
        )
        .await;
    }
    book
}

/// Loads `count` books unless the database already holds them; answers the
/// owner's id.
async fn load(pool: &Pool, count: usize) -> String {
    let mut conn = pool.get().await.unwrap();
    let exists = eds::db::databases::exists(&mut conn, DB).await.unwrap();
    drop(conn);
    if exists {
        let owner = owner(pool).await;
        let books = scalar(
            pool,
            "SELECT count(*) AS n FROM entities WHERE db = 'books' AND doc ? 'code'",
        )
        .await;
        if books as usize == count {
            println!("reusing {count} books");
            return owner;
        }
        panic!(
            "database {DB} holds {books} books, not {count}: drop the benchmark cluster (/tmp/eds-bench-pg-durable)"
        );
    }
    let created = eds::db::databases::create(pool, DB, "bench@example.com", "Bench")
        .await
        .unwrap();
    let owner = created.person_id;
    let book = define_books(pool, &owner).await;
    let started = Instant::now();
    let mut loaded = 0;
    let mut pending = Vec::with_capacity(BATCH);
    for next in books(count) {
        let request = WriteRequest {
            db: DB.into(),
            actor: owner.clone(),
            op: values(json!([
                {"type": "_type", "reference": book},
                {"type": "title", "string": next.title},
                {"type": "price", "number": next.price},
                {"type": "published", "date": next.published},
                {"type": "instock", "boolean": next.instock},
                {"type": "code", "string": next.code},
            ])),
        };
        pending.push((request, Vec::new(), tracing::Span::none()));
        if pending.len() == BATCH {
            for outcome in apply_batch(pool, std::mem::take(&mut pending)).await {
                outcome.expect("a book");
            }
            loaded += BATCH;
            if loaded % 50_000 == 0 {
                let rate = loaded as f64 / started.elapsed().as_secs_f64();
                println!("loaded {loaded} books ({rate:.0}/s)");
            }
        }
    }
    for outcome in apply_batch(pool, pending).await {
        outcome.expect("a book");
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "loaded {count} books in {seconds:.0} s: {:.0} books/s",
        count as f64 / seconds
    );
    let mut conn = pool.get().await.unwrap();
    diesel::sql_query("VACUUM ANALYZE").execute(&mut conn).await.unwrap();
    owner
}

async fn owner(pool: &Pool) -> String {
    #[derive(diesel::QueryableByName)]
    struct Id {
        #[diesel(sql_type = diesel::sql_types::Text)]
        id: String,
    }
    let mut conn = pool.get().await.unwrap();
    diesel::sql_query(
        "SELECT entity_id AS id FROM property_values WHERE db = 'books' AND prop = 'service_api_key' \
         ORDER BY id LIMIT 1",
    )
    .get_result::<Id>(&mut conn)
    .await
    .unwrap()
    .id
}

/// One `wrk` run: requests/s, p50 and p99 in milliseconds (none when no
/// request finished), and the answers other than 2xx (503 `query_timeout`).
fn wrk(url: &str, token: &str, seconds: u32) -> (f64, Option<(f64, f64)>, u64) {
    let output = std::process::Command::new("wrk")
        .args(["-t2", "-c32", &format!("-d{seconds}s"), "--timeout", "30s", "--latency"])
        .args(["-H", &format!("Authorization: Bearer {token}")])
        .arg(url)
        .output()
        .expect("wrk (apt install wrk)");
    let text = String::from_utf8_lossy(&output.stdout);
    let field = |prefix: &str| -> Option<f64> {
        let line = text.lines().find(|line| line.trim_start().starts_with(prefix))?;
        let value = line.trim_start()[prefix.len()..].trim();
        Some(millis(value.split_whitespace().next()?))
    };
    let rate: f64 = text
        .lines()
        .find_map(|line| line.strip_prefix("Requests/sec:"))
        .and_then(|rate| rate.trim().parse().ok())
        .unwrap_or(0.0);
    let errors = text
        .lines()
        .find_map(|line| line.trim().strip_prefix("Non-2xx or 3xx responses:"))
        .and_then(|count| count.trim().parse().ok())
        .unwrap_or(0);
    let latency = field("50%").zip(field("99%")).filter(|_| rate > 0.0);
    (rate, latency, errors)
}

/// wrk's durations (`812.00us`, `1.20ms`, `2.01s`) in milliseconds.
fn millis(text: &str) -> f64 {
    let (number, factor) = if let Some(n) = text.strip_suffix("us") {
        (n, 0.001)
    } else if let Some(n) = text.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1000.0)
    } else {
        (text, 1.0)
    };
    number.parse::<f64>().unwrap() * factor
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main]
async fn main() {
    let count = entities_wanted();
    let seconds: u32 = std::env::var("EDS_BENCH_SECONDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10);
    let cluster = durable_cluster();
    let name = format!("eds_bench_books_{count}");
    db::create_database_if_missing(&cluster.url("postgres").unwrap(), &name, None).unwrap();
    let database_url = cluster.url(&name).unwrap();
    db::migrate(&database_url).unwrap();
    let pool = db::pool(&database_url, 4, 600_000).unwrap();
    let owner = load(&pool, count).await;
    prewarm(&pool).await;
    // A write to the person who owns (and so is referenced by) every book.
    let started = Instant::now();
    let key = write(
        &pool,
        &owner,
        WriteOp::AddValues {
            entity_id: owner.clone(),
            values: parse_body(br#"{"type": "service_api_key", "string": "generate"}"#).unwrap(),
        },
    )
    .await;
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
    ];
    let explain_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/bench");
    std::fs::create_dir_all(&explain_dir).unwrap();
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
        for (cache, server) in [("on", &cached_url), ("off", &uncached_url)] {
            let (path, token) = (format!("{server}/api/{DB}/entity?{query}"), token.clone());
            let runs = tokio::task::spawn_blocking(move || {
                wrk(&path, &token, 3); // warm-up
                (0..3).map(|_| wrk(&path, &token, seconds)).collect::<Vec<_>>()
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
            println!(
                "| {label} | {cache} | {:.0} | {latency} | {} | {} |",
                median(runs.iter().map(|run| run.0).collect()),
                runs.iter().map(|run| run.2).sum::<u64>(),
                answer["count"]
            );
        }
    }
}
