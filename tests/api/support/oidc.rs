//! A real OpenID Connect provider for the sign-in tests: the `oidc-provider`
//! package from the npm registry (`tests/oidc/`, installed by
//! `scripts/install-deps.sh`), run under Node.js, one per test.

use std::net::TcpListener;
use std::path::Path;
use std::process::Stdio;

use serde_json::Value as Json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::{Storage, TestApp};

/// The Apple team the provider expects in Apple's client-secret JWTs.
pub const APPLE_TEAM: &str = "TEAM123456";

pub struct OidcProvider {
    pub issuer: String,
    /// The private key the app signs Apple's client secrets with (PEM).
    pub apple_key: String,
    _child: Child,
}

impl OidcProvider {
    /// Starts the provider for an app at `app_url` (its clients' redirect URIs).
    pub async fn start(app_url: &str) -> OidcProvider {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oidc");
        assert!(
            dir.join("node_modules/oidc-provider").exists(),
            "{} has no node_modules: run scripts/install-deps.sh (npm ci there)",
            dir.display()
        );
        let mut child = Command::new("node")
            .arg("provider.mjs")
            .current_dir(&dir)
            .env("PORT", "0")
            .env("REDIRECT_BASE", app_url)
            .env("APPLE_TEAM_ID", APPLE_TEAM)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("run node");
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let first = tokio::time::timeout(std::time::Duration::from_secs(30), lines.next_line())
            .await
            .expect("the provider starts within 30 s")
            .unwrap()
            .expect("the provider prints its address");
        let started: Json = serde_json::from_str(&first).unwrap();
        // the provider logs to stdout as it serves: keep reading, or its writes fail
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        OidcProvider {
            issuer: started["issuer"].as_str().unwrap().to_owned(),
            apple_key: started["apple_key"].as_str().unwrap().to_owned(),
            _child: child,
        }
    }

    /// The app settings that make it sign in with this provider as
    /// `google`, `apple` and the eID broker.
    pub fn settings(&self) -> Vec<(&'static str, String)> {
        vec![
            ("auth.google.issuer", self.issuer.clone()),
            ("auth.google.client_id", "eds-google".to_owned()),
            ("auth.google.client_secret", "google-secret".to_owned()),
            ("auth.apple.issuer", self.issuer.clone()),
            ("auth.apple.client_id", "eds-apple".to_owned()),
            ("auth.apple.team_id", APPLE_TEAM.to_owned()),
            ("auth.apple.key_id", "KEY1".to_owned()),
            ("auth.apple.private_key", self.apple_key.clone()),
            ("auth.eid.issuer", self.issuer.clone()),
            ("auth.eid.client_id", "eds-eid".to_owned()),
            ("auth.eid.client_secret", "eid-secret".to_owned()),
            (
                "auth.eid.authorize_url",
                format!("{}/auth?login_hint={{provider}}", self.issuer),
            ),
        ]
    }
}

/// An app signing in with a fresh provider, with further settings.
pub async fn app_with_provider(overrides: &[(&str, String)]) -> (TestApp, OidcProvider) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let provider = OidcProvider::start(&url).await;
    let mut all = provider.settings();
    all.extend(overrides.iter().cloned());
    (TestApp::start_on(listener, Storage::Local, &all).await, provider)
}

/// A browser: keeps cookies, follows redirects.
pub fn browser() -> reqwest::Client {
    reqwest::Client::builder().cookie_store(true).build().unwrap()
}

/// The `action` of the first form in `html`, made absolute against `base`.
pub fn form_action(html: &str, base: &str) -> String {
    let at = html.find("<form").expect("a form");
    let rest = &html[at..];
    let start = rest.find("action=\"").expect("a form action") + "action=\"".len();
    let action = &rest[start..start + rest[start..].find('"').unwrap()];
    if action.starts_with("http") {
        action.to_owned()
    } else {
        format!("{base}{action}")
    }
}

/// The hidden inputs of the first form in `html`, as name and value.
pub fn hidden_inputs(html: &str) -> Vec<(String, String)> {
    let attribute = |tag: &str, name: &str| {
        let key = format!("{name}=\"");
        let start = tag.find(&key)? + key.len();
        Some(tag[start..start + tag[start..].find('"')?].to_owned())
    };
    html.split("<input")
        .skip(1)
        .filter_map(|tag| {
            let tag = &tag[..tag.find('>').unwrap_or(tag.len())];
            Some((attribute(tag, "name")?, attribute(tag, "value")?))
        })
        .collect()
}

/// Signs `login` in at the provider's development pages, starting from the
/// provider's login page `page` (HTML): the login form, then consent.
/// Answers the last response (the provider's final redirect followed).
pub async fn log_in_at_provider(
    browser: &reqwest::Client,
    issuer: &str,
    page: String,
    login: &str,
) -> reqwest::Response {
    let action = form_action(&page, issuer);
    let consent = browser
        .post(action)
        .form(&[("prompt", "login"), ("login", login), ("password", "any")])
        .send()
        .await
        .unwrap();
    assert_eq!(consent.status(), 200);
    let consent = consent.text().await.unwrap();
    let action = form_action(&consent, issuer);
    browser
        .post(action)
        .form(&[("prompt", "consent")])
        .send()
        .await
        .unwrap()
}
