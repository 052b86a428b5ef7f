//! eds side by side with PocketBase: the same fixed-seed 100,000 `book`
//! records on both (eds loaded through `eds import` as the query benchmark
//! does, PocketBase through its batch API), then `wrk -t2 -c32` per row
//! against each: get by id, a price range sorted with the total, a two-word
//! search with the total, equality on `code`, one create per request; and eds
//! alone for `group=instock.boolean` and a mixed load (90% varied reads, 10%
//! creates) with the answer cache off and on. eds answers the read rows with
//! the answer cache off (`database.answer_cache_bytes = 0`).
//!
//! `make bench BENCH=peer` (installs `wrk` and PocketBase when missing, then
//! runs `cargo bench --bench peer`; `EDS_BENCH_ENTITIES` sets the number of
//! books, 100,000 by default, `EDS_BENCH_SECONDS` each wrk run's length, 10 by
//! default, `EDS_BENCH_RUNS` the runs per row whose median is printed, 3 by
//! default). The loaded eds database is kept in the query benchmark's durable
//! cluster and copied for each run, so creates never change it.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use books::{Book, DB, SERVE_ENV, books, durable_cluster, load, median, prewarm, vocabulary, wrk};
use diesel::Connection;
use diesel_async::RunQueryDsl;
use eds::db::{self, Pool};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value as Json, json};

use common::processes::{call_json, serve_logged};

mod books;
#[path = "../tests/common/mod.rs"]
mod common;

/// Where `scripts/install-bench-tools.sh` installs PocketBase.
const POCKETBASE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/.data/pocketbase-venv/bin/pocketbase");
const SUPERUSER: (&str, &str) = ("bench@example.com", "bench-password-1");
/// Ids and `code` values each rotating row cycles through.
const ROTATION: usize = 1_000;
/// Records per PocketBase batch request, and batches in flight.
const PB_BATCH: usize = 500;
const PB_BATCHES_IN_FLIGHT: usize = 4;

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|n| n.parse().ok()).unwrap_or(default)
}

/// One HTTP request of a wrk script.
struct Call {
    method: &'static str,
    path: String,
    body: Option<String>,
}

impl Call {
    fn get(path: String) -> Call {
        Call {
            method: "GET",
            path,
            body: None,
        }
    }
}

/// A wrk Lua script sending `calls` in turn (each wrk thread from the first).
fn script(dir: &Path, name: &str, calls: &[Call]) -> PathBuf {
    let mut lua = String::from("wrk.headers[\"Content-Type\"] = \"application/json\"\nlocal calls = {\n");
    for call in calls {
        let body = call
            .body
            .as_deref()
            .map_or("nil".to_owned(), |b| format!("[==[{b}]==]"));
        lua.push_str(&format!("  {{\"{}\", [==[{}]==], {body}}},\n", call.method, call.path));
    }
    lua.push_str(
        "}\nlocal next = 0\nrequest = function()\n  next = next % #calls + 1\n  local call = calls[next]\n  \
         return wrk.format(call[1], call[2], nil, call[3])\nend\n",
    );
    let path = dir.join(format!("{name}.lua"));
    std::fs::write(&path, lua).unwrap();
    path
}

fn query(pairs: &[(&str, &str)]) -> String {
    serde_urlencoded::to_string(pairs).unwrap()
}

/// One side of a row: the server's base URL, the bearer token if any, its calls.
struct Side<'a> {
    url: &'a str,
    token: Option<&'a str>,
    calls: Vec<Call>,
}

/// Requests/s, p50, p99 (medians over the runs) and non-2xx answers in all.
struct Measured {
    rate: f64,
    latency: Option<(f64, f64)>,
    errors: u64,
}

