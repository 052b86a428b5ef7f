//! The API against its own contract: Schemathesis (PyPI) reads
//! `/api/openapi.json` from a running server and calls every operation with
//! generated valid and invalid input, with a real token: no answer may be a
//! 5xx, use a status the document does not list, or break the documented
//! schema or content type.
//!
//! Bounded here (`EDS_CONTRACT_EXAMPLES` cases per operation, default 15);
//! `EDS_CONTRACT_EXAMPLES=200 cargo test --test contract -- --nocapture` searches harder.

#[path = "api/support/mod.rs"]
mod support;

use support::TestApp;

fn examples() -> String {
    std::env::var("EDS_CONTRACT_EXAMPLES").unwrap_or_else(|_| "15".to_owned())
}

#[tokio::test]
async fn every_operation_answers_as_its_openapi_document_says_for_generated_input() {
    let settings = [
        // generated requests come fast from one address
        ("limits.enabled", "false".to_owned()),
        // passkeys offered (WebAuthn takes no IP address for an origin)
        ("auth.webauthn.origin", "http://localhost:8080".to_owned()),
    ];
    let app = TestApp::start_with(support::Storage::Local, &settings).await;
    let token = app.owner_token().await;
    let venv = concat!(env!("CARGO_MANIFEST_DIR"), "/.data/venv/bin/schemathesis");
    let report = support::tempdir::Dir::new();
    let output = tokio::process::Command::new(venv)
        .args(["run", &format!("{}/api/openapi.json", app.url), "--url", &app.url])
        .args(["--header", &format!("Authorization: Bearer {token}")])
        .args([
            "--checks",
            "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
        ])
        .args(["--max-examples", &examples(), "--seed", "20261124", "--workers", "2"])
        .args(["--request-timeout", "30", "--generation-database", "none", "--no-color"])
        // the local storage backend's own signed URLs are not API operations;
        // the change feed is a stream that never ends (its own tests cover it)
        .args(["--exclude-path-regex", "^/storage/|/changes$"])
        .args(["--report", "junit", "--report-dir", report.0.to_str().unwrap()])
        .output()
        .await
        .expect("schemathesis (scripts/fetch-python-tools.sh installs it)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    eprintln!("{stdout}");
    assert!(
        output.status.success(),
        "schemathesis found problems:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
