//! Object storage away, slow or failing: the app talks to the test's S3
//! server through a proxy that passes, refuses connections, holds them
//! without answering, or answers 500. What needs the server (thumbnails,
//! `/ready`) answers 503 `storage_unavailable` with `Retry-After` within
//! `storage.s3.timeout_ms`; what only signs URLs (file values, downloads)
//! goes on working; and everything works again once the server is back.

use crate::support;

use std::io::Cursor;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use image::{DynamicImage, ImageFormat, RgbImage};
use serde_json::json;
use support::{Storage, TestApp, assert_retry_later, s3};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// What the proxy does with each connection.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(u8)]
enum Mode {
    Pass,
    /// Closes every connection at once: the server is down.
    Refuse,
    /// Reads the request and never answers: the server hangs.
    Stall,
    /// Answers every request 500, as S3 does in a bad moment.
    Fail,
}

const MODES: [Mode; 4] = [Mode::Pass, Mode::Refuse, Mode::Stall, Mode::Fail];

struct Proxy {
    endpoint: String,
    mode: Arc<AtomicU8>,
    /// Cuts the connections open when the mode changes.
    changed: Arc<Notify>,
}

impl Proxy {
    async fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let mode = Arc::new(AtomicU8::new(Mode::Pass as u8));
        let changed = Arc::new(Notify::new());
        let (taken, cut) = (mode.clone(), changed.clone());
        tokio::spawn(async move {
            loop {
                let Ok((inbound, _)) = listener.accept().await else {
                    return;
                };
                let mode = MODES[taken.load(Ordering::SeqCst) as usize];
                let (upstream, cut) = (upstream.clone(), cut.clone());
                tokio::spawn(async move {
                    tokio::select! {
                        () = serve(inbound, mode, upstream) => {}
                        () = cut.notified() => {}
                    }
                });
            }
        });
        Proxy {
            endpoint,
            mode,
            changed,
        }
    }

    fn set(&self, mode: Mode) {
        self.mode.store(mode as u8, Ordering::SeqCst);
        self.changed.notify_waiters();
    }
}

async fn serve(mut inbound: TcpStream, mode: Mode, upstream: String) {
    match mode {
        Mode::Pass => {
            let mut outbound = TcpStream::connect(upstream).await.unwrap();
            let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
        }
        Mode::Refuse => drop(inbound),
        Mode::Stall => {
            let mut request = [0; 4096];
            let _ = inbound.read(&mut request).await;
            tokio::time::sleep(Duration::from_secs(300)).await;
        }
        Mode::Fail => {
            let mut request = [0; 4096];
            let _ = inbound.read(&mut request).await;
            let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
                <Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>";
            let answer = format!(
                "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/xml\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = inbound.write_all(answer.as_bytes()).await;
        }
    }
}

const TIMEOUT_MS: u64 = 1000;

#[tokio::test]
async fn object_storage_down_slow_or_failing_answers_503_storage_unavailable_within_its_timeout_then_recovers() {
    let upstream = s3::server().endpoint.trim_start_matches("http://").to_owned();
    let proxy = Proxy::start(upstream).await;
    let app = TestApp::start_with(
        Storage::S3,
        &[
            ("storage.s3.endpoint", proxy.endpoint.clone()),
            ("storage.s3.timeout_ms", TIMEOUT_MS.to_string()),
        ],
    )
    .await;
    let token = app.owner_token().await;
    let item = app.create_type(&token, "item").await;
    let entity = app
        .create(&token, &item, json!([{"type": "name", "string": "x"}]))
        .await;
    let mut png = Cursor::new(Vec::new());
    DynamicImage::ImageRgb8(RgbImage::from_pixel(64, 48, image::Rgb([0, 0, 255])))
        .write_to(&mut png, ImageFormat::Png)
        .unwrap();
    let png = png.into_inner();
    let photo = json!([{"type": "photo", "filename": "p.png", "filesize": png.len(), "filetype": "image/png"}]);
    let (status, body) = app
        .post(&format!("/api/demo/entity/{entity}"), &token, photo.clone())
        .await;
    assert_eq!(status, 200, "{body}");
    let upload = &body["properties"][0]["upload"];
    let mut put = app.http.put(upload["url"].as_str().unwrap()).body(png);
    for (name, value) in upload["headers"].as_object().unwrap() {
        put = put.header(
            name.as_str(),
            value.as_str().map_or_else(|| value.to_string(), str::to_owned),
        );
    }
    assert_eq!(put.send().await.unwrap().status(), 200, "uploaded through the proxy");
    let photo_value = body["properties"][0]["_id"].as_str().unwrap().to_owned();
    let thumbnail = format!("{}/api/demo/entity/{entity}/thumbnail/50", app.url);

    for mode in [Mode::Refuse, Mode::Stall, Mode::Fail] {
        proxy.set(mode);
        let started = Instant::now();
        let response = app.http.get(&thumbnail).bearer_auth(&token).send().await.unwrap();
        let body = assert_retry_later(response).await;
        assert_eq!(body["error"], "storage_unavailable", "{mode:?}: {body}");
        assert_eq!(
            body["message"],
            "Object storage cannot be reached just now; retry later"
        );
        let waited = started.elapsed();
        assert!(
            waited < Duration::from_millis(TIMEOUT_MS * 3),
            "{mode:?}: answered after {waited:?}"
        );
        let ready = app.http.get(format!("{}/ready", app.url)).send().await.unwrap();
        assert_eq!(ready.status(), 503, "{mode:?}: /ready");
        let ready: serde_json::Value = ready.json().await.unwrap();
        assert_eq!(ready, json!({"database": true, "storage": false}));
        // signing needs no call to the server: new file values and downloads go on
        let (status, body) = app
            .post(&format!("/api/demo/entity/{entity}"), &token, photo.clone())
            .await;
        assert_eq!(status, 200, "{mode:?}: {body}");
        assert!(body["properties"][0]["upload"]["url"].is_string(), "{body}");
        let (status, body) = app.get(&format!("/api/demo/property/{photo_value}"), &token).await;
        assert_eq!(status, 200, "{mode:?}: {body}");
        assert!(body["url"].is_string(), "{body}");
    }

    proxy.set(Mode::Pass);
    let response = app.http.get(&thumbnail).bearer_auth(&token).send().await.unwrap();
    assert_eq!(response.status(), 200, "back: {}", response.text().await.unwrap());
    let ready = app.http.get(format!("{}/ready", app.url)).send().await.unwrap();
    assert_eq!(ready.status(), 200);
}
