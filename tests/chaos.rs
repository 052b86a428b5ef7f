//! Crashes and faults under load. Each test starts a PostgreSQL cluster of
//! its own (so killing and restarting never touches the cluster the other
//! tests share) and two `eds serve` processes on it, started together on the
//! empty database (one migrates it, the other waits). Sixteen clients create
//! entities, overwrite values by `_id` and take counters, each write with an
//! `Idempotency-Key`, repeating every write whose outcome they did not learn
//! (no answer, or a 503) on either process until it is answered; a fifth of
//! the writes are first sent by an impatient client, who drops the
//! connection before the answer comes. Meanwhile a
//! process is killed with SIGKILL and restarted, or PostgreSQL is restarted,
//! or its connections are ended. Afterwards, against the clients' records:
//!
//! - every write answered 2xx is stored exactly as answered, and once;
//! - no write is half stored: it holds all its values or none;
//! - counters are unique and gap-free;
//! - every projection equals one rebuilt from the value rows (export, import);
//! - nothing answered 500, every 503 came with `Retry-After`, and the
//!   processes answer again by themselves after the last fault.
//!
//! One run kills processes with a streaming replica serving reads (the
//! standby harness's primary and standby): every acknowledged create is also
//! read back through the other process with its `Eds-Consistency` header,
//! and found.
//!
//! `EDS_CHAOS_SECONDS` (default 12) sets how long the load runs: the long run
//! is `make chaos` (the guide's operating/reliability.md). Figures go to stderr
//! (`-- --nocapture`).

#[path = "api/webhooks/receiver.rs"]
mod receiver;
#[path = "api/support/mod.rs"]
mod support;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use diesel::sql_types::{Bool, Nullable, Text};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use eds::db::local_cluster::LocalCluster;
use rand::Rng;
use serde_json::{Value as Json, json};
use support::processes::{self, create_demo, login};
use tokio::process::Child;

const CLIENTS: usize = 16;
/// The longest a client waits for one answer; a request still unanswered
/// then counts as a hang.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

fn load_seconds() -> u64 {
    std::env::var("EDS_CHAOS_SECONDS")
        .ok()
        .and_then(|seconds| seconds.parse().ok())
        .unwrap_or(12)
}

/// A PostgreSQL cluster of the test's own, stopped and removed when dropped.
struct OwnCluster {
    cluster: LocalCluster,
    _dir: support::tempdir::Dir,
}

impl OwnCluster {
    fn start() -> OwnCluster {
        let dir = support::tempdir::Dir::new();
        let cluster = LocalCluster::new(&dir.0.join("postgres")).unwrap();
        // durable, as in production: the point is what survives
        cluster.ensure_running(false).unwrap();
        let admin = cluster.url("postgres").unwrap();
        eds::db::create_database_if_missing(&admin, "chaos", None).unwrap();
        OwnCluster { cluster, _dir: dir }
    }

    fn url(&self) -> String {
        self.cluster.url("chaos").unwrap()
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        let _ = self.cluster.stop();
        let _ = std::fs::remove_dir_all(self.cluster.data_dir());
    }
}

/// The two `eds serve` processes and where they listen now.
struct Servers {
    database_url: String,
    data_dir: PathBuf,
    /// `SERVE_ENV` and the run's own settings.
    env: Vec<(String, String)>,
    urls: Mutex<Vec<String>>,
    children: tokio::sync::Mutex<Vec<Child>>,
    /// Every process's log lines, the killed ones' included.
    logs: Mutex<Vec<Arc<Mutex<Vec<String>>>>>,
}

/// Sixteen clients on one address would be throttled; webhooks post to a
/// receiver on loopback, retrying quickly.
const SERVE_ENV: [(&str, &str); 4] = [
    ("EDS__LIMITS__ENABLED", "false"),
    ("EDS__WEBHOOKS__ALLOW_PRIVATE_TARGETS", "true"),
    ("EDS__WEBHOOKS__RETRY_BASE_MS", "100"),
    ("EDS__WEBHOOKS__POLL_MS", "50"),
];

