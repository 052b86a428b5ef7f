//! The test harness: one throwaway PostgreSQL cluster shared by every test
//! (and every test process), a database per test cloned from a migrated
//! template, and the real app served on a free port.
#![allow(dead_code)] // each test binary uses its own part of the harness

use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::OnceLock;

use eds::config::Settings;
use eds::db::{self, Pool, local_cluster::LocalCluster};
use serde_json::{Value as Json, json};

pub mod browser;
pub mod clusters;
pub mod document_server;
pub mod email_login;
pub mod oauth;
pub mod oidc;
pub mod pgbouncer;
pub mod processes;
pub mod smtp;
pub mod standby;

const TEMPLATE: &str = "eds_template";
pub const JWT_SECRET: &str = "test-secret-not-for-production";

/// Directory of the shared test cluster (`EDS_TEST_PG_DIR`, or one per checkout under /tmp).
fn cluster_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("EDS_TEST_PG_DIR") {
        return PathBuf::from(dir);
    }
    let checkout = env!("CARGO_MANIFEST_DIR");
    let digest = checkout
        .bytes()
        .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
    std::env::temp_dir().join(format!("eds-test-pg-{digest:016x}"))
}

/// The admin URL of the running test cluster; starts it and migrates the
/// template once per process, under a file lock shared by all processes.
fn cluster() -> &'static LocalCluster {
    static CLUSTER: OnceLock<LocalCluster> = OnceLock::new();
    CLUSTER.get_or_init(|| {
        let dir = cluster_dir();
        let lock_path = dir.with_extension("lock");
        let lock = std::fs::File::create(&lock_path).expect("create the cluster lock file");
        lock.lock().expect("lock the test cluster");
        let cluster = LocalCluster::new(&dir).expect("PostgreSQL server binaries");
        cluster.ensure_running(true).expect("start the test cluster");
        let admin = cluster.url("postgres").unwrap();
        drop_databases_of_ended_processes(&admin);
        db::create_database_if_missing(&admin, TEMPLATE, None).expect("create the template");
        db::migrate(&cluster.url(TEMPLATE).unwrap()).expect("migrate the template");
        lock.unlock().expect("unlock the test cluster");
        cluster
    })
}

/// Test databases are named `t_<pid>_<id>` after the test process that made them.
const TEST_DATABASE_PREFIX: &str = "t_";

/// Drops the test databases of test processes that have ended: each holds
/// about 8 MB, and a full run makes hundreds, so the shared cluster keeps
/// only those of the processes still running.
pub fn drop_databases_of_ended_processes(admin_url: &str) {
    use diesel::{Connection, PgConnection, RunQueryDsl, sql_types::Text};
    #[derive(diesel::QueryableByName)]
    struct Database {
        #[diesel(sql_type = Text)]
        datname: String,
    }
    if !std::path::Path::new("/proc/self").exists() {
        return; // no way to tell a live process here: keep everything
    }
    let mut conn = PgConnection::establish(admin_url).expect("connect to the test cluster");
    let databases = diesel::sql_query("SELECT datname FROM pg_database WHERE starts_with(datname, $1)")
        .bind::<Text, _>(TEST_DATABASE_PREFIX)
        .load::<Database>(&mut conn)
        .expect("list the test databases");
    for Database { datname } in databases {
        let owner = datname[TEST_DATABASE_PREFIX.len()..]
            .split('_')
            .next()
            .and_then(|pid| pid.parse::<u32>().ok());
        if owner.is_some_and(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists()) {
            continue;
        }
        // The names are ours (letters, digits, `_`); quoted all the same.
        diesel::sql_query(format!("DROP DATABASE IF EXISTS \"{datname}\" WITH (FORCE)"))
            .execute(&mut conn)
            .expect("drop a test database of an ended process");
    }
}

