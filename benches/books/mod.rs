//! What the book benchmarks share: the fixed-seed `book` generator, its
//! loader (the `book` type through the write path the API uses, the books
//! through `eds import`'s bulk path) into a durable cluster kept under /tmp,
//! and `wrk` runs read back as requests/s and latency; for the peer
//! benchmark also CPU time from `/proc`, timed runs and PocketBase.
#![allow(dead_code)] // each benchmark uses its own part

use std::time::Instant;

use diesel::Connection;
use diesel_async::RunQueryDsl;
use eds::db::{Pool, local_cluster::LocalCluster};
use eds::model::ids::new_id;
use eds::model::value::parse_body;
use eds::write::{WriteOp, WriteOutcome, WriteRequest, apply};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value as Json, json};

pub mod cpu;
pub mod measure;
pub mod pocketbase;
pub mod rows;
mod wrk;
pub use wrk::{median, wrk};

/// The server's defaults, without rate limits (every client is one address).
pub const SERVE_ENV: [(&str, &str); 4] = [
    ("EDS__HTTP__WORKERS", "0"),
    ("EDS__DATABASE__POOL_SIZE", "16"),
    ("EDS__LIMITS__ENABLED", "false"),
    ("RUST_LOG", "warn,eds=info"),
];
pub const DB: &str = "books";

