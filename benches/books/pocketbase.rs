//! PocketBase, the peer benchmark's other side: a server on a free port with
//! a superuser, `books` collections of the same fields as eds's `book` type,
//! and its batch API for the bulk load.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value as Json, json};

use super::Book;
use super::cpu::Processes;
use super::measure::{Measured, timed};
use crate::support::processes::call_json;

/// Where `scripts/install-bench-tools.sh` installs PocketBase.
const POCKETBASE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/.data/pocketbase-venv/bin/pocketbase");
const SUPERUSER: (&str, &str) = ("bench@example.com", "bench-password-1");
/// Records per batch request, and batches in flight.
const BATCH: usize = 500;
const BATCHES_IN_FLIGHT: usize = 4;

/// A running PocketBase, its data in a folder of its own.
pub struct PocketBase {
    pub child: tokio::process::Child,
    pub url: String,
    /// A superuser's token.
    pub token: String,
}

pub fn version() -> String {
    let output = std::process::Command::new(POCKETBASE)
        .arg("--version")
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .trim_start_matches("pocketbase version ")
        .to_owned()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts PocketBase with its data in `dir`, batches allowed.
pub async fn start(dir: &Path, http: &reqwest::Client) -> PocketBase {
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
        .json(&json!({"batch": {"enabled": true, "maxRequests": BATCH, "timeout": 60, "maxBodySize": 0}}))
        .send()
        .await
        .unwrap();
    assert!(settings.status().is_success(), "{}", settings.text().await.unwrap());
    PocketBase { child, url, token }
}

impl PocketBase {
    pub fn processes(&self) -> Processes {
        Processes::tree(self.child.id().unwrap())
    }

    /// A collection of books `name`, public to list, view and create, with
    /// indexes on price, published and code.
    pub async fn collection(&self, http: &reqwest::Client, name: &str) {
        let collection = call_json(
            http,
            &format!("{}/api/collections", self.url),
            &self.token,
            Some(&json!({
                "name": name, "type": "base", "listRule": "", "viewRule": "", "createRule": "",
                "fields": [
                    {"name": "title", "type": "text"}, {"name": "price", "type": "number"},
                    {"name": "published", "type": "date"}, {"name": "instock", "type": "bool"},
                    {"name": "code", "type": "text"},
                ],
                "indexes": [
                    format!("CREATE INDEX idx_{name}_price ON {name} (price)"),
                    format!("CREATE INDEX idx_{name}_published ON {name} (published)"),
                    format!("CREATE INDEX idx_{name}_code ON {name} (code)"),
                ],
            })),
        )
        .await;
        assert_eq!(collection["name"], name, "{collection}");
    }

    /// Loads the books into collection `name` through the batch API, a few
    /// batches at once.
    pub async fn load_batches(&self, http: &reqwest::Client, name: &str, all: &[Book]) -> Measured {
        let batches: Vec<Json> = all
            .chunks(BATCH)
            .map(|chunk| {
                let requests: Vec<Json> = chunk
                    .iter()
                    .map(|book| json!({"method": "POST", "url": format!("/api/collections/{name}/records"), "body": record(book)}))
                    .collect();
                json!({ "requests": requests })
            })
            .collect();
        let url = format!("{}/api/batch", self.url);
        timed(all.len(), &self.processes(), async {
            for wave in batches.chunks(BATCHES_IN_FLIGHT) {
                let sent = wave.iter().map(|batch| {
                    http.post(&url)
                        .bearer_auth(&self.token)
                        .json(batch)
                        .timeout(Duration::from_secs(120))
                        .send()
                });
                for answer in futures_util::future::join_all(sent).await {
                    let answer = answer.unwrap();
                    assert!(answer.status().is_success(), "{}", answer.text().await.unwrap());
                }
            }
        })
        .await
    }

    /// The ids of `n` books, in `code` order.
    pub async fn ids(&self, http: &reqwest::Client, n: usize) -> Vec<String> {
        let path = serde_urlencoded::to_string([
            ("sort", "code"),
            ("perPage", &n.to_string()),
            ("fields", "id"),
            ("skipTotal", "1"),
        ])
        .unwrap();
        let page = call_json(
            http,
            &format!("{}/api/collections/books/records?{path}", self.url),
            &self.token,
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
}

/// A book as a PocketBase record.
pub fn record(book: &Book) -> Json {
    json!({
        "title": book.title, "price": book.price, "published": format!("{} 00:00:00.000Z", book.published),
        "instock": book.instock, "code": book.code,
    })
}
