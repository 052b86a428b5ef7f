//! A real headless Chromium driven over the Chrome DevTools Protocol, so the
//! sign-in pages are tested as people use them: their HTML, CSS, scripts
//! and the browser's own WebAuthn, with a screenshot of each page to look at.
//!
//! One browser, one tab: a flattened CDP session on a fresh target. Commands
//! are matched to their answers by `id`; events are ignored.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value as Json, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use super::tempdir;

/// How long a page, a command or a condition may take.
const PATIENCE: Duration = Duration::from_secs(15);
/// How often a condition is looked at again.
const POLL: Duration = Duration::from_millis(100);

/// A headless Chromium with one tab; the process is killed and its profile
/// removed when dropped.
pub struct Browser {
    child: Child,
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
    /// The tab's flattened session, named on every command sent to it.
    session: String,
    next_id: u64,
    _profile: tempdir::Dir,
}

impl Browser {
    /// Starts Debian's `/usr/bin/chromium` on a fresh profile and opens a
    /// blank 800×900 tab.
    pub async fn launch() -> Browser {
        let profile = tempdir::Dir::new();
        let mut child = Command::new("chromium")
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.0.display()))
            // its own group, so that Drop kills its helpers with it
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("run chromium (scripts/install-deps.sh installs it): {e}"));
        let endpoint = devtools_endpoint(&mut child).await;
        let (socket, _) = tokio_tungstenite::connect_async(endpoint.as_str())
            .await
            .unwrap_or_else(|e| panic!("connect to chromium at {endpoint}: {e}"));
        let mut browser = Browser {
            child,
            socket,
            session: String::new(),
            next_id: 0,
            _profile: profile,
        };
        let target = browser
            .send(None, "Target.createTarget", json!({"url": "about:blank"}))
            .await
            .expect("open a tab");
        let attached = browser
            .send(
                None,
                "Target.attachToTarget",
                json!({"targetId": target["targetId"], "flatten": true}),
            )
            .await
            .expect("attach to the tab");
        browser.session = attached["sessionId"].as_str().expect("a session id").to_owned();
        browser
            .command(
                "Emulation.setDeviceMetricsOverride",
                json!({"width": 800, "height": 900, "deviceScaleFactor": 1, "mobile": false}),
            )
            .await;
        browser
    }

    /// Sends `method` to the tab and answers its result; panics on a CDP error.
    pub async fn command(&mut self, method: &str, params: Json) -> Json {
        let session = self.session.clone();
        self.send(Some(&session), method, params)
            .await
            .unwrap_or_else(|error| panic!("{method}: {error}"))
    }

    /// Sends one command (to the browser, or to `session`) and waits for the
    /// answer with its id; answers its `result`, or its `error` as text.
    async fn send(&mut self, session: Option<&str>, method: &str, params: Json) -> Result<Json, String> {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        self.socket
            .send(Message::text(message.to_string()))
            .await
            .expect("send to chromium");
        let answer = tokio::time::timeout(PATIENCE, async {
            while let Some(frame) = self.socket.next().await {
                let Message::Text(text) = frame.expect("read from chromium") else {
                    continue;
                };
                let answer: Json = serde_json::from_str(&text).expect("CDP sends JSON");
                if answer["id"] == id {
                    return answer;
                }
            }
            panic!("chromium closed the connection during {method}");
        })
        .await
        .unwrap_or_else(|_| panic!("chromium did not answer {method} within {PATIENCE:?}"));
        match answer.get("error") {
            Some(error) => Err(error.to_string()),
            None => Ok(answer["result"].clone()),
        }
    }

    /// Opens `url` and waits until its document has loaded.
    pub async fn navigate(&mut self, url: &str) {
        let before = self.eval("location.href").await;
        let navigated = self.command("Page.navigate", json!({"url": url})).await;
        if let Some(error) = navigated.get("errorText") {
            panic!("open {url}: {error}");
        }
        let left = format!("location.href !== {before} && document.readyState === 'complete'");
        self.wait_for(&left).await;
    }

    /// The value of the expression `js` in the page (promises awaited);
    /// panics with the page's exception if it throws.
    pub async fn eval(&mut self, js: &str) -> Json {
        self.try_eval(js).await.unwrap_or_else(|error| panic!("{js}: {error}"))
    }

    /// As [`Browser::eval`], answering a thrown exception or a CDP error
    /// (as while the page is being replaced) as text.
    async fn try_eval(&mut self, js: &str) -> Result<Json, String> {
        let session = self.session.clone();
        let evaluated = self
            .send(
                Some(&session),
                "Runtime.evaluate",
                json!({"expression": js, "returnByValue": true, "awaitPromise": true}),
            )
            .await?;
        if let Some(exception) = evaluated.get("exceptionDetails") {
            let text = exception["exception"]["description"]
                .as_str()
                .or(exception["text"].as_str())
                .unwrap_or("an exception");
            return Err(text.to_owned());
        }
        Ok(evaluated["result"]["value"].clone())
    }

    /// Waits until the expression `js` is true in the page; what a page
    /// answers as it loads (an error, a missing element) counts as not yet.
    pub async fn wait_for(&mut self, js: &str) {
        let started = Instant::now();
        loop {
            let last = self.try_eval(js).await;
            if last == Ok(Json::Bool(true)) {
                return;
            }
            if started.elapsed() > PATIENCE {
                let at = self.try_eval("location.href + '\\n' + document.body.innerText").await;
                panic!("not true within {PATIENCE:?}: {js}\nlast: {last:?}\npage: {at:?}");
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Saves what the tab shows as `target/sign-in-screenshots/<name>.png`.
    pub async fn screenshot(&mut self, name: &str) {
        let png = self.capture(json!({"format": "png"})).await;
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/sign-in-screenshots");
        std::fs::create_dir_all(&dir).expect("create the screenshot directory");
        std::fs::write(dir.join(format!("{name}.png")), png).expect("write a screenshot");
    }

    /// As [`Browser::screenshot`]; with `EDS_WRITE_SCREENSHOTS` set, also the
    /// page down to the end of its content as the guide's picture
    /// `docs/guide/src/images/<image>.png`, so the guide shows the pages as they are.
    pub async fn screenshot_for_guide(&mut self, name: &str, image: &str) {
        self.screenshot(name).await;
        if std::env::var_os("EDS_WRITE_SCREENSHOTS").is_none() {
            return;
        }
        let bottom = self
            .eval("Math.ceil(document.body.getBoundingClientRect().bottom) + 32")
            .await;
        let (width, height) = (self.eval("innerWidth").await, self.eval("innerHeight").await);
        let height = bottom.as_f64().unwrap().min(height.as_f64().unwrap());
        let clip = json!({"x": 0, "y": 0, "width": width, "height": height, "scale": 1});
        let png = self.capture(json!({"format": "png", "clip": clip})).await;
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/guide/src/images");
        std::fs::write(dir.join(format!("{image}.png")), png).expect("write the guide's picture");
    }

    async fn capture(&mut self, params: Json) -> Vec<u8> {
        let shot = self.command("Page.captureScreenshot", params).await;
        base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().expect("the screenshot's data"))
            .expect("base64 PNG")
    }
}

impl Drop for Browser {
    /// Kills Chromium's whole process group: its helpers (GPU, network,
    /// renderers) would otherwise outlive it for a moment, writing into
    /// the profile as it is removed.
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `ws://` URL Chromium prints on stderr once it listens; the rest of
/// stderr is drained in a thread so Chromium never blocks on a full pipe.
async fn devtools_endpoint(child: &mut Child) -> String {
    let stderr = child.stderr.take().expect("chromium's stderr");
    let (found, endpoint) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stderr).lines().map_while(Result::ok);
        let mut before = Vec::new();
        for line in lines.by_ref() {
            if let Some(url) = line.strip_prefix("DevTools listening on ") {
                let _ = found.send(Ok(url.trim().to_owned()));
                lines.for_each(drop);
                return;
            }
            before.push(line);
        }
        let _ = found.send(Err(before.join("\n")));
    });
    match tokio::time::timeout(PATIENCE, endpoint).await {
        Ok(Ok(Ok(url))) => url,
        Ok(Ok(Err(stderr))) => panic!("chromium ended without a DevTools endpoint:\n{stderr}"),
        Ok(Err(_)) => panic!("chromium's stderr reader ended"),
        Err(_) => panic!("chromium printed no DevTools endpoint within {PATIENCE:?}"),
    }
}