/// A fresh, migrated, empty PostgreSQL database; returns its URL.
pub fn fresh_database() -> String {
    let cluster = cluster();
    let name = format!(
        "{TEST_DATABASE_PREFIX}{}_{}",
        std::process::id(),
        eds::model::ids::new_id()
    );
    // Cloning a template needs it idle: take the same lock as migration.
    let lock = std::fs::File::create(cluster_dir().with_extension("lock")).unwrap();
    lock.lock().unwrap();
    let created = db::create_database_if_missing(&cluster.url("postgres").unwrap(), &name, Some(TEMPLATE));
    lock.unlock().unwrap();
    created.expect("create a test database");
    cluster.url(&name).unwrap()
}

pub fn settings(database_url: &str, data_dir: &std::path::Path) -> Settings {
    settings_with(database_url, data_dir, &[])
}

/// Test settings with further overrides (dotted keys), applied last. Local
/// files go under `data_dir`; libpdfium is the one `make` fetches.
pub fn settings_with(database_url: &str, data_dir: &std::path::Path, overrides: &[(&str, String)]) -> Settings {
    let mut all = vec![
        ("database.url", database_url.to_owned()),
        ("auth.jwt_secret", JWT_SECRET.to_owned()),
        ("data.dir", data_dir.to_string_lossy().into_owned()),
        ("http.workers", "2".to_owned()),
        ("database.pool_size", "8".to_owned()),
        (
            "storage.local.path",
            data_dir.join("files").to_string_lossy().into_owned(),
        ),
        (
            "thumbnails.pdfium_library",
            pdfium_library().to_string_lossy().into_owned(),
        ),
        ("actors.thumbnail_workers", "2".to_owned()),
        // the test binary is not `eds`: PDFs render in the real one
        ("thumbnails.pdf_renderer", env!("CARGO_BIN_EXE_eds").to_owned()),
    ];
    all.extend(overrides.iter().cloned());
    Settings::load_with(all).expect("test settings")
}

/// The default `thumbnails.pdfium_library`, relative to the checkout.
pub fn pdfium_library() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".data/pdfium/libpdfium.so")
}

/// Where a test app keeps file contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    /// The local backend, its URLs served by the app itself.
    Local,
    /// A bucket of the in-process S3 server (see [`s3`]).
    S3,
}

/// The app served on a free port, with one database `demo` whose owner holds `key`.
pub struct TestApp {
    pub url: String,
    pub database_url: String,
    pub pool: Pool,
    pub person: String,
    pub key: String,
    pub http: reqwest::Client,
    pub state: actix_web::web::Data<eds::http::AppState>,
    /// The directory holding the objects of the app's storage (either backend).
    pub objects_dir: PathBuf,
    /// Stops the server when the app is dropped: a test's server would
    /// otherwise keep its pooled connections open until the test binary
    /// exits, and a binary's many tests would exhaust the cluster's
    /// `max_connections`.
    server: actix_web::dev::ServerHandle,
    _data_dir: tempdir::Dir,
    _bucket: Option<tempdir::Dir>,
}

impl TestApp {
    pub async fn start() -> TestApp {
        TestApp::start_with(Storage::Local, &[]).await
    }

    /// An app on the given storage, with further settings overrides.
    pub async fn start_with(storage: Storage, overrides: &[(&str, String)]) -> TestApp {
        TestApp::start_on(TcpListener::bind("127.0.0.1:0").unwrap(), storage, overrides).await
    }

    /// As [`TestApp::start_with`], serving on `listener` (whose address a
    /// test may have to give another server first).
    pub async fn start_on(listener: TcpListener, storage: Storage, overrides: &[(&str, String)]) -> TestApp {
        TestApp::serve(fresh_database(), None, listener, storage, overrides).await
    }

    /// An app on the (migrated, empty) database at `database_url`, which
    /// then holds `demo`.
    pub async fn start_at(database_url: String, overrides: &[(&str, String)]) -> TestApp {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        TestApp::serve(database_url, None, listener, Storage::Local, overrides).await
    }

