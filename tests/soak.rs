//! Soak: a mixed load (lists, reads by id, creates and deletes in balance,
//! counters, thumbnails) from 16 clients against one `eds serve` process for
//! `EDS_SOAK_SECONDS` (default 1800). Every minute it reports requests, p50 and p99, errors,
//! the process's resident memory, open files and PostgreSQL connections;
//! at the end, memory and connections after warm-up against the last
//! sample. Ignored by `cargo test` for its length: `make soak` runs it.

#[path = "api/support/mod.rs"]
mod support;

use std::io::Cursor;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use diesel::sql_types::BigInt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use image::{DynamicImage, ImageFormat, RgbImage};
use rand::Rng;
use serde_json::{Value as Json, json};
use support::processes::{self, create_demo, login};

const CLIENTS: usize = 16;
/// Until the caches (answers, prepared statements, the pool) have filled.
const WARM_UP: Duration = Duration::from_secs(300);
/// Live entities each client keeps: beyond, it deletes its oldest.
const OWN: usize = 100;
const WINDOW: Duration = Duration::from_secs(60);

fn soak_seconds() -> u64 {
    std::env::var("EDS_SOAK_SECONDS")
        .ok()
        .and_then(|seconds| seconds.parse().ok())
        .unwrap_or(1800)
}

/// Latencies and errors of one window.
#[derive(Default)]
struct Window {
    latencies: Vec<Duration>,
    errors: Vec<String>,
}

struct Soak {
    http: reqwest::Client,
    url: String,
    token: String,
    item: String,
    photo_entity: String,
    started: Instant,
    deadline: Instant,
    windows: Mutex<Vec<Window>>,
}

impl Soak {
    fn record(&self, latency: Duration, error: Option<String>) {
        let index = (self.started.elapsed().as_secs() / WINDOW.as_secs()) as usize;
        let mut windows = self.windows.lock().unwrap();
        while windows.len() <= index {
            windows.push(Window::default());
        }
        windows[index].latencies.push(latency);
        windows[index].errors.extend(error);
    }

    async fn client(&self, client: usize) {
        let mut own: Vec<String> = Vec::new();
        let mut n = 0;
        while Instant::now() < self.deadline {
            n += 1;
            let roll = rand::thread_rng().gen_range(0..100);
            // creates and deletes balance, so the data stays the same size and
            // a slower minute means the service, not a larger table
            let (method, path, body) = match roll {
                0..45 => {
                    let sorts = ["name.string", "-_created", "-no.number"];
                    let sort = sorts[n % sorts.len()];
                    (
                        reqwest::Method::GET,
                        format!("/api/demo/entity?_type.string=item&sort={sort}&limit=20"),
                        None,
                    )
                }
                45..60 if !own.is_empty() => {
                    let id = &own[rand::thread_rng().gen_range(0..own.len())];
                    (reqwest::Method::GET, format!("/api/demo/entity/{id}"), None)
                }
                60..80 if own.len() >= OWN => {
                    let id = own.remove(0);
                    (reqwest::Method::DELETE, format!("/api/demo/entity/{id}"), None)
                }
                60..84 => {
                    let body = json!([{"type": "_type", "reference": self.item}, {"type": "name", "string": format!("c{client}n{n}")}]);
                    (reqwest::Method::POST, "/api/demo/entity".to_owned(), Some(body))
                }
                84..92 => {
                    let body = json!([{"type": "_type", "reference": self.item}, {"type": "no", "counter": true}]);
                    (reqwest::Method::POST, "/api/demo/entity".to_owned(), Some(body))
                }
                _ => {
                    let size = [50, 200, 400][n % 3];
                    let path = format!("/api/demo/entity/{}/thumbnail/{size}", self.photo_entity);
                    (reqwest::Method::GET, path, None)
                }
            };
            let mut request = self
                .http
                .request(method, format!("{}{path}", self.url))
                .bearer_auth(&self.token)
                .timeout(Duration::from_secs(30));
            if let Some(body) = &body {
                request = request.json(body);
            }
            let started = Instant::now();
            let outcome = match request.send().await {
                Ok(response) if response.status().is_success() => {
                    response.json::<Json>().await.map_err(|e| e.to_string())
                }
                Ok(response) => Err(format!("{} {path}", response.status())),
                Err(error) => Err(format!("{error} {path}")),
            };
            let latency = started.elapsed();
            match outcome {
                Ok(answer) => {
                    if body.is_some() {
                        own.push(answer["_id"].as_str().unwrap_or_default().to_owned());
                    }
                    self.record(latency, None);
                }
                Err(error) => self.record(latency, Some(error)),
            }
        }
    }
}

/// The process's resident memory (kB) and open files.
fn process_figures(pid: u32) -> (u64, usize) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rss = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kb| kb.parse().ok())
        .unwrap();
    let files = std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count();
    (rss, files)
}

