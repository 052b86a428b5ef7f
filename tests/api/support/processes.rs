//! Real `eds` processes: the command line and `eds serve` on a free port.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub const BIN: &str = env!("CARGO_BIN_EXE_eds");

/// `eds` on `database_url`, with the test secret, a data directory and a free port.
pub fn eds(database_url: &str, data_dir: &Path) -> Command {
    let mut command = Command::new(BIN);
    command
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("EDS__DATABASE__URL", database_url)
        .env("EDS__AUTH__JWT_SECRET", super::JWT_SECRET)
        .env("EDS__DATA__DIR", data_dir)
        .env("EDS__HTTP__BIND", "127.0.0.1:0")
        .env("EDS__HTTP__WORKERS", "2")
        .env("EDS__DATABASE__POOL_SIZE", "8")
        .kill_on_drop(true);
    command
}

/// Starts `eds serve` and answers it with its base URL, read from its log.
pub async fn serve(database_url: &str, data_dir: &Path) -> (Child, String) {
    let (child, url, _) = serve_logged(database_url, data_dir, &[]).await;
    (child, url)
}

/// As [`serve`], with further environment variables, keeping every log line.
pub async fn serve_logged(
    database_url: &str,
    data_dir: &Path,
    env: &[(&str, &str)],
) -> (Child, String, Arc<Mutex<Vec<String>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut child = eds(database_url, data_dir)
        .envs(env.iter().copied())
        .arg("serve")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    while let Some(line) = lines.next_line().await.unwrap() {
        log.lock().unwrap().push(line.clone());
        if let Some(at) = line.find("listening on http://") {
            // the address ends the line, or its JSON string
            let rest = &line[at + "listening on ".len()..];
            let url = rest.split(['"', ' ']).next().unwrap_or_default().to_owned();
            // keep draining the log so the server never blocks on a full pipe
            let kept = log.clone();
            tokio::spawn(async move {
                while let Ok(Some(line)) = lines.next_line().await {
                    kept.lock().unwrap().push(line);
                }
            });
            return (child, url, log);
        }
    }
    panic!("eds serve exited before listening");
}

/// The log kept by [`serve_logged`] once one of its lines satisfies `seen`: the
/// server writes its log as it goes and the test reads the pipe on its own task,
/// so a line can arrive well after the request it belongs to on a busy machine.
pub async fn log_once(log: &Mutex<Vec<String>>, seen: impl Fn(&str) -> bool) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let lines = log.lock().unwrap().clone();
        if lines.iter().any(|line| seen(line)) {
            return lines;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the awaited line never reached the log:\n{}",
            lines.join("\n")
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// What `eds db create demo` printed.
pub struct Demo {
    pub person: String,
    pub key: String,
}

/// Creates database `demo` with the command line, its owner's e-mail `email`.
pub async fn create_demo(database_url: &str, data_dir: &Path, email: &str) -> Demo {
    let created = eds(database_url, data_dir)
        .args(["db", "create", "demo", "--email", email])
        .output()
        .await
        .unwrap();
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let created: serde_json::Value = serde_json::from_slice(&created.stdout).unwrap();
    Demo {
        person: created["person"].as_str().unwrap().to_owned(),
        key: created["api_key"].as_str().unwrap().to_owned(),
    }
}

/// A JSON request to a served URL: `GET`, or `POST` of `body`; answers the JSON body.
pub async fn call_json(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    body: Option<&serde_json::Value>,
) -> serde_json::Value {
    let request = match body {
        Some(body) => http.post(url).json(body),
        None => http.get(url),
    };
    request.bearer_auth(token).send().await.unwrap().json().await.unwrap()
}

/// An access token to database `demo` for API key `key`, from the server at `base`.
pub async fn login(http: &reqwest::Client, base: &str, key: &str) -> String {
    let auth = call_json(http, &format!("{base}/api/auth?db=demo"), key, None).await;
    auth["token"].as_str().unwrap().to_owned()
}

/// The id of the `entity` meta type of database `demo` on the server at `base`.
pub async fn entity_type(http: &reqwest::Client, base: &str, token: &str) -> String {
    let url = format!("{base}/api/demo/entity?_type.string=entity&name.string=entity");
    let found = call_json(http, &url, token, None).await;
    found["entities"][0]["_id"].as_str().unwrap().to_owned()
}