    /// Another process serving this app's database (and `demo`'s owner), with `overrides`.
    pub async fn serve_again(&self, overrides: &[(&str, String)]) -> TestApp {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let owner = (self.person.clone(), self.key.clone());
        TestApp::serve(
            self.database_url.clone(),
            Some(owner),
            listener,
            Storage::Local,
            overrides,
        )
        .await
    }

    /// Serves `database_url`, where `demo` is created unless its `owner`
    /// (person and API key) is given.
    async fn serve(
        database_url: String,
        owner: Option<(String, String)>,
        listener: TcpListener,
        storage: Storage,
        overrides: &[(&str, String)],
    ) -> TestApp {
        let data_dir = tempdir::Dir::new();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let mut all = vec![("http.public_url", url.clone())];
        let (objects_dir, bucket) = match storage {
            Storage::Local => (data_dir.0.join("files"), None),
            Storage::S3 => {
                let server = s3::server();
                let bucket = server.bucket();
                all.extend([
                    ("storage.backend", "s3".to_owned()),
                    ("storage.s3.endpoint", server.endpoint.clone()),
                    ("storage.s3.bucket", bucket.name.clone()),
                    ("storage.s3.access_key", s3::ACCESS_KEY.to_owned()),
                    ("storage.s3.secret_key", s3::SECRET_KEY.to_owned()),
                    ("storage.s3.path_style", "true".to_owned()),
                ]);
                (bucket.dir.0.clone(), Some(bucket.dir))
            }
        };
        all.extend(overrides.iter().cloned());
        let settings = settings_with(&database_url, &data_dir.0, &all);
        let pool = db::pool(&database_url, 4, 5000).unwrap();
        let (person, key) = match owner {
            Some(owner) => owner,
            None => {
                let created = db::databases::create(&pool, "demo", "owner@example.com", "Demo Owner")
                    .await
                    .expect("create the demo database");
                (created.person_id, created.api_key)
            }
        };
        let (started, ready) = std::sync::mpsc::channel();
        let server_pool = db::pool_per_worker(
            &database_url,
            false,
            settings.database.pool_size,
            settings.database.statement_timeout_ms,
            settings.http.worker_count(),
        )
        .unwrap();
        let state = eds::app::state(&settings, server_pool).unwrap();
        let server_state = state.clone();
        std::thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                let server = eds::app::server(&settings, server_state, listener).unwrap();
                started.send(server.handle()).unwrap();
                server.await
            })
        });
        let server = ready.recv().unwrap();
        TestApp {
            url,
            database_url,
            pool,
            person,
            key,
            // Idle connections are dropped before the server's 5 s keep-alive
            // closes them: a request sent on one as it closes fails (a test
            // encoding a large image between requests on a loaded machine).
            http: reqwest::Client::builder()
                .pool_idle_timeout(std::time::Duration::from_secs(2))
                .build()
                .unwrap(),
            state,
            objects_dir,
            server,
            _data_dir: data_dir,
            _bucket: bucket,
        }
    }

    /// An access token for `key` (scoped to `demo`).
    pub async fn token_for(&self, key: &str) -> String {
        let (status, body) = self.call("GET", "/api/auth?db=demo", Some(key), None).await;
        assert_eq!(status, 200, "{body}");
        body["token"].as_str().unwrap().to_owned()
    }

    /// The owner's access token.
    pub async fn owner_token(&self) -> String {
        self.token_for(&self.key.clone()).await
    }

    /// Sends a request; answers the status and the JSON body (`null` when empty).
    pub async fn call(&self, method: &str, path: &str, token: Option<&str>, body: Option<Json>) -> (u16, Json) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = self.http.request(method, format!("{}{path}", self.url));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("request");
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let json = if text.is_empty() {
            Json::Null
        } else {
            serde_json::from_str(&text).unwrap_or_else(|_| panic!("non-JSON body for {path}: {text}"))
        };
        (status, json)
    }

    /// The text of `/metrics`.
    pub async fn metrics_text(&self) -> String {
        let response = self.http.get(format!("{}/metrics", self.url)).send().await.unwrap();
        response.text().await.unwrap()
    }

    pub async fn get(&self, path: &str, token: &str) -> (u16, Json) {
        self.call("GET", path, Some(token), None).await
    }

    pub async fn post(&self, path: &str, token: &str, body: Json) -> (u16, Json) {
        self.call("POST", path, Some(token), Some(body)).await
    }

    pub async fn delete(&self, path: &str, token: &str) -> (u16, Json) {
        self.call("DELETE", path, Some(token), None).await
    }

    /// A type `name` shared publicly, with a number property `price` shown
    /// in the public view: its id.
    pub async fn public_type_with_price(&self, owner: &str, name: &str) -> String {
        let type_id = self.create_type(owner, name).await;
        let public = json!({"type": "_sharing", "string": "public"});
        self.post(&format!("/api/demo/entity/{type_id}"), owner, public.clone())
            .await;
        self.define(owner, &type_id, "price", "number", json!([public])).await;
        type_id
    }

    /// Deletes `entity`'s first value of `prop`, as `token`.
    pub async fn delete_first_value(&self, token: &str, entity: &str, prop: &str) {
        let (status, body) = self.get(&format!("/api/demo/entity/{entity}"), token).await;
        assert_eq!(status, 200, "{body}");
        let value = body["entity"][prop][0]["_id"].as_str().unwrap().to_owned();
        let (status, body) = self.delete(&format!("/api/demo/property/{value}"), token).await;
        assert_eq!(status, 200, "{body}");
    }

    /// The plans of every statement of list query `params` for an
    /// anonymous caller of `demo`, as one text.
    pub async fn plans_of(&self, params: &[(&str, &str)]) -> String {
        let params: Vec<(String, String)> = params
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect();
        let query = eds::query::ListQuery::parse(&params).unwrap();
        let mut conn = self.pool.get().await.unwrap();
        eds::query::sql::explain(&mut conn, "demo", None, &query)
            .await
            .unwrap()
            .join("\n")
    }

    /// The id of the seeded or created entity of `type_name` named `name`.
    pub async fn find(&self, token: &str, type_name: &str, name: &str) -> String {
        let (status, body) = self
            .get(
                &format!("/api/demo/entity?_type.string={type_name}&name.string={name}"),
                token,
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body["entities"][0]["_id"]
            .as_str()
            .unwrap_or_else(|| panic!("no {type_name} {name}: {body}"))
            .to_owned()
    }

    /// Creates an entity type `name` and answers its id.
    pub async fn create_type(&self, token: &str, name: &str) -> String {
        let entity_type = self.find(token, "entity", "entity").await;
        let (status, body) = self
            .post(
                "/api/demo/entity",
                token,
                json!([{"type": "_type", "reference": entity_type}, {"type": "name", "string": name}]),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        body["_id"].as_str().unwrap().to_owned()
    }

    /// Defines property `name` of `value_type` on a type, with extra attributes.
    pub async fn define(&self, token: &str, type_id: &str, name: &str, value_type: &str, extra: Json) -> String {
        let property_type = self.find(token, "entity", "property").await;
        let mut values = vec![
            json!({"type": "_type", "reference": property_type}),
            json!({"type": "_parent", "reference": type_id}),
            json!({"type": "name", "string": name}),
            json!({"type": "type", "string": value_type}),
        ];
        values.extend(extra.as_array().cloned().unwrap_or_default());
        let (status, body) = self.post("/api/demo/entity", token, Json::Array(values)).await;
        assert_eq!(status, 201, "{body}");
        body["_id"].as_str().unwrap().to_owned()
    }

    /// Creates an entity of `type_id` with the given extra values; answers its id.
    pub async fn create(&self, token: &str, type_id: &str, values: Json) -> String {
        let mut all = vec![json!({"type": "_type", "reference": type_id})];
        all.extend(values.as_array().cloned().unwrap_or_default());
        let (status, body) = self.post("/api/demo/entity", token, Json::Array(all)).await;
        assert_eq!(status, 201, "{body}");
        body["_id"].as_str().unwrap().to_owned()
    }

    /// Waits until the background worker has emptied the formula queue and
    /// the queue of types to re-project.
    pub async fn settle(&self) {
        for _ in 0..2000 {
            let mut conn = self.pool.get().await.unwrap();
            if eds::db::formula_queue::pending(&mut conn).await.unwrap() == 0
                && eds::db::reprojection_queue::pending(&mut conn).await.unwrap() == 0
            {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("the background queues did not drain within 20 s");
    }

    /// A second person in `demo` with an API key (through `eds key create`'s code path).
    pub async fn add_person(&self, owner_token: &str, name: &str) -> (String, String) {
        let person_type = self.find(owner_token, "entity", "person").await;
        let id = self
            .create(owner_token, &person_type, json!([{"type": "name", "string": name}]))
            .await;
        let (status, body) = self
            .post(
                &format!("/api/demo/entity/{id}"),
                owner_token,
                json!({"type": "service_api_key", "string": "generate"}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        (id, body["properties"][0]["string"].as_str().unwrap().to_owned())
    }
}

/// Every live entity's stored projection in database `db` at
/// `database_url`, one text per entity in `_id` order.
pub async fn projections(database_url: &str, db: &str) -> Vec<String> {
    text_rows(
        database_url,
        db,
        "SELECT row(id, doc, name, type_id, parent_ids, sharing, inherit_rights, owners, editors, expanders, \
         viewers, noaccess, public_props, domain_props, search_private, search_domain, search_public)::text AS line \
         FROM entities WHERE db = $1 AND deleted_at IS NULL ORDER BY id",
    )
    .await
}

/// Every live value row's visibility in database `db` (its entity's type
/// and audience, its view level), one text per value in `_id` order.
pub async fn value_visibility(database_url: &str, db: &str) -> Vec<String> {
    text_rows(
        database_url,
        db,
        "SELECT row(id, entity_id, type_id, audience, level)::text AS line \
         FROM property_values WHERE db = $1 AND deleted_at IS NULL ORDER BY id",
    )
    .await
}

/// Database `db`'s number and boolean tallies that count something, one
/// text per row, in text order.
pub async fn value_tallies(database_url: &str, db: &str) -> Vec<String> {
    text_rows(
        database_url,
        db,
        "SELECT line FROM ( \
         SELECT row('number', prop, type_id, audience, level, bucket, count)::text AS line \
         FROM number_tallies WHERE db = $1 AND count <> 0 \
         UNION ALL SELECT row('boolean', prop, type_id, audience, level, value, count)::text \
         FROM boolean_tallies WHERE db = $1 AND count <> 0) tallies ORDER BY line",
    )
    .await
}

/// Database `db`'s change log in id order, one text per row: its entity,
/// author, action and the properties it names.
pub async fn change_log(database_url: &str, db: &str) -> Vec<String> {
    text_rows(
        database_url,
        db,
        "SELECT concat_ws(' ', entity_id, coalesce(actor, '-'), action, array_to_string(properties, ',')) AS line \
         FROM change_log WHERE db = $1 ORDER BY id",
    )
    .await
}

/// The entities of database `db` whose logged changes the webhooks'
/// outbox trigger looks at, in log order.
pub async fn changes_checked_for_webhooks(database_url: &str, db: &str) -> Vec<String> {
    text_rows(
        database_url,
        db,
        "SELECT entity_id AS line FROM change_log WHERE db = $1 AND for_webhooks ORDER BY id",
    )
    .await
}

/// The `line` column of `sql`, run with database name `db` as `$1`.
async fn text_rows(database_url: &str, db: &str, sql: &str) -> Vec<String> {
    use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
    #[derive(diesel::QueryableByName)]
    struct Line {
        #[diesel(sql_type = diesel::sql_types::Text)]
        line: String,
    }
    let mut conn = AsyncPgConnection::establish(database_url).await.unwrap();
    diesel::sql_query(sql)
        .bind::<diesel::sql_types::Text, _>(db)
        .load::<Line>(&mut conn)
        .await
        .unwrap()
        .into_iter()
        .map(|row| row.line)
        .collect()
}

/// Checks a 503 answer: `Retry-After` and the JSON error body; answers the body.
pub async fn assert_retry_later(response: reqwest::Response) -> Json {
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["retry-after"], "5");
    response.json().await.expect("a JSON error body")
}

/// The statement-timeout tests' slow list (every `n` value sorted, over the
/// entities they plant) answers 503 `query_timeout` at the limit, not when
/// the query would have finished.
pub async fn assert_slow_list_times_out(http: &reqwest::Client, url: &str, token: &str) {
    let started = std::time::Instant::now();
    let response = http
        .get(format!("{url}/api/demo/entity?n.number.gte=0&sort=-n.number"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let body = assert_retry_later(response).await;
    assert_eq!(body["error"], "query_timeout", "{body}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

impl Drop for TestApp {
    fn drop(&mut self) {
        // The stop command is sent at once; its completion is not awaited
        // (there may be no runtime left to await it on).
        drop(self.server.stop(false));
    }
}

/// An in-process S3-compatible server that checks SigV4 signatures (`s3s`
/// over `s3s-fs`), one per test process, with a bucket per test app.
pub mod s3 {
    use std::sync::OnceLock;

    use hyper_util::rt::TokioIo;
    use s3s::auth::SimpleAuth;
    use s3s::service::S3ServiceBuilder;

    use super::tempdir;

    pub const ACCESS_KEY: &str = "eds-test-access";
    pub const SECRET_KEY: &str = "eds-test-secret-key";

    pub struct S3Server {
        pub endpoint: String,
        root: tempdir::Dir,
    }

    pub struct Bucket {
        pub name: String,
        /// The bucket's directory: objects are files under it, named by key.
        pub dir: tempdir::Dir,
    }

    impl S3Server {
        /// A fresh, empty bucket, removed when dropped.
        pub fn bucket(&self) -> Bucket {
            let name = format!("b{}", eds::model::ids::new_id());
            let path = self.root.0.join(&name);
            std::fs::create_dir_all(&path).unwrap();
            Bucket {
                name,
                dir: tempdir::Dir(path),
            }
        }
    }

    /// The process's server, started on a free port on first use.
    pub fn server() -> &'static S3Server {
        static SERVER: OnceLock<S3Server> = OnceLock::new();
        SERVER.get_or_init(|| {
            let root = tempdir::Dir::new();
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.set_nonblocking(true).unwrap();
            let endpoint = format!("http://{}", listener.local_addr().unwrap());
            let mut builder = S3ServiceBuilder::new(s3s_fs::FileSystem::new(&root.0).unwrap());
            builder.set_auth(SimpleAuth::from_single(ACCESS_KEY, SECRET_KEY));
            let service = builder.build();
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                    loop {
                        let Ok((stream, _)) = listener.accept().await else {
                            continue;
                        };
                        let service = service.clone();
                        tokio::spawn(async move {
                            let _ = hyper::server::conn::http1::Builder::new()
                                .serve_connection(TokioIo::new(stream), service)
                                .await;
                        });
                    }
                })
            });
            S3Server { endpoint, root }
        })
    }
}

/// A temporary directory removed on drop.
pub mod tempdir {
    use std::path::PathBuf;

    pub struct Dir(pub PathBuf);

    impl Dir {
        pub fn new() -> Dir {
            let dir = std::env::temp_dir().join(format!("eds-test-{}", eds::model::ids::new_id()));
            std::fs::create_dir_all(&dir).unwrap();
            Dir(dir)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