async fn measure(side: Side<'_>, name: &str, dir: &Path, seconds: u32, runs: usize) -> Measured {
    let script = script(dir, name, &side.calls);
    let (url, token) = (side.url.to_owned(), side.token.map(str::to_owned));
    let results = tokio::task::spawn_blocking(move || {
        wrk(&url, token.as_deref(), Some(&script), 3, 32); // warm-up
        (0..runs)
            .map(|_| wrk(&url, token.as_deref(), Some(&script), seconds, 32))
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    let latencies: Vec<(f64, f64)> = results.iter().filter_map(|run| run.1).collect();
    Measured {
        rate: median(results.iter().map(|run| run.0).collect()),
        latency: (!latencies.is_empty()).then(|| {
            (
                median(latencies.iter().map(|l| l.0).collect()),
                median(latencies.iter().map(|l| l.1).collect()),
            )
        }),
        errors: results.iter().map(|run| run.2).sum(),
    }
}

fn cells(measured: Option<&Measured>) -> String {
    match measured {
        None => "— | — | —".to_owned(),
        Some(m) => {
            let latency = m.latency.map_or("no answer | —".to_owned(), |(p50, p99)| {
                format!("{p50:.1} | {p99:.1}")
            });
            let errors = if m.errors > 0 {
                format!(" ({} non-2xx)", m.errors)
            } else {
                String::new()
            };
            format!("{:.0}{errors} | {latency}", m.rate)
        }
    }
}

/// Peak resident memory of a process (`VmHWM`), in MB.
fn peak_rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The eds database: a fresh copy of the loaded template, with an API key
/// for the owner of the books. Answers its URL and the key.
async fn eds_database(count: usize) -> (String, String) {
    let cluster = durable_cluster();
    let admin = cluster.url("postgres").unwrap();
    let template = format!("eds_peer_books_{count}");
    db::create_database_if_missing(&admin, &template, None).unwrap();
    let template_url = cluster.url(&template).unwrap();
    db::migrate(&template_url).unwrap();
    let pool = db::pool(&template_url, 4, 600_000).unwrap();
    load(&pool, count).await;
    drop(pool);
    let copy = format!("eds_peer_run_{count}");
    let mut admin_conn = diesel::PgConnection::establish(&admin).unwrap();
    for sql in [
        format!("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{template}'"),
        format!("DROP DATABASE IF EXISTS {copy} WITH (FORCE)"),
    ] {
        diesel::RunQueryDsl::execute(diesel::sql_query(sql), &mut admin_conn).unwrap();
    }
    db::create_database_if_missing(&admin, &copy, Some(&template)).unwrap();
    let database_url = cluster.url(&copy).unwrap();
    let pool = db::pool(&database_url, 4, 600_000).unwrap();
    prewarm(&pool).await;
    let owner = books::owner(&pool).await;
    let key = books::api_key(&pool, &owner).await;
    (database_url, key)
}

/// The ids of `n` books, and the id of the `book` type.
async fn eds_ids(pool: &Pool, n: usize) -> (Vec<String>, String) {
    #[derive(diesel::QueryableByName)]
    struct Id {
        #[diesel(sql_type = diesel::sql_types::Text)]
        id: String,
    }
    let mut conn = pool.get().await.unwrap();
    let ids = diesel::sql_query(format!(
        "SELECT id FROM entities WHERE db = '{DB}' AND doc ? 'code' ORDER BY doc->>'code' LIMIT {n}"
    ))
    .load::<Id>(&mut conn)
    .await
    .unwrap();
    let book = diesel::sql_query(format!(
        "SELECT e.id AS id FROM entities e JOIN entities t ON t.db = e.db AND t.id = e.type_id \
         WHERE e.db = '{DB}' AND e.name = 'book' AND t.name = 'entity'"
    ))
    .get_result::<Id>(&mut conn)
    .await
    .unwrap();
    (ids.into_iter().map(|id| id.id).collect(), book.id)
}

/// A running PocketBase with the `books` collection, its data in `dir`.
struct PocketBase {
    child: tokio::process::Child,
    url: String,
}

async fn pocketbase(dir: &Path, http: &reqwest::Client) -> (PocketBase, String) {
    let data = dir.join("pb_data");
    let upsert = std::process::Command::new(POCKETBASE)
        .args(["superuser", "upsert", SUPERUSER.0, SUPERUSER.1, "--dir"])
        .arg(&data)
        .output()
        .expect("PocketBase (scripts/install-bench-tools.sh installs it)");
    assert!(upsert.status.success(), "{}", String::from_utf8_lossy(&upsert.stderr));
    let address = format!("127.0.0.1:{}", free_port());
    let child = tokio::process::Command::new(POCKETBASE)
        .args(["serve", "--http", &address, "--dir"])
        .arg(&data)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let url = format!("http://{address}");
    let started = Instant::now();
    while http.get(format!("{url}/api/health")).send().await.is_err() {
        assert!(started.elapsed() < Duration::from_secs(30), "PocketBase did not start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let auth: Json = http
        .post(format!("{url}/api/collections/_superusers/auth-with-password"))
        .json(&json!({"identity": SUPERUSER.0, "password": SUPERUSER.1}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = auth["token"].as_str().expect("a superuser token").to_owned();
    let settings = http
        .patch(format!("{url}/api/settings"))
        .bearer_auth(&token)
        .json(&json!({"batch": {"enabled": true, "maxRequests": PB_BATCH, "timeout": 60, "maxBodySize": 0}}))
        .send()
        .await
        .unwrap();
    assert!(settings.status().is_success(), "{}", settings.text().await.unwrap());
    let collection = call_json(
        http,
        &format!("{url}/api/collections"),
        &token,
        Some(&json!({
            "name": "books", "type": "base", "listRule": "", "viewRule": "", "createRule": "",
            "fields": [
                {"name": "title", "type": "text"}, {"name": "price", "type": "number"},
                {"name": "published", "type": "date"}, {"name": "instock", "type": "bool"},
                {"name": "code", "type": "text"},
            ],
            "indexes": [
                "CREATE INDEX idx_books_price ON books (price)",
                "CREATE INDEX idx_books_published ON books (published)",
                "CREATE INDEX idx_books_code ON books (code)",
            ],
        })),
    )
    .await;
    assert_eq!(collection["name"], "books", "{collection}");
    (PocketBase { child, url }, token)
}

fn pocketbase_record(book: &Book) -> Json {
    json!({
        "title": book.title, "price": book.price, "published": format!("{} 00:00:00.000Z", book.published),
        "instock": book.instock, "code": book.code,
    })
}

fn eds_record(book_type: &str, book: &Book) -> Json {
    json!([
        {"type": "_type", "reference": book_type},
        {"type": "title", "string": book.title},
        {"type": "price", "number": book.price},
        {"type": "published", "date": book.published},
        {"type": "instock", "boolean": book.instock},
        {"type": "code", "string": book.code},
    ])
}

/// Loads the books into PocketBase through its batch API, a few batches at once.
async fn load_pocketbase(pb: &PocketBase, token: &str, http: &reqwest::Client, count: usize) {
    let started = Instant::now();
    let all: Vec<Book> = books(count).collect();
    let batches: Vec<Json> = all
        .chunks(PB_BATCH)
        .map(|chunk| {
            let requests: Vec<Json> = chunk
                .iter()
                .map(|book| json!({"method": "POST", "url": "/api/collections/books/records", "body": pocketbase_record(book)}))
                .collect();
            json!({ "requests": requests })
        })
        .collect();
    let url = format!("{}/api/batch", pb.url);
    for wave in batches.chunks(PB_BATCHES_IN_FLIGHT) {
        let sent = wave.iter().map(|batch| {
            http.post(&url)
                .bearer_auth(token)
                .json(batch)
                .timeout(Duration::from_secs(120))
                .send()
        });
        for answer in futures_util::future::join_all(sent).await {
            let answer = answer.unwrap();
            assert!(answer.status().is_success(), "{}", answer.text().await.unwrap());
        }
    }
    println!(
        "PocketBase: loaded {count} books in {:.0} s",
        started.elapsed().as_secs_f64()
    );
}

/// PocketBase's ids of `n` books, in `code` order.
async fn pocketbase_ids(pb: &PocketBase, token: &str, http: &reqwest::Client, n: usize) -> Vec<String> {
    let path = query(&[
        ("sort", "code"),
        ("perPage", &n.to_string()),
        ("fields", "id"),
        ("skipTotal", "1"),
    ]);
    let page = call_json(
        http,
        &format!("{}/api/collections/books/records?{path}", pb.url),
        token,
        None,
    )
    .await;
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The rows' requests, for eds and PocketBase (none: eds alone).
struct Row {
    label: String,
    eds: Vec<Call>,
    pocketbase: Option<Vec<Call>>,
}

fn eds_list(query: &str) -> String {
    format!("/api/{DB}/entity?{query}")
}

fn pb_list(filter: &str, sort: Option<&str>) -> String {
    let mut pairs = vec![("filter", filter), ("perPage", "20")];
    if let Some(sort) = sort {
        pairs.push(("sort", sort));
    }
    format!("/api/collections/books/records?{}", query(&pairs))
}

/// Codes of the rotation: every `count / ROTATION`-th book.
fn rotating_codes(count: usize) -> Vec<String> {
    let step = (count / ROTATION).max(1);
    (0..ROTATION.min(count))
        .map(|k| format!("BK-{:07}", k * step))
        .collect()
}

/// Books to create, after the loaded ones in the same sequence, coded `NEW-`.
fn new_books(count: usize) -> Vec<Book> {
    books(count + ROTATION)
        .skip(count)
        .map(|book| Book {
            code: book.code.replace("BK-", "NEW-"),
            ..book
        })
        .collect()
}

/// eds's reads of the mixed row, parameters drawn from a fixed seed, with a
/// create every tenth request.
fn mixed_calls(count: usize, eds_ids: &[String], book_type: &str) -> Vec<Call> {
    let words = vocabulary();
    let codes = rotating_codes(count);
    let created = new_books(count);
    let mut rng = StdRng::seed_from_u64(11);
    (0..2_000)
        .map(|n| {
            if n % 10 == 9 {
                return Call {
                    method: "POST",
                    path: format!("/api/{DB}/entity"),
                    body: Some(eds_record(book_type, &created[n / 10 % created.len()]).to_string()),
                };
            }
            Call::get(match rng.gen_range(0..4) {
                0 => format!("/api/{DB}/entity/{}", eds_ids[rng.gen_range(0..eds_ids.len())]),
                1 => eds_list(&format!(
                    "_type.string=book&price.number.gt={}&sort=-price.number&limit=20",
                    rng.gen_range(980..999)
                )),
                2 => eds_list(&query(&[
                    (
                        "q",
                        &format!(
                            "{} {}",
                            words[rng.gen_range(0..words.len())],
                            words[rng.gen_range(0..words.len())]
                        ),
                    ),
                    ("limit", "20"),
                ])),
                _ => eds_list(&format!("code.string={}", codes[rng.gen_range(0..codes.len())])),
            })
        })
        .collect()
}

fn rows(count: usize, eds_ids: &[String], pb_ids: &[String], book_type: &str) -> Vec<Row> {
    // two words of a title in the middle of the sequence
    let title = books(count / 2 + 1).last().unwrap().title;
    let words: Vec<&str> = title.split(' ').collect();
    let codes = rotating_codes(count);
    let created = new_books(count);
    vec![
        Row {
            label: format!("get one by id ({} ids rotating)", eds_ids.len()),
            eds: eds_ids
                .iter()
                .map(|id| Call::get(format!("/api/{DB}/entity/{id}")))
                .collect(),
            pocketbase: Some(
                pb_ids
                    .iter()
                    .map(|id| Call::get(format!("/api/collections/books/records/{id}")))
                    .collect(),
            ),
        },
        Row {
            label: "`price > 990`, sorted by `-price`, 20 per page, with the total".to_owned(),
            eds: vec![Call::get(eds_list(
                "_type.string=book&price.number.gt=990&sort=-price.number&limit=20",
            ))],
            pocketbase: Some(vec![Call::get(pb_list("price > 990", Some("-price")))]),
        },
        Row {
            label: format!(
                "two-word search `{} {}`, 20 per page, with the total",
                words[0], words[1]
            ),
            eds: vec![Call::get(eds_list(&query(&[
                ("q", &format!("{} {}", words[0], words[1])),
                ("limit", "20"),
            ])))],
            pocketbase: Some(vec![Call::get(pb_list(
                &format!("title ~ '{}' && title ~ '{}'", words[0], words[1]),
                None,
            ))]),
        },
        Row {
            label: format!("equality on `code` ({} values rotating), with the total", codes.len()),
            eds: codes
                .iter()
                .map(|code| Call::get(eds_list(&format!("code.string={code}"))))
                .collect(),
            pocketbase: Some(
                codes
                    .iter()
                    .map(|code| Call::get(pb_list(&format!("code = '{code}'"), None)))
                    .collect(),
            ),
        },
        Row {
            label: "create one record".to_owned(),
            eds: created
                .iter()
                .map(|book| Call {
                    method: "POST",
                    path: format!("/api/{DB}/entity"),
                    body: Some(eds_record(book_type, book).to_string()),
                })
                .collect(),
            pocketbase: Some(
                created
                    .iter()
                    .map(|book| Call {
                        method: "POST",
                        path: "/api/collections/books/records".to_owned(),
                        body: Some(pocketbase_record(book).to_string()),
                    })
                    .collect(),
            ),
        },
        Row {
            label: "`group=instock.boolean`".to_owned(),
            eds: vec![Call::get(eds_list("_type.string=book&group=instock.boolean"))],
            pocketbase: None,
        },
    ]
}

#[tokio::main]
async fn main() {
    let count = env_number("EDS_BENCH_ENTITIES", 100_000);
    let seconds = env_number("EDS_BENCH_SECONDS", 10) as u32;
    let runs = env_number("EDS_BENCH_RUNS", 3);
    let http = reqwest::Client::new();
    let work = common::tempdir::Dir::new();

    let (database_url, key) = eds_database(count).await;
    let pool = db::pool(&database_url, 2, 600_000).unwrap();
    let (eds_ids, book_type) = eds_ids(&pool, ROTATION).await;
    let data_dir = work.0.join("eds-files");
    let uncached_env: Vec<(&str, &str)> = SERVE_ENV
        .into_iter()
        .chain([("EDS__DATABASE__ANSWER_CACHE_BYTES", "0")])
        .collect();
    let (uncached, uncached_url, _) = serve_logged(&database_url, &data_dir, &uncached_env).await;
    let auth = call_json(&http, &format!("{uncached_url}/api/auth?db={DB}"), &key, None).await;
    let token = auth["token"].as_str().unwrap().to_owned();

    let (pb, pb_token) = pocketbase(&work.0, &http).await;
    load_pocketbase(&pb, &pb_token, &http, count).await;
    let pb_ids = pocketbase_ids(&pb, &pb_token, &http, ROTATION).await;

    println!(
        "\n{count} books; wrk -t2 -c32 -d{seconds}s after a 3 s warm-up, median of {runs} runs; rate limits off. \
         eds: API key → JWT, answer cache off unless said; PocketBase {}: public list/view/create rules, no token.\n",
        String::from_utf8_lossy(
            &std::process::Command::new(POCKETBASE)
                .arg("--version")
                .output()
                .unwrap()
                .stdout
        )
        .trim()
        .trim_start_matches("pocketbase version ")
    );
    println!(
        "| row | total eds / PB | eds req/s | eds p50 ms | eds p99 ms | PocketBase req/s | PB p50 ms | PB p99 ms | eds/PB |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let print = |label: &str, totals: &str, eds: &Measured, peer: Option<&Measured>| {
        let ratio = peer.filter(|peer| peer.rate > 0.0).map_or("—".to_owned(), |peer| {
            let ratio = eds.rate / peer.rate;
            // three decimals below 0.1, so a ratio of 0.0015 does not print as zero
            if ratio < 0.1 {
                format!("{ratio:.3}×")
            } else {
                format!("{ratio:.2}×")
            }
        });
        println!(
            "| {label} | {totals} | {} | {} | {ratio} |",
            cells(Some(eds)),
            cells(peer)
        );
    };
    for (n, row) in rows(count, &eds_ids, &pb_ids, &book_type).into_iter().enumerate() {
        // Both sides' totals for the row's first list query: the same matches.
        let totals = match (&row.eds[0], &row.pocketbase) {
            (first, Some(pb_calls)) if first.path.contains("/entity?") => {
                let eds_answer = call_json(&http, &format!("{uncached_url}{}", first.path), &token, None).await;
                let pb_answer = call_json(&http, &format!("{}{}", pb.url, pb_calls[0].path), &pb_token, None).await;
                format!("{} / {}", eds_answer["count"], pb_answer["totalItems"])
            }
            _ => "—".to_owned(),
        };
        let eds_side = Side {
            url: &uncached_url,
            token: Some(&token),
            calls: row.eds,
        };
        let eds = measure(eds_side, &format!("eds-{n}"), &work.0, seconds, runs).await;
        let peer = match row.pocketbase {
            Some(calls) => {
                let side = Side {
                    url: &pb.url,
                    token: None,
                    calls,
                };
                Some(measure(side, &format!("pb-{n}"), &work.0, seconds, runs).await)
            }
            None => None,
        };
        print(&row.label, &totals, &eds, peer.as_ref());
    }
    let mixed_side = |url| Side {
        url,
        token: Some(&token),
        calls: mixed_calls(count, &eds_ids, &book_type),
    };
    let uncached_mixed = measure(mixed_side(&uncached_url), "mixed-off", &work.0, seconds, runs).await;
    print(
        "mixed: 90% reads above, varied, 10% creates (cache off)",
        "—",
        &uncached_mixed,
        None,
    );
    let (cached, cached_url, _) = serve_logged(&database_url, &data_dir, &SERVE_ENV).await;
    let cached_mixed = measure(mixed_side(&cached_url), "mixed-on", &work.0, seconds, runs).await;
    print("mixed, answer cache on", "—", &cached_mixed, None);

    println!(
        "\npeak RSS (VmHWM of the process; eds's PostgreSQL backends not counted): eds cache off {:.0} MB, \
         eds cache on (mixed row only) {:.0} MB, PocketBase {:.0} MB",
        peak_rss_mb(uncached.id().unwrap()),
        peak_rss_mb(cached.id().unwrap()),
        peak_rss_mb(pb.child.id().unwrap()),
    );
}
