//! Re-projecting a million entities in the background: with the books of the
//! query benchmark loaded (`books::load`, the same durable cluster and
//! database), a change that shows more of every book — the `book` type made
//! public, else the `title` definition (narrowed first when it is public
//! already, which re-projects every book inside the narrowing write) — is
//! written through the API of a release `eds serve`, and the benchmark
//! reports how long the write took, how long until every book was
//! re-projected, and the latency of creates (`wrk`, 8 clients) meanwhile.
//! The books those creates add are deleted by the next run.
//!
//! `make bench BENCH=reproject` (installs `wrk` when missing, then runs
//! `cargo bench --bench reproject`; `EDS_BENCH_ENTITIES` sets the number of
//! books, 1,000,000 by default).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use books::{DB, SERVE_ENV, books_database, books_wanted, load, median, prewarm, scalar, wrk};
use eds::db;
use serde_json::json;

use support::processes::{call_json, serve_logged};

mod books;
#[path = "../tests/api/support/mod.rs"]
mod support;

/// Creates run in wrk runs of this length while the re-projection lasts.
const WRK_SECONDS: u32 = 5;

#[tokio::main]
async fn main() {
    let count = books_wanted();
    let (name, database_url, pool) = books_database(count);
    let owner = load(&pool, count).await;
    // the books an earlier run created while it measured (they have no code)
    for statement in [
        "DELETE FROM property_values WHERE db = 'books' AND entity_id IN (SELECT id FROM entities \
         WHERE db = 'books' AND doc ? 'title' AND NOT doc ? 'code')",
        "DELETE FROM entities WHERE db = 'books' AND doc ? 'title' AND NOT doc ? 'code'",
        "VACUUM ANALYZE",
    ] {
        diesel_async::RunQueryDsl::execute(diesel::sql_query(statement), &mut pool.get().await.unwrap())
            .await
            .unwrap();
    }
    prewarm(&pool).await;
    let key = books::api_key(&pool, &owner).await;
    let data_dir: PathBuf = std::env::temp_dir().join(format!("{name}-files"));
    let (_server, url, _) = serve_logged(&database_url, &data_dir, &SERVE_ENV).await;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(3600))
        .build()
        .unwrap();
    let auth = call_json(&http, &format!("{url}/api/auth?db={DB}"), &key, None).await;
    let token = auth["token"].as_str().unwrap().to_owned();

    let book = text(
        &pool,
        "SELECT id AS text FROM entities WHERE db = 'books' AND name = 'book'",
    )
    .await;
    let title = text(
        &pool,
        &format!(
            "SELECT id AS text FROM entities WHERE db = 'books' AND name = 'title' AND parent_ids = ARRAY['{book}']"
        ),
    )
    .await;
    let sharing_of = |id: &str| format!("SELECT sharing AS text FROM entities WHERE db = 'books' AND id = '{id}'");
    let share = |id: &str, sharing: &str| {
        let (http, url, token) = (http.clone(), url.clone(), token.clone());
        let (id, sharing) = (id.to_owned(), sharing.to_owned());
        async move {
            let started = Instant::now();
            let body = json!([{"type": "_sharing", "string": sharing}]);
            let answer = call_json(&http, &format!("{url}/api/{DB}/entity/{id}"), &token, Some(&body)).await;
            assert!(answer.get("error").is_none(), "{answer}");
            started.elapsed()
        }
    };
    let (changed, change) = if text(&pool, &sharing_of(&book)).await != "public" {
        (&book, "the `book` type made public")
    } else {
        if text(&pool, &sharing_of(&title)).await == "public" {
            let took = share(&title, "domain").await;
            println!(
                "the `title` definition narrowed to the domain view, every book re-projected in the write: {:.1} s",
                took.as_secs_f64()
            );
        }
        (&title, "the `title` definition made public")
    };
    let took = share(changed, "public").await;
    let started = Instant::now();
    println!("{change}: the write answered in {} ms", took.as_millis());

    let create = std::env::temp_dir().join("eds-bench-reproject-create.lua");
    let record = json!([{"type": "_type", "reference": book}, {"type": "title", "string": "written meanwhile"}]);
    std::fs::write(
        &create,
        format!(
            "wrk.method = \"POST\"\nwrk.headers[\"Content-Type\"] = \"application/json\"\nwrk.body = [==[{record}]==]\n"
        ),
    )
    .unwrap();
    let path = format!("{url}/api/{DB}/entity");
    let mut runs = Vec::new();
    let pending = "SELECT (SELECT count(*) FROM type_reprojections) + \
                   (SELECT count(*) FROM formula_queue WHERE parked_at IS NULL) AS n";
    while scalar(&pool, pending).await > 0 {
        let (path, token, create) = (path.clone(), token.clone(), create.clone());
        let run = tokio::task::spawn_blocking(move || wrk(&path, Some(&token), Some(&create), WRK_SECONDS, 8));
        runs.push(run.await.unwrap());
    }
    let finished = started.elapsed();
    let reprojected = scalar(
        &pool,
        &format!(
            "SELECT count(*) AS n FROM entities WHERE db = 'books' AND type_id = '{book}' AND deleted_at IS NULL \
             AND 'title' = ANY (public_props)"
        ),
    )
    .await;
    let members = scalar(
        &pool,
        &format!("SELECT count(*) AS n FROM entities WHERE db = 'books' AND type_id = '{book}' AND deleted_at IS NULL"),
    )
    .await;
    // the type made public changes no book's projection while its definitions are private
    println!(
        "{members} books re-projected in the background within {:.1} s of the write (to the last {WRK_SECONDS} s \
         wrk run's end), {reprojected} of them showing `title` publicly",
        finished.as_secs_f64()
    );
    let latencies: Vec<(f64, f64)> = runs.iter().filter_map(|run| run.1).collect();
    if latencies.is_empty() {
        println!("no create answered meanwhile");
        return;
    }
    println!(
        "creates meanwhile (8 clients, {} wrk runs of {WRK_SECONDS} s): {:.0} req/s, p50 {:.1} ms, p99 {:.1} ms (median of runs), worst p99 {:.1} ms, {} non-2xx",
        runs.len(),
        median(runs.iter().map(|run| run.0).collect()),
        median(latencies.iter().map(|l| l.0).collect()),
        median(latencies.iter().map(|l| l.1).collect()),
        latencies.iter().map(|l| l.1).fold(0.0, f64::max),
        runs.iter().map(|run| run.2).sum::<u64>(),
    );
}

/// The one text column `text` of a statement's one row.
async fn text(pool: &db::Pool, sql: &str) -> String {
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Text)]
        text: String,
    }
    let mut conn = pool.get().await.unwrap();
    diesel_async::RunQueryDsl::get_result::<Row>(diesel::sql_query(sql), &mut conn)
        .await
        .unwrap()
        .text
}
