//! eds side by side with PocketBase: the same fixed-seed 100,000 `book`
//! records loaded into both the way users write data, one create request
//! per record from one client over 16 connections (eds through
//! `POST /api/{db}/entity`, PocketBase through its record-create API), timed:
//! the load row. Then `wrk -t2 -c32` per row against each: get by id, a price
//! range sorted with the total, a two-word search with the total, equality on
//! `code`, one create per request; and eds alone for `group=instock.boolean`
//! and a mixed load (90% varied reads, 10% creates) with the answer cache off
//! and on. eds answers the read rows with the answer cache off
//! (`database.answer_cache_bytes = 0`), its PostgreSQL with
//! `synchronous_commit = on` (durable, as PocketBase is). A last, extra row
//! loads the books again through the bulk paths: `eds import` (in this
//! process) and PocketBase's batch API. Between the loads and the rows,
//! eds's database is vacuumed and checkpointed (`settle`).
//!
//! Every row reports CPU µs per request beside requests/s and latency: the
//! user + system time over the run of eds's process and every process of
//! its PostgreSQL cluster (the postmaster and all it forks), or of
//! PocketBase's process, divided by the requests answered. The eds/PB ratio
//! of each row, and the geometric mean of the get, range, search, equality
//! and create ratios, close the table.
//!
//! `make bench BENCH=peer` (installs `wrk` and PocketBase when missing, then
//! runs `cargo bench --bench peer`; `EDS_BENCH_ENTITIES` sets the number of
//! books, 100,000 by default, `EDS_BENCH_SECONDS` each wrk run's length, 10 by
//! default, `EDS_BENCH_RUNS` the runs per row whose median is printed, 3 by
//! default). eds's databases (`eds_peer_api`, `eds_peer_bulk`) live in the
//! query benchmark's durable cluster and are made anew by each run.

use books::cpu::{Processes, peak_rss_mb};
use books::measure::{Measured, Side, cells, measure, post_all, ratio, timed};
use books::pocketbase;
use books::rows::{ROTATION, eds_record, mixed_calls, rows};
use books::{Book, DB, SERVE_ENV, books, durable_cluster, prewarm};
use diesel::{Connection, PgConnection};
use diesel_async::RunQueryDsl;
use eds::db::{self, Pool, local_cluster::LocalCluster};

use support::processes::{call_json, serve_logged};

mod books;
#[path = "../tests/api/support/mod.rs"]
mod support;

/// Connections of each load through the API.
const LOAD_CONNECTIONS: usize = 16;
const DURABLE: &str = "fsync=on synchronous_commit=on";

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|n| n.parse().ok()).unwrap_or(default)
}