/// Title words: made-up words from a fixed syllable set, 2,000 of them.
pub fn vocabulary() -> Vec<String> {
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

pub struct Book {
    pub title: String,
    pub price: f64,
    pub published: String,
    pub instock: bool,
    pub code: String,
}

/// Book `n` of the fixed-seed sequence.
pub fn books(count: usize) -> impl Iterator<Item = Book> {
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

/// The number of books a benchmark loads: `EDS_BENCH_ENTITIES`, a million
/// by default.
pub fn books_wanted() -> usize {
    std::env::var("EDS_BENCH_ENTITIES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000)
}

/// The migrated database of the durable cluster holding `count` books (see
/// [`load`]), its URL and a pool of 4 on it; its name also names the
/// server's scratch file folder.
pub fn books_database(count: usize) -> (String, String, Pool) {
    let cluster = durable_cluster();
    let name = format!("eds_bench_books_{count}");
    eds::db::create_database_if_missing(&cluster.url("postgres").unwrap(), &name, None).unwrap();
    let database_url = cluster.url(&name).unwrap();
    eds::db::migrate(&database_url).unwrap();
    let pool = eds::db::pool(&database_url, 4, 600_000).unwrap();
    (name, database_url, pool)
}

/// A durable cluster whose cache holds the whole data set (about 4.5 GB at a
/// million books), as on a server sized for it, and whose WAL between
/// checkpoints holds a large part of a load (a million books write about
/// 9 GB of it; at the default 1 GB, checkpoints every few seconds rewrite
/// every page the load touches again and again). PostgreSQL keeps that much
/// WAL on disk afterwards, so it stays within what the machine can spare.
pub fn durable_cluster() -> LocalCluster {
    let dir = std::env::temp_dir().join("eds-bench-pg-durable");
    let cluster = LocalCluster::new(&dir).expect("PostgreSQL server binaries");
    cluster.ensure_running(false).expect("start the benchmark cluster");
    let mut conn = diesel::PgConnection::establish(&cluster.url("postgres").unwrap()).unwrap();
    #[derive(diesel::QueryableByName)]
    struct Setting {
        #[diesel(sql_type = diesel::sql_types::Text)]
        setting: String,
    }
    let mut changed = false;
    for (name, value) in [("shared_buffers", SHARED_BUFFERS), ("max_wal_size", MAX_WAL_SIZE)] {
        let current: Setting = diesel::RunQueryDsl::get_result(
            diesel::sql_query(format!("SELECT current_setting('{name}') AS setting")),
            &mut conn,
        )
        .unwrap();
        if current.setting != value {
            diesel::RunQueryDsl::execute(
                diesel::sql_query(format!("ALTER SYSTEM SET {name} = '{value}'")),
                &mut conn,
            )
            .unwrap();
            changed = true;
        }
    }
    if changed {
        drop(conn);
        cluster.stop().unwrap();
        cluster.ensure_running(false).unwrap();
    }
    cluster
}

pub const SHARED_BUFFERS: &str = "6GB";
const MAX_WAL_SIZE: &str = "4GB";

/// Reads the tables and indexes into PostgreSQL's cache.
pub async fn prewarm(pool: &Pool) {
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

pub async fn scalar(pool: &Pool, sql: &str) -> i64 {
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let mut conn = pool.get().await.unwrap();
    diesel::sql_query(sql).get_result::<Row>(&mut conn).await.unwrap().n
}

pub async fn write(pool: &Pool, actor: &str, op: WriteOp) -> String {
    let request = WriteRequest {
        db: DB.into(),
        actor: actor.to_owned(),
        op,
        idempotency: None,
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

/// A new API key of `person`, through the write path.
pub async fn api_key(pool: &Pool, person: &str) -> String {
    let op = WriteOp::AddValues {
        entity_id: person.to_owned(),
        values: parse_body(br#"{"type": "service_api_key", "string": "generate"}"#).unwrap(),
    };
    write(pool, person, op).await
}

pub fn values(json: Json) -> WriteOp {
    WriteOp::CreateEntity {
        values: parse_body(json.to_string().as_bytes()).unwrap(),
    }
}

/// The `book` type and its definitions; answers the type's id.
pub async fn define_books(pool: &Pool, owner: &str) -> String {
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
pub async fn load(pool: &Pool, count: usize) -> String {
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
    let started = Instant::now();
    let (owner, input) = import_input(pool, count).await;
    eds::cli::import::import(pool, DB, std::io::Cursor::new(input))
        .await
        .unwrap();
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "loaded {count} books in {seconds:.1} s (export of the seed, import of all): {:.0} books/s",
        count as f64 / seconds
    );
    let mut conn = pool.get().await.unwrap();
    diesel::sql_query("VACUUM ANALYZE").execute(&mut conn).await.unwrap();
    owner
}

/// Creates the database with its `book` type and empties it again, keeping
/// what `eds import` then loads: the seed and `count` books. Answers the
/// owner's id and that input.
pub async fn import_input(pool: &Pool, count: usize) -> (String, Vec<u8>) {
    let created = eds::db::databases::create(pool, DB, "bench@example.com", "Bench")
        .await
        .unwrap();
    let owner = created.person_id;
    let book = define_books(pool, &owner).await;
    // The seeded database with its `book` type goes out as an export, the
    // books are appended as the write path would store them, and the whole
    // comes back in through `eds import` (into the emptied database).
    let mut file = Vec::new();
    let mut header = eds::cli::export::export(pool, DB, &mut file).await.unwrap();
    // books as the write path stores them, `_owner` and `_created` included
    // (the lines of docs/guide/src/operating/export-format.md)
    let created = json!({"at": chrono::Utc::now(), "by": owner});
    let value = |prop: &str, field: &str, content: Json| {
        let mut value = json!({"_id": new_id(), "type": prop, "created": created});
        value[field] = content;
        value
    };
    for next in books(count) {
        let mut when = value("_created", "reference", json!(owner));
        when["datetime"] = created["at"].clone();
        let values = [
            value("_type", "reference", json!(book)),
            value("title", "string", json!(next.title)),
            value("price", "number", json!(next.price)),
            value("published", "date", json!(next.published)),
            value("instock", "boolean", json!(next.instock)),
            value("code", "string", json!(next.code)),
            value("_owner", "reference", json!(owner)),
            when,
        ];
        header.entities += 1;
        header.values += values.len() as u64;
        let line = json!({"_id": new_id(), "created": created, "values": values});
        serde_json::to_writer(&mut file, &line).unwrap();
        file.push(b'\n');
    }
    let header_end = file.iter().position(|b| *b == b'\n').unwrap();
    let mut input = serde_json::to_vec(&header).unwrap();
    input.extend_from_slice(&file[header_end..]);
    let mut conn = pool.get().await.unwrap();
    for table in ["property_values", "entities"] {
        diesel::sql_query(format!("DELETE FROM {table} WHERE db = '{DB}'"))
            .execute(&mut conn)
            .await
            .unwrap();
    }
    (owner, input)
}

pub async fn owner(pool: &Pool) -> String {
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