impl Servers {
    async fn start(database_url: String, data_dir: PathBuf, extra_env: &[(&str, &str)]) -> Servers {
        let env: Vec<(String, String)> = SERVE_ENV
            .iter()
            .chain(extra_env)
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect();
        let env_refs = env_refs(&env);
        // both at once on the empty database: one migrates, the other waits for it
        let (first, second) = tokio::join!(
            processes::serve_logged(&database_url, &data_dir, &env_refs),
            processes::serve_logged(&database_url, &data_dir, &env_refs),
        );
        let (mut children, mut urls, mut logs) = (Vec::new(), Vec::new(), Vec::new());
        for (child, url, log) in [first, second] {
            children.push(child);
            urls.push(url);
            logs.push(log);
        }
        Servers {
            database_url,
            data_dir,
            env,
            urls: Mutex::new(urls),
            children: tokio::sync::Mutex::new(children),
            logs: Mutex::new(logs),
        }
    }

    /// The lines every process logged at level ERROR.
    fn errors(&self) -> Vec<String> {
        let logs = self.logs.lock().unwrap();
        let lines = logs.iter().flat_map(|log| log.lock().unwrap().clone());
        lines.filter(|line| line.contains("ERROR")).collect()
    }

    fn url(&self, which: usize) -> String {
        self.urls.lock().unwrap()[which % 2].clone()
    }

    /// SIGKILL, a moment down, and a new process in its place.
    async fn kill_and_restart(&self, which: usize, down: Duration) {
        let mut children = self.children.lock().await;
        children[which].start_kill().unwrap();
        children[which].wait().await.unwrap();
        tokio::time::sleep(down).await;
        let (child, url, log) = processes::serve_logged(&self.database_url, &self.data_dir, &env_refs(&self.env)).await;
        children[which] = child;
        self.urls.lock().unwrap()[which] = url;
        self.logs.lock().unwrap().push(log);
    }
}

fn env_refs(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter().map(|(key, value)| (key.as_str(), value.as_str())).collect()
}

/// The fault a run injects.
#[derive(Clone, Copy, Debug)]
enum Fault {
    KillProcess,
    RestartPostgres,
    EndConnections,
}

/// What the clients saw, for the checks and the figures.
#[derive(Default)]
struct Tally {
    statuses: BTreeMap<u16, usize>,
    /// Requests that got no answer: the process was down or died.
    no_answer: usize,
    /// Requests whose client stopped waiting for the answer on purpose.
    abandoned: usize,
    hangs: usize,
    /// 503s without `Retry-After`, and answers no write should get.
    wrong: Vec<String>,
    /// Creates read back through the other process (runs with a replica).
    read_back: usize,
}

/// A write and what became of it.
struct Record {
    tag: String,
    kind: Kind,
    /// The 2xx body, when one came.
    answer: Option<Json>,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    Create,
    Counter,
    Overwrite,
}

/// An entity a client created, and its current title and note values.
struct Own {
    id: String,
    title: String,
    note: String,
}

struct Load {
    servers: Arc<Servers>,
    http: reqwest::Client,
    token: String,
    item_type: String,
    tally: Mutex<Tally>,
    deadline: Instant,
    /// Each acknowledged create is read back through the other process with
    /// its answer's `Eds-Consistency` (the run has a replica).
    read_back: bool,
}