/// A new, migrated database `name` in the cluster, any earlier one dropped;
/// answers its URL.
fn fresh_database(cluster: &LocalCluster, name: &str) -> String {
    let admin = cluster.url("postgres").unwrap();
    let mut conn = PgConnection::establish(&admin).unwrap();
    diesel::RunQueryDsl::execute(
        diesel::sql_query(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")),
        &mut conn,
    )
    .unwrap();
    db::create_database_if_missing(&admin, name, None).unwrap();
    let url = cluster.url(name).unwrap();
    db::migrate(&url).unwrap();
    url
}

/// Has every commit of the cluster wait for its WAL flush, and checks that
/// sessions of `url` see it so.
fn make_durable(cluster: &LocalCluster, url: &str) {
    #[derive(diesel::QueryableByName)]
    struct Setting {
        #[diesel(sql_type = diesel::sql_types::Text)]
        setting: String,
    }
    let mut admin = PgConnection::establish(&cluster.url("postgres").unwrap()).unwrap();
    for sql in ["ALTER SYSTEM SET synchronous_commit = on", "SELECT pg_reload_conf()"] {
        diesel::RunQueryDsl::execute(diesel::sql_query(sql), &mut admin).unwrap();
    }
    let mut seen = String::new();
    // the postmaster applies a reload a moment after the signal
    for _ in 0..50 {
        let mut conn = PgConnection::establish(url).unwrap();
        seen = diesel::RunQueryDsl::get_result::<Setting>(
            diesel::sql_query(
                "SELECT string_agg(name || '=' || setting, ' ' ORDER BY name) AS setting FROM pg_settings \
                 WHERE name IN ('fsync', 'synchronous_commit')",
            ),
            &mut conn,
        )
        .unwrap()
        .setting;
        if seen == DURABLE {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("the benchmark cluster is not durable: {seen}");
}

/// The ids of `n` books, in `code` order.
async fn eds_ids(pool: &Pool, n: usize) -> Vec<String> {
    #[derive(diesel::QueryableByName)]
    struct Id {
        #[diesel(sql_type = diesel::sql_types::Text)]
        id: String,
    }
    let mut conn = pool.get().await.unwrap();
    diesel::sql_query(format!(
        "SELECT id FROM entities WHERE db = '{DB}' AND doc ? 'code' ORDER BY doc->>'code' LIMIT {n}"
    ))
    .load::<Id>(&mut conn)
    .await
    .unwrap()
    .into_iter()
    .map(|id| id.id)
    .collect()
}

/// Does at once what autovacuum and the checkpointer do in the minutes after
/// the load (autovacuum passed the value rows five times during it and again
/// eight minutes later, in the middle of whichever row was timed then): its
/// CPU, counted as eds's, and its competition for the two cores stay out of
/// the rows, which are timed in the steady state a server serves in. The
/// load row still pays for the vacuums that ran during the load.
async fn settle(pool: &Pool) {
    let mut conn = pool.get().await.unwrap();
    for sql in ["VACUUM ANALYZE", "CHECKPOINT"] {
        diesel::sql_query(sql).execute(&mut conn).await.unwrap();
    }
}

/// Prints a row of the table; answers its eds/PB ratio of requests/s.
fn print(label: &str, totals: &str, eds: &Measured, peer: Option<&Measured>) -> Option<f64> {
    let rates = peer.filter(|peer| peer.rate > 0.0).map(|peer| eds.rate / peer.rate);
    let cpu = peer
        .filter(|peer| peer.cpu_us > 0.0)
        .map(|peer| eds.cpu_us / peer.cpu_us);
    println!(
        "| {label} | {totals} | {} | {} | {} | {} |",
        cells(Some(eds)),
        cells(peer),
        rates.map_or("—".to_owned(), ratio),
        cpu.map_or("—".to_owned(), ratio),
    );
    rates
}

#[tokio::main]
async fn main() {
    let count = env_number("EDS_BENCH_ENTITIES", 100_000);
    let seconds = env_number("EDS_BENCH_SECONDS", 10) as u32;
    let runs = env_number("EDS_BENCH_RUNS", 3);
    let http = reqwest::Client::new();
    let work = support::tempdir::Dir::new();

    let cluster = durable_cluster();
    let database_url = fresh_database(&cluster, "eds_peer_api");
    make_durable(&cluster, &database_url);
    let pool = db::pool(&database_url, 4, 600_000).unwrap();
    let owner = db::databases::create(&pool, DB, "bench@example.com", "Bench")
        .await
        .unwrap()
        .person_id;
    let book_type = books::define_books(&pool, &owner).await;
    let key = books::api_key(&pool, &owner).await;
    let data_dir = work.0.join("eds-files");
    let uncached_env: Vec<(&str, &str)> = SERVE_ENV
        .into_iter()
        .chain([("EDS__DATABASE__ANSWER_CACHE_BYTES", "0")])
        .collect();
    let (uncached, uncached_url, _) = serve_logged(&database_url, &data_dir, &uncached_env).await;
    let auth = call_json(&http, &format!("{uncached_url}/api/auth?db={DB}"), &key, None).await;
    let token = auth["token"].as_str().unwrap().to_owned();
    let eds_processes = Processes::tree(uncached.id().unwrap()).and_cluster(cluster.data_dir());

    let pb = pocketbase::start(&work.0, &http).await;
    pb.collection(&http, "books").await;
    let pb_processes = pb.processes();

    let all: Vec<Book> = books(count).collect();
    let eds_bodies = all.iter().map(|book| eds_record(&book_type, book).to_string());
    let eds_load = post_all(
        &http,
        &format!("{uncached_url}/api/{DB}/entity"),
        Some(&token),
        eds_bodies.collect(),
        LOAD_CONNECTIONS,
        &eds_processes,
    )
    .await;
    let pb_bodies = all.iter().map(|book| pocketbase::record(book).to_string());
    let pb_load = post_all(
        &http,
        &format!("{}/api/collections/books/records", pb.url),
        None,
        pb_bodies.collect(),
        LOAD_CONNECTIONS,
        &pb_processes,
    )
    .await;
    settle(&pool).await;
    prewarm(&pool).await;
    let eds_ids = eds_ids(&pool, ROTATION).await;
    let pb_ids = pb.ids(&http, ROTATION).await;

    println!(
        "\n{count} books, loaded into both through the API ({LOAD_CONNECTIONS} connections, one client); then \
         wrk -t2 -c32 -d{seconds}s after a 3 s warm-up, median of {runs} runs; rate limits off. eds: API key → JWT, \
         answer cache off unless said, PostgreSQL {DURABLE}; PocketBase {}: public list/view/create rules, no token. \
         CPU µs/req: user + system time over the run of eds and every process of its PostgreSQL cluster, or of \
         PocketBase, divided by the requests.\n",
        pocketbase::version()
    );
    println!(
        "| row | total eds / PB | eds req/s | eds p50 ms | eds p99 ms | eds CPU µs/req | PB req/s | PB p50 ms | \
         PB p99 ms | PB CPU µs/req | eds/PB req/s | eds/PB CPU/req |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    print(
        &format!("load {count} books through the API (one create per request, {LOAD_CONNECTIONS} connections)"),
        "—",
        &eds_load,
        Some(&pb_load),
    );
    let mut ratios = Vec::new();
    for (n, row) in rows(count, &eds_ids, &pb_ids, &book_type).into_iter().enumerate() {
        // Both sides' totals for the row's first list query: the same matches.
        let totals = match (&row.eds[0], &row.pocketbase) {
            (first, Some(pb_calls)) if first.path.contains("/entity?") => {
                let eds_answer = call_json(&http, &format!("{uncached_url}{}", first.path), &token, None).await;
                let pb_answer = call_json(&http, &format!("{}{}", pb.url, pb_calls[0].path), &pb.token, None).await;
                format!("{} / {}", eds_answer["count"], pb_answer["totalItems"])
            }
            _ => "—".to_owned(),
        };
        let eds_side = Side {
            url: &uncached_url,
            token: Some(&token),
            calls: row.eds,
            processes: &eds_processes,
        };
        let eds = measure(eds_side, &format!("eds-{n}"), &work.0, seconds, runs).await;
        let peer = match row.pocketbase {
            Some(calls) => {
                let side = Side {
                    url: &pb.url,
                    token: None,
                    calls,
                    processes: &pb_processes,
                };
                Some(measure(side, &format!("pb-{n}"), &work.0, seconds, runs).await)
            }
            None => None,
        };
        ratios.extend(print(&row.label, &totals, &eds, peer.as_ref()));
    }
    let mixed_side = |url, processes| Side {
        url,
        token: Some(&token),
        calls: mixed_calls(count, &eds_ids, &book_type),
        processes,
    };
    let uncached_mixed = measure(
        mixed_side(&uncached_url, &eds_processes),
        "mixed-off",
        &work.0,
        seconds,
        runs,
    )
    .await;
    print(
        "mixed: 90% reads above, varied, 10% creates (cache off)",
        "—",
        &uncached_mixed,
        None,
    );
    let (cached, cached_url, _) = serve_logged(&database_url, &data_dir, &SERVE_ENV).await;
    let cached_processes = Processes::tree(cached.id().unwrap()).and_cluster(cluster.data_dir());
    let cached_mixed = measure(
        mixed_side(&cached_url, &cached_processes),
        "mixed-on",
        &work.0,
        seconds,
        runs,
    )
    .await;
    print("mixed, answer cache on", "—", &cached_mixed, None);

    // The extra row: both bulk paths, into a database and a collection of their own.
    let bulk_url = fresh_database(&cluster, "eds_peer_bulk");
    let bulk_pool = db::pool(&bulk_url, 4, 600_000).unwrap();
    let (_, input) = books::import_input(&bulk_pool, count).await;
    let importer = Processes::this_process().and_cluster(cluster.data_dir());
    let eds_bulk = timed(count, &importer, async {
        eds::cli::import::import(&bulk_pool, DB, std::io::Cursor::new(input))
            .await
            .unwrap();
    })
    .await;
    pb.collection(&http, "books_bulk").await;
    let pb_bulk = pb.load_batches(&http, "books_bulk", &all).await;
    print(
        &format!(
            "extra: bulk load of {count} books, `eds import` (CPU: this benchmark's process + PostgreSQL) / \
             PocketBase batch API (500 per request, 4 in flight)"
        ),
        "—",
        &eds_bulk,
        Some(&pb_bulk),
    );

    let mean = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
    println!(
        "\ngeometric mean of the eds/PB req/s ratios of get, range, search, equality and create: {}",
        ratio(mean)
    );
    println!(
        "peak RSS (VmHWM of the process; eds's PostgreSQL backends not counted): eds cache off {:.0} MB, \
         eds cache on (mixed row only) {:.0} MB, PocketBase {:.0} MB",
        peak_rss_mb(uncached.id().unwrap()),
        peak_rss_mb(cached.id().unwrap()),
        peak_rss_mb(pb.child.id().unwrap()),
    );
}
