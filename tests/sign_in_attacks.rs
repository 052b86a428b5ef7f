//! Attacks on the sign-in pages, each performed against the real server and
//! shown to fail, with the legitimate use beside it: forms posted from
//! another site (login CSRF), pages read across origins, and floods of
//! sign-in state.

mod common;

use common::TestApp;
use common::email_login::{app_with_mail, client_at};
use serde_json::Value as Json;

/// Posts the e-mail form for `email` from 127.0.0.1 with the browser headers `headers`.
async fn post_email_form(app: &TestApp, headers: &[(&str, &str)], email: &str) -> (u16, String) {
    let mut request = client_at("127.0.0.1")
        .post(format!("{}/api/auth/e-mail", app.url))
        .form(&[("email", email)]);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test]
async fn the_e_mail_form_posted_from_another_site_is_403_cross_site_form_and_mails_nothing() {
    let (app, sink) = app_with_mail(&[]).await;
    let foreign: [&[(&str, &str)]; 4] = [
        &[("Origin", "https://attacker.example")],
        &[("Origin", "null")],
        &[("Sec-Fetch-Site", "cross-site")],
        // the service's host on another scheme is another origin
        &[("Origin", &app.url.replace("http://", "https://"))],
    ];
    for headers in foreign {
        let (status, body) = post_email_form(&app, headers, "attacker@example.com").await;
        assert_eq!(status, 403, "{headers:?}: {body}");
        let body: Json = serde_json::from_str(&body).unwrap();
        assert_eq!(body["error"], "cross_site_form", "{body}");
    }
    // from the service's own page, and from a client that is no browser
    let own: [&[(&str, &str)]; 2] = [&[("Origin", &app.url), ("Sec-Fetch-Site", "same-origin")], &[]];
    for headers in own {
        let (status, body) = post_email_form(&app, headers, "ann@example.com").await;
        assert_eq!(status, 200, "{headers:?}: {body}");
    }
    let mails = sink.wait_for(2).await;
    assert_eq!(mails.len(), 2);
    assert!(
        mails.iter().all(|mail| mail.header("To").unwrap().contains("ann@example.com")),
        "no mail went to the attacker's address"
    );
}

#[tokio::test]
async fn html_pages_carry_no_cors_headers_and_json_answers_keep_them() {
    let app = TestApp::start().await;
    for page in ["/api/auth/e-mail", "/api/auth/choose"] {
        let response = app
            .http
            .get(format!("{}{page}", app.url))
            .header("Origin", "https://attacker.example")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{page}");
        assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
        assert!(
            !response.headers().contains_key("access-control-allow-origin"),
            "{page}: {:?}",
            response.headers()
        );
    }
    let response = app
        .http
        .get(format!("{}/api/demo/entity", app.url))
        .header("Origin", "https://app.example")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
}
