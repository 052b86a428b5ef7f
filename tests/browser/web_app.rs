//! The original Entu web app (its build, `EDS_WEBAPP_DIR`) against eds in a
//! real browser: signed in with an API key, it shows an entity of eds. With
//! `EDS_WRITE_SCREENSHOTS=1` the page is the guide's picture of the app.
//!
//! `EDS_WRITE_SCREENSHOTS=1 EDS_WEBAPP_DIR=../webapp/.output/public \
//!  cargo test --test browser -- --ignored web_app`

use std::path::{Path, PathBuf};

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use serde_json::json;

use crate::support::TestApp;
use crate::support::browser::Browser;

/// The address the app's build calls (`NUXT_PUBLIC_API_URL` at build time).
const BUILT_API_URL: &str = "http://localhost:8080/api";

/// The build's files as a single-page app (unknown paths answer `200.html`),
/// its API address replaced by `api`; answers the server's origin.
fn serve_web_app(dir: PathBuf, api: String) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let file = move |request: HttpRequest| {
        let (dir, api) = (dir.clone(), api.clone());
        async move {
            let relative = request.path().trim_start_matches('/');
            let safe = Path::new(relative)
                .components()
                .all(|part| matches!(part, std::path::Component::Normal(_)));
            let candidates = [dir.join(relative), dir.join(relative).join("index.html")];
            let found = candidates.into_iter().find(|path| safe && path.is_file());
            let path = found.unwrap_or_else(|| dir.join("200.html"));
            let bytes = std::fs::read(&path).unwrap();
            let kind = mime_of(&path);
            let body = if kind.starts_with("text/") || kind.contains("javascript") || kind.contains("json") {
                String::from_utf8_lossy(&bytes)
                    .replace(BUILT_API_URL, &api)
                    .into_bytes()
            } else {
                bytes
            };
            HttpResponse::Ok().content_type(kind).body(body)
        }
    };
    std::thread::spawn(move || {
        actix_web::rt::System::new().block_on(async move {
            HttpServer::new(move || App::new().default_service(web::to(file.clone())))
                .workers(1)
                .listen(listener)
                .unwrap()
                .run()
                .await
        })
    });
    origin
}

fn mime_of(path: &Path) -> &'static str {
    match path.extension().and_then(|ext| ext.to_str()).unwrap_or_default() {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "woff2" => "font/woff2",
        _ => "application/octet-stream",
    }
}

#[tokio::test]
#[ignore = "needs the original web app's build (EDS_WEBAPP_DIR); writes the guide's picture of it"]
async fn the_original_web_app_signs_in_and_shows_an_entity_of_eds() {
    let build = PathBuf::from(std::env::var("EDS_WEBAPP_DIR").expect("EDS_WEBAPP_DIR: the web app's build"));
    assert!(
        build.join("200.html").is_file(),
        "{} holds no web app build",
        build.display()
    );
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    for (property, value_type) in [("name", "string"), ("author", "string"), ("published", "date")] {
        app.define(&owner, &book, property, value_type, json!([])).await;
    }
    let values = json!([
        {"type": "name", "string": "Dune"},
        {"type": "author", "string": "Frank Herbert"},
        {"type": "published", "date": "1965-08-01"},
    ]);
    let dune = app.create(&owner, &book, values).await;
    let web_app = serve_web_app(build, format!("{}/api", app.url));
    let mut browser = Browser::launch().await;
    browser
        .command(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1024, "height": 640, "deviceScaleFactor": 1, "mobile": false}),
        )
        .await;
    browser
        .navigate(&format!("{web_app}/auth/callback?key={}", app.key))
        .await;
    browser.wait_for("location.pathname !== '/auth/callback'").await;
    browser.navigate(&format!("{web_app}/demo/{dune}")).await;
    browser
        .wait_for("document.body.innerText.includes('Frank Herbert')")
        .await;
    browser.wait_for("document.body.innerText.includes('1965')").await;
    browser.screenshot_for_guide("web-app", "webapp").await;
}