async fn connections(database_url: &str) -> i64 {
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        count: i64,
    }
    let mut conn = AsyncPgConnection::establish(database_url).await.unwrap();
    let count: Count = diesel::sql_query(
        "SELECT count(*) AS count FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    .get_result(&mut conn)
    .await
    .unwrap();
    count.count
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * fraction).round() as usize]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "runs for half an hour: make soak"]
async fn a_mixed_load_for_half_an_hour_keeps_memory_connections_and_p99_flat_without_an_error() {
    let database_url = support::fresh_database();
    let data_dir = support::tempdir::Dir::new();
    let demo = create_demo(&database_url, &data_dir.0, "owner@example.com").await;
    // the local storage's signed URLs name the public URL: serve on a known port
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (bind, public_url) = (format!("127.0.0.1:{port}"), format!("http://127.0.0.1:{port}"));
    let env = [
        ("EDS__LIMITS__ENABLED", "false"),
        ("EDS__HTTP__BIND", bind.as_str()),
        ("EDS__HTTP__PUBLIC_URL", public_url.as_str()),
    ];
    let (child, url, _) = processes::serve_logged(&database_url, &data_dir.0, &env).await;
    let pid = child.id().unwrap();
    let http = reqwest::Client::new();
    let token = login(&http, &url, &demo.key).await;
    let entity_type = processes::entity_type(&http, &url, &token).await;
    let entities = format!("{url}/api/demo/entity");
    let create = async |values: Json| processes::call_json(&http, &entities, &token, Some(&values)).await;
    let item = create(json!([{"type": "_type", "reference": entity_type}, {"type": "name", "string": "item"}])).await;
    let item = item["_id"].as_str().unwrap().to_owned();
    let mut png = Cursor::new(Vec::new());
    DynamicImage::ImageRgb8(RgbImage::from_fn(800, 600, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, 128])
    }))
    .write_to(&mut png, ImageFormat::Png)
    .unwrap();
    let png = png.into_inner();
    let photo = create(
        json!([{"type": "_type", "reference": item}, {"type": "photo", "filename": "p.png",
        "filesize": png.len(), "filetype": "image/png"}]),
    )
    .await;
    let upload = &photo["properties"][1]["upload"];
    let mut put = http.put(upload["url"].as_str().unwrap()).body(png);
    for (name, value) in upload["headers"].as_object().unwrap() {
        put = put.header(
            name.as_str(),
            value.as_str().map_or_else(|| value.to_string(), str::to_owned),
        );
    }
    assert_eq!(put.send().await.unwrap().status(), 200);

    let started = Instant::now();
    let soak = Arc::new(Soak {
        http: http.clone(),
        url: url.clone(),
        token,
        item,
        photo_entity: photo["_id"].as_str().unwrap().to_owned(),
        started,
        deadline: started + Duration::from_secs(soak_seconds()),
        windows: Mutex::new(Vec::new()),
    });
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let soak = soak.clone();
            tokio::spawn(async move { soak.client(client).await })
        })
        .collect();
    let mut samples = Vec::new();
    while Instant::now() < soak.deadline {
        tokio::time::sleep(Duration::from_secs(10)).await;
        let (rss, files) = process_figures(pid);
        samples.push((started.elapsed(), rss, files, connections(&database_url).await));
    }
    for client in clients {
        client.await.unwrap();
    }

    let windows = std::mem::take(&mut *soak.windows.lock().unwrap());
    eprintln!("minute  requests  p50 ms  p99 ms  errors  RSS MB  files  connections");
    let mut errors = Vec::new();
    let mut p99s = Vec::new();
    for (minute, window) in windows.iter().enumerate() {
        let mut sorted = window.latencies.clone();
        sorted.sort_unstable();
        let (p50, p99) = (percentile(&sorted, 0.5), percentile(&sorted, 0.99));
        let at = Duration::from_secs((minute as u64 + 1) * WINDOW.as_secs());
        let sample = samples
            .iter()
            .rev()
            .find(|sample| sample.0 <= at)
            .unwrap_or(&samples[0]);
        eprintln!(
            "{minute:>6}  {:>8}  {:>6.1}  {:>6.1}  {:>6}  {:>6.1}  {:>5}  {:>11}",
            sorted.len(),
            p50.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3,
            window.errors.len(),
            sample.1 as f64 / 1024.0,
            sample.2,
            sample.3
        );
        errors.extend(window.errors.iter().cloned());
        if at > WARM_UP && window.latencies.len() > 100 {
            p99s.push(p99);
        }
    }
    let warm = samples.iter().find(|sample| sample.0 >= WARM_UP).unwrap_or(&samples[0]);
    let last = samples.last().unwrap();
    eprintln!(
        "after warm-up: RSS {:.1} MB, {} files, {} connections; at the end: RSS {:.1} MB, {} files, {} connections",
        warm.1 as f64 / 1024.0,
        warm.2,
        warm.3,
        last.1 as f64 / 1024.0,
        last.2,
        last.3
    );
    assert_eq!(errors, Vec::<String>::new(), "errors");
    assert!(
        last.1 <= warm.1 * 5 / 4 + 16 * 1024,
        "memory grew: {} kB → {} kB",
        warm.1,
        last.1
    );
    assert!(last.2 <= warm.2 + 16, "open files grew: {} → {}", warm.2, last.2);
    assert!(last.3 <= warm.3.max(8) + 2, "connections grew: {} → {}", warm.3, last.3);
    // p99 of the last full minutes against the first ones after warm-up
    if p99s.len() >= 4 {
        let (early, late) = (p99s[0].max(p99s[1]), p99s[p99s.len() - 2].max(p99s[p99s.len() - 3]));
        assert!(late <= early * 3, "p99 rose from {early:?} to {late:?}");
    }
    drop(child);
}