impl Load {
    /// Sends a write with its key until it is answered 2xx, on alternating
    /// processes; `None` if no answer came in time.
    async fn until_answered(
        &self,
        client: usize,
        path: &str,
        key: &str,
        body: &Json,
    ) -> Option<(Json, Option<String>)> {
        let give_up = self.deadline + Duration::from_secs(60);
        for attempt in 0.. {
            if Instant::now() > give_up {
                return None;
            }
            let url = format!("{}{path}", self.servers.url(client + attempt));
            // A fifth of first attempts give up on their answer almost at
            // once, as a client whose network failed: the write may well be
            // stored, and only its key keeps the repeat from storing it twice.
            let impatient = attempt == 0 && rand::thread_rng().gen_bool(0.2);
            let timeout = if impatient {
                Duration::from_millis(rand::thread_rng().gen_range(1..30))
            } else {
                REQUEST_TIMEOUT
            };
            let sent = self
                .http
                .post(url)
                .bearer_auth(&self.token)
                .header("Idempotency-Key", key)
                .json(body)
                .timeout(timeout)
                .send()
                .await;
            let response = match sent {
                Ok(response) => response,
                Err(error) => {
                    {
                        let mut tally = self.tally.lock().unwrap();
                        match (impatient, error.is_timeout()) {
                            (true, _) => tally.abandoned += 1,
                            (false, true) => tally.hangs += 1,
                            (false, false) => tally.no_answer += 1,
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let status = response.status().as_u16();
            let retry_after = response.headers().contains_key("retry-after");
            let consistency = (response.headers().get("eds-consistency"))
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned);
            let answer: Option<Json> = response.json().await.ok();
            let pause = {
                let mut tally = self.tally.lock().unwrap();
                *tally.statuses.entry(status).or_default() += 1;
                match (status, answer) {
                    (200 | 201, Some(answer)) => return Some((answer, consistency)),
                    (503, _) => {
                        if !retry_after {
                            tally.wrong.push(format!("503 without Retry-After for {key}"));
                        }
                        rand::thread_rng().gen_range(100..400)
                    }
                    (status, answer) => {
                        // a 500, a 4xx, or a body cut mid-answer: never right here
                        tally.wrong.push(format!("{status} for {key}: {answer:?}"));
                        return None;
                    }
                }
            };
            tokio::time::sleep(Duration::from_millis(pause)).await;
        }
        None
    }

    /// Reads the entity `created` answered through the other process, sending
    /// the create's `Eds-Consistency` back: it must be found with its title,
    /// whether the read went to the replica or the primary.
    async fn read_back(&self, client: usize, created: &Json, consistency: Option<&str>) {
        let Some(consistency) = consistency else {
            self.tally
                .lock()
                .unwrap()
                .wrong
                .push(format!("a create answered without Eds-Consistency: {created}"));
            return;
        };
        let id = created["_id"].as_str().unwrap();
        let give_up = self.deadline + Duration::from_secs(60);
        for attempt in 1.. {
            if Instant::now() > give_up {
                return;
            }
            let url = format!("{}/api/demo/entity/{id}", self.servers.url(client + attempt));
            let sent = (self.http.get(url).bearer_auth(&self.token))
                .header("Eds-Consistency", consistency)
                .timeout(REQUEST_TIMEOUT)
                .send()
                .await;
            let Ok(response) = sent else {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            match response.status().as_u16() {
                200 => {
                    let read: Json = response.json().await.unwrap_or_default();
                    let written = (created["properties"].as_array().into_iter().flatten())
                        .find(|value| value["type"] == "title")
                        .map(|value| value["string"].clone());
                    let mut tally = self.tally.lock().unwrap();
                    if Some(&read["entity"]["title"][0]["string"]) != written.as_ref() {
                        tally.wrong.push(format!("{id} read back without its title: {read}"));
                    }
                    tally.read_back += 1;
                    return;
                }
                503 => tokio::time::sleep(Duration::from_millis(100)).await,
                status => {
                    self.tally
                        .lock()
                        .unwrap()
                        .wrong
                        .push(format!("{status} reading back {id} with its Eds-Consistency"));
                    return;
                }
            }
        }
    }

    /// One client: writes until the deadline; answers its records.
    async fn client(&self, client: usize) -> Vec<Record> {
        let mut records = Vec::new();
        let mut own: Vec<Own> = Vec::new();
        let mut n = 0;
        while Instant::now() < self.deadline {
            n += 1;
            let tag = format!("c{client}w{n}");
            let roll = rand::thread_rng().gen_range(0..100);
            let (kind, path, body) = if roll < 30 && !own.is_empty() {
                let pick = rand::thread_rng().gen_range(0..own.len());
                let entity = &own[pick];
                let body = json!([
                    {"_id": entity.title, "type": "title", "string": format!("{tag}-title")},
                    {"_id": entity.note, "type": "note", "string": format!("{tag}-note")},
                ]);
                (Kind::Overwrite, format!("/api/demo/entity/{}", entity.id), body)
            } else if roll < 45 {
                let body = json!([
                    {"type": "_type", "reference": self.item_type},
                    {"type": "name", "string": tag},
                    {"type": "no", "counter": true},
                ]);
                (Kind::Counter, "/api/demo/entity".to_owned(), body)
            } else {
                let body = json!([
                    {"type": "_type", "reference": self.item_type},
                    {"type": "name", "string": tag},
                    {"type": "title", "string": format!("{tag}-title")},
                    {"type": "note", "string": format!("{tag}-note")},
                ]);
                (Kind::Create, "/api/demo/entity".to_owned(), body)
            };
            let answered = self.until_answered(client, &path, &tag, &body).await;
            if self.read_back
                && kind == Kind::Create
                && let Some((answer, consistency)) = &answered
            {
                self.read_back(client, answer, consistency.as_deref()).await;
            }
            let answer = answered.map(|(answer, _)| answer);
            if let Some(answer) = &answer {
                let value_of = |prop: &str| {
                    answer["properties"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|value| value["type"] == prop)
                        .map(|value| value["_id"].as_str().unwrap().to_owned())
                };
                match kind {
                    Kind::Create => own.push(Own {
                        id: answer["_id"].as_str().unwrap().to_owned(),
                        title: value_of("title").unwrap(),
                        note: value_of("note").unwrap(),
                    }),
                    Kind::Overwrite => {
                        let entity = own
                            .iter_mut()
                            .find(|own| Some(own.id.as_str()) == answer["_id"].as_str());
                        let entity = entity.unwrap();
                        entity.title = value_of("title").unwrap();
                        entity.note = value_of("note").unwrap();
                    }
                    Kind::Counter => {}
                }
            } else {
                // its outcome unknown: its entity's values are no longer known either
                if kind == Kind::Overwrite {
                    own.retain(|own| format!("/api/demo/entity/{}", own.id) != path);
                }
            }
            records.push(Record { tag, kind, answer });
        }
        records
    }
}

/// One stored value of the load's properties.
#[derive(diesel::QueryableByName, Debug)]
struct Stored {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Text)]
    entity_id: String,
    #[diesel(sql_type = Text)]
    prop: String,
    #[diesel(sql_type = Nullable<Text>)]
    string: Option<String>,
    #[diesel(sql_type = Bool)]
    live: bool,
}

/// The properties the load writes.
const LOAD_PROPERTIES: [&str; 4] = ["name", "title", "note", "no"];

async fn stored_values(database_url: &str) -> Vec<Stored> {
    let mut conn = AsyncPgConnection::establish(database_url).await.unwrap();
    diesel::sql_query(
        "SELECT id, entity_id, prop, string, deleted_at IS NULL AS live FROM property_values \
         WHERE db = 'demo' AND prop = ANY($1)",
    )
    .bind::<diesel::sql_types::Array<Text>, _>(LOAD_PROPERTIES.to_vec())
    .load(&mut conn)
    .await
    .unwrap()
}

/// Checks every record against the stored values; answers how many values
/// were verified.
fn check_records(records: &[Record], stored: &[Stored]) -> usize {
    let by_id: HashMap<&str, &Stored> = stored.iter().map(|value| (value.id.as_str(), value)).collect();
    let mut by_string: HashMap<&str, Vec<&Stored>> = HashMap::new();
    for value in stored {
        if let Some(string) = &value.string {
            by_string.entry(string.as_str()).or_default().push(value);
        }
    }
    let with = |string: String| by_string.get(string.as_str()).cloned().unwrap_or_default();
    let mut verified = 0;
    for record in records {
        let tag = &record.tag;
        // all or nothing, and once
        let names = with(tag.clone());
        let (titles, notes) = (with(format!("{tag}-title")), with(format!("{tag}-note")));
        match record.kind {
            Kind::Create => {
                assert!(
                    names.len() <= 1 && titles.len() == names.len() && notes.len() == names.len(),
                    "{tag}: half or twice written"
                );
                if let [name] = names.as_slice() {
                    assert_eq!(titles[0].entity_id, name.entity_id, "{tag}");
                    assert_eq!(notes[0].entity_id, name.entity_id, "{tag}");
                }
            }
            Kind::Counter => {
                assert!(names.len() <= 1, "{tag}: written twice");
                if let [name] = names.as_slice() {
                    let numbers = stored
                        .iter()
                        .filter(|value| value.prop == "no" && value.entity_id == name.entity_id);
                    assert_eq!(numbers.count(), 1, "{tag}: its counter value");
                }
            }
            Kind::Overwrite => {
                assert!(
                    titles.len() <= 1 && notes.len() == titles.len(),
                    "{tag}: half or twice written"
                );
            }
        }
        let Some(answer) = &record.answer else { continue };
        if record.kind != Kind::Overwrite {
            assert_eq!(names.len(), 1, "{tag} was answered {answer} but is not stored");
        }
        // every value as answered
        for value in answer["properties"].as_array().unwrap() {
            let id = value["_id"].as_str().unwrap();
            if !LOAD_PROPERTIES.contains(&value["type"].as_str().unwrap()) {
                continue;
            }
            let row = by_id
                .get(id)
                .unwrap_or_else(|| panic!("{tag}: the answered value {value} is not stored"));
            assert_eq!(row.entity_id, answer["_id"].as_str().unwrap(), "{tag}: {value}");
            assert_eq!(row.prop, value["type"].as_str().unwrap(), "{tag}: {value}");
            assert_eq!(row.string.as_deref(), value["string"].as_str(), "{tag}: {value}");
            verified += 1;
        }
    }
    // counters: unique and gap-free among live values (none is deleted here)
    let mut numbers: Vec<u64> = stored
        .iter()
        .filter(|value| value.prop == "no" && value.live)
        .map(|value| value.string.as_deref().unwrap().parse().unwrap())
        .collect();
    numbers.sort_unstable();
    assert_eq!(
        numbers,
        (1..=numbers.len() as u64).collect::<Vec<_>>(),
        "counter values"
    );
    verified
}

/// Runs the load with `fault` and checks everything the module's header says.
/// `with_replica`: on the standby harness's primary, with its streaming
/// standby as the processes' replica, every acknowledged create read back
/// through the other process with its `Eds-Consistency`.
async fn run(fault: Fault, with_replica: bool) {
    let (cluster, database_url, replica_env) = if with_replica {
        let replication = support::standby::replication(1);
        let name = replication.fresh_database();
        let replica = replication.standbys[0].url(&name);
        let env = vec![("EDS__DATABASE__REPLICA_URLS".to_owned(), replica)];
        (None, replication.primary.url(&name), env)
    } else {
        let cluster = Arc::new(OwnCluster::start());
        let url = cluster.url();
        (Some(cluster), url, Vec::new())
    };
    let data_dir = support::tempdir::Dir::new();
    let servers = Arc::new(Servers::start(database_url.clone(), data_dir.0.clone(), &env_refs(&replica_env)).await);
    let migrated = processes::eds(&database_url, &data_dir.0)
        .arg("migrate")
        .output()
        .await
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&migrated.stdout).trim(), r#"{"applied":0}"#);
    let demo = create_demo(&database_url, &data_dir.0, "owner@example.com").await;
    let http = reqwest::Client::new();
    let first = servers.url(0);
    let token = login(&http, &first, &demo.key).await;
    let entity_type = processes::entity_type(&http, &first, &token).await;
    let item = processes::call_json(
        &http,
        &format!("{first}/api/demo/entity"),
        &token,
        Some(&json!([{"type": "_type", "reference": entity_type}, {"type": "name", "string": "item"}])),
    )
    .await;
    let seconds = load_seconds();
    let load = Arc::new(Load {
        servers: servers.clone(),
        http: http.clone(),
        token: token.clone(),
        item_type: item["_id"].as_str().unwrap().to_owned(),
        tally: Mutex::new(Tally::default()),
        deadline: Instant::now() + Duration::from_secs(seconds),
        read_back: with_replica,
    });
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let load = load.clone();
            tokio::spawn(async move { load.client(client).await })
        })
        .collect();

    // faults until 3 s before the end, so the last writes show recovery
    let faults_end = load.deadline - Duration::from_secs(3);
    let (mut faults, mut ready_503) = (0, 0);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    while Instant::now() < faults_end {
        match fault {
            Fault::KillProcess => {
                let (which, down) = {
                    let mut rng = rand::thread_rng();
                    (rng.gen_range(0..2), Duration::from_millis(rng.gen_range(100..800)))
                };
                servers.kill_and_restart(which, down).await;
            }
            Fault::RestartPostgres => {
                let own = cluster
                    .clone()
                    .expect("a run that restarts PostgreSQL has a cluster of its own");
                let stopping = own.clone();
                tokio::task::spawn_blocking(move || stopping.cluster.stop().unwrap())
                    .await
                    .unwrap();
                let ready = http.get(format!("{}/ready", servers.url(faults))).send().await.unwrap();
                if ready.status() == 503 {
                    ready_503 += 1;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
                let starting = own;
                tokio::task::spawn_blocking(move || starting.cluster.ensure_running(false).unwrap())
                    .await
                    .unwrap();
            }
            Fault::EndConnections => {
                let mut conn = AsyncPgConnection::establish(&database_url).await.unwrap();
                diesel::sql_query(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                     WHERE datname = current_database() AND pid <> pg_backend_pid()",
                )
                .execute(&mut conn)
                .await
                .unwrap();
            }
        }
        faults += 1;
        let pause = rand::thread_rng().gen_range(1000..2500);
        tokio::time::sleep(Duration::from_millis(pause)).await;
    }
    let mut records = Vec::new();
    for client in clients {
        records.extend(client.await.unwrap());
    }

    // the processes answer again by themselves
    for which in 0..2 {
        let recovered = async {
            loop {
                let url = format!("{}/api/demo/entity?limit=1", servers.url(which));
                if let Ok(response) = http.get(url).bearer_auth(&token).send().await
                    && response.status() == 200
                {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), recovered)
            .await
            .expect("a process answers again within 10 s of the last fault");
    }

    let tally = std::mem::take(&mut *load.tally.lock().unwrap());
    assert_eq!(
        tally.wrong,
        Vec::<String>::new(),
        "answers no write should get; the processes' errors: {:#?}",
        servers.errors()
    );
    assert_eq!(tally.hangs, 0, "requests unanswered for {REQUEST_TIMEOUT:?}");
    let stored = stored_values(&database_url).await;
    let verified = check_records(&records, &stored);

    // every projection is the one rebuilt from the value rows
    let export = data_dir.0.join("demo.jsonl");
    let path = export.to_string_lossy().into_owned();
    for args in [vec!["export", "demo", "--out", &path], vec!["import", "copy", &path]] {
        let output = processes::eds(&database_url, &data_dir.0)
            .args(args)
            .output()
            .await
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
    let rebuilt = support::projections(&database_url, "copy").await;
    assert_eq!(
        rebuilt,
        support::projections(&database_url, "demo").await,
        "projections"
    );
    assert_eq!(
        support::value_visibility(&database_url, "copy").await,
        support::value_visibility(&database_url, "demo").await,
        "value visibility"
    );

    let acknowledged = records.iter().filter(|record| record.answer.is_some()).count();
    let fives: usize = tally.statuses.range(500..).map(|(_, count)| count).sum();
    eprintln!(
        "chaos {fault:?}, {seconds} s, {CLIENTS} clients: {} writes, {acknowledged} acknowledged, \
         {} unknown, {verified} values verified, {} entities' projections equal rebuilt ones; \
         {faults} faults, /ready 503 during {ready_503}; answers {:?}, {} sent without answer, {} abandoned; \
         5xx = {fives} (all 503 with Retry-After), 500 = {}",
        records.len(),
        records.len() - acknowledged,
        rebuilt.len(),
        tally.statuses,
        tally.no_answer,
        tally.abandoned,
        tally.statuses.get(&500).copied().unwrap_or(0),
    );
    if with_replica {
        // reads the processes now running sent to the standby (a killed one's
        // count died with it); once the load is over, the standby catches up
        // and serves them
        let mut standby_reads = 0.0;
        let until = Instant::now() + Duration::from_secs(10);
        while standby_reads == 0.0 && Instant::now() < until {
            for which in 0..2 {
                let url = format!("{}/api/demo/entity?limit=1", servers.url(which));
                http.get(url).bearer_auth(&token).send().await.unwrap();
                let metrics = http
                    .get(format!("{}/metrics", servers.url(which)))
                    .send()
                    .await
                    .unwrap();
                let text = metrics.text().await.unwrap();
                standby_reads += (text.lines())
                    .filter(|line| line.starts_with("eds_replica_reads_total{") && !line.contains("\"primary\""))
                    .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
                    .sum::<f64>();
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        eprintln!(
            "with a replica: {} creates read back through the other process, {standby_reads} reads served by the standby",
            tally.read_back
        );
        assert!(tally.read_back > 0, "no create was read back");
        assert!(standby_reads > 0.0, "the standby served no read");
    }
    assert!(faults >= 2, "the run injected {faults} faults");
    assert!(acknowledged > 0);
    if matches!(fault, Fault::RestartPostgres) {
        assert!(ready_503 > 0, "/ready reported none of the outages");
    }
    drop(servers);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_processes_lose_no_acknowledged_write_and_half_write_none() {
    run(Fault::KillProcess, false).await;
}

/// As above with a streaming replica serving reads: every acknowledged
/// create is read back, with its `Eds-Consistency`, through the other process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_replica_killed_processes_lose_no_acknowledged_write_and_reads_see_them() {
    run(Fault::KillProcess, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgresql_restart_under_load_answers_503_with_retry_after_and_loses_nothing() {
    run(Fault::RestartPostgres, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ended_connections_under_load_answer_503_with_retry_after_and_lose_nothing() {
    run(Fault::EndConnections, false).await;
}

/// Every acknowledged create reaches a webhook at least once, though a
/// process is killed mid-delivery (its leased events go to the other once
/// the lease ends) and PostgreSQL restarts while events wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_write_reaches_its_webhook_across_a_killed_process_and_a_postgresql_restart() {
    let cluster = Arc::new(OwnCluster::start());
    let database_url = cluster.url();
    let data_dir = support::tempdir::Dir::new();
    let servers = Servers::start(database_url.clone(), data_dir.0.clone(), &[]).await;
    let demo = create_demo(&database_url, &data_dir.0, "owner@example.com").await;
    let http = reqwest::Client::builder().timeout(REQUEST_TIMEOUT).build().unwrap();
    let token = login(&http, &servers.url(0), &demo.key).await;
    let entity_type = processes::entity_type(&http, &servers.url(0), &token).await;
    let receiver = receiver::Receiver::start().await;
    // slow answers: a kill finds deliveries in flight
    receiver.otherwise(receiver::Answer {
        status: 200,
        delay: Duration::from_millis(300),
    });
    let base = servers.url(0);
    let new_entity = |values: Json| {
        let (http, url, token) = (http.clone(), format!("{base}/api/demo/entity"), token.clone());
        async move { processes::call_json(&http, &url, &token, Some(&values)).await }
    };
    let item =
        new_entity(json!([{"type": "_type", "reference": entity_type}, {"type": "name", "string": "item"}])).await;
    let item_type = item["_id"].as_str().unwrap().to_owned();
    let found = processes::call_json(
        &http,
        &format!("{base}/api/demo/entity?_type.string=entity&name.string=webhook"),
        &token,
        None,
    )
    .await;
    let hook = new_entity(json!([
        {"type": "_type", "reference": found["entities"][0]["_id"]},
        {"type": "url", "string": receiver.url()},
        {"type": "events", "string": "create"},
        {"type": "entity_type", "reference": item_type},
        {"type": "secret", "string": "generate"},
    ]))
    .await;
    assert!(hook["_id"].is_string(), "{hook}");

    let mut acknowledged = std::collections::HashSet::new();
    for n in 0..60 {
        if n == 20 {
            servers.kill_and_restart(0, Duration::from_millis(200)).await;
        }
        if n == 40 {
            let stopping = cluster.clone();
            tokio::task::spawn_blocking(move || stopping.cluster.stop().unwrap())
                .await
                .unwrap();
            let starting = cluster.clone();
            tokio::task::spawn_blocking(move || starting.cluster.ensure_running(false).unwrap())
                .await
                .unwrap();
        }
        let url = format!("{}/api/demo/entity", servers.url(n));
        let body = json!([{"type": "_type", "reference": item_type}, {"type": "name", "string": format!("n{n}")}]);
        if let Ok(response) = http.post(url).bearer_auth(&token).json(&body).send().await
            && response.status() == 201
        {
            let created: Json = response.json().await.unwrap();
            acknowledged.insert(created["_id"].as_str().unwrap().to_owned());
        }
    }
    assert!(acknowledged.len() >= 40, "{} creates acknowledged", acknowledged.len());

    // a killed worker's lease (timeout + 30 s) may have to end first
    let deadline = Instant::now() + Duration::from_secs(90);
    let missing = loop {
        let delivered: std::collections::HashSet<String> = receiver
            .received()
            .iter()
            .filter_map(|r| r.json()["entity"]["_id"].as_str().map(str::to_owned))
            .collect();
        let missing: Vec<&String> = acknowledged.iter().filter(|id| !delivered.contains(*id)).collect();
        if missing.is_empty() || Instant::now() > deadline {
            break missing.len();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(missing, 0, "acknowledged creates never delivered");
    eprintln!(
        "webhooks under faults: {} creates acknowledged, {} deliveries received (repeats included)",
        acknowledged.len(),
        receiver.received().len()
    );
}
