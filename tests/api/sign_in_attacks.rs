//! Attacks on the sign-in pages, each performed against the real server and
//! shown to fail, with the legitimate use beside it: forms posted from
//! another site (login CSRF), pages read across origins, and floods of
//! sign-in state.

use crate::support;

use serde_json::{Value as Json, json};
use support::TestApp;
use support::email_login::{accept_invitation, app_with_mail, client_at, exchange, invite_bob};
use support::oauth::{REDIRECT, authorize_url, location, register};

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
        mails
            .iter()
            .all(|mail| mail.header("To").unwrap().contains("ann@example.com")),
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
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/html")
        );
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

/// Where authorize sends `browser` for `client_id` (the usual parameters).
async fn authorize(app: &TestApp, browser: &reqwest::Client, client_id: &str) -> String {
    let response = browser.get(authorize_url(app, client_id, &[])).send().await.unwrap();
    location(&response)
}

#[tokio::test]
async fn one_address_holds_at_most_100_pending_sign_ins_then_authorize_is_temporarily_unavailable_and_the_pages_429() {
    let (app, sink) = app_with_mail(&[]).await;
    let client_id = register(&app).await;
    let flooder = client_at("127.0.0.1");
    // all at once: a burst cannot pass the bound together
    let answers = futures_util::future::join_all((0..120).map(|_| authorize(&app, &flooder, &client_id))).await;
    let to_sign_in = answers.iter().filter(|answer| answer.starts_with(&app.url)).count();
    let refused: Vec<&String> = answers.iter().filter(|answer| !answer.starts_with(&app.url)).collect();
    assert_eq!((to_sign_in, refused.len()), (100, 20));
    for refused in refused {
        assert!(refused.starts_with(&format!("{REDIRECT}?")), "{refused}");
        assert!(refused.contains("error=temporarily_unavailable"), "{refused}");
    }
    let (status, body) = post_email_form(&app, &[], "flooder@example.com").await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(serde_json::from_str::<Json>(&body).unwrap()["error"], "rate_limited");
    // the flood holds at most 100 rows, and another address signs in as before
    let pending: i64 = pending_states(&app).await;
    assert_eq!(pending, 100);
    let neighbour = client_at("127.0.0.2");
    assert!(authorize(&app, &neighbour, &client_id).await.starts_with(&app.url));
    let response = neighbour
        .post(format!("{}/api/auth/e-mail", app.url))
        .form(&[("email", "ann@example.com")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(sink.wait_for(1).await.len(), 1);
}

/// The sign-in states not yet used.
async fn pending_states(app: &TestApp) -> i64 {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        count: i64,
    }
    let mut conn = app.pool.get().await.unwrap();
    diesel::sql_query("SELECT count(*) AS count FROM sign_in_states WHERE consumed_at IS NULL")
        .get_result::<Count>(&mut conn)
        .await
        .unwrap()
        .count
}

#[tokio::test]
async fn a_next_or_an_invite_over_2048_bytes_is_400_and_stores_nothing() {
    // passkeys offered: their pages carry `next` and `invite` too
    let passkeys = [("auth.webauthn.origin", "https://localhost:8443".to_owned())];
    let (app, sink) = app_with_mail(&passkeys).await;
    let long_next = format!("https://app.example/{}", "n".repeat(2048));
    let long_invite = "i".repeat(2049);
    let browser = client_at("127.0.0.1");
    for (field, value, code) in [
        ("next", &long_next, "invalid_next"),
        ("invite", &long_invite, "invalid_invite"),
    ] {
        for page in ["/api/auth/e-mail", "/api/auth/choose", "/api/auth/passkey/register"] {
            let response = browser
                .get(format!("{}{page}", app.url))
                .query(&[(field, value)])
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 400, "{page} {field}");
            assert_eq!(response.json::<Json>().await.unwrap()["error"], code, "{page} {field}");
        }
        let form = browser
            .post(format!("{}/api/auth/e-mail", app.url))
            .form(&[("email", "ann@example.com"), (field, value)])
            .send()
            .await
            .unwrap();
        assert_eq!(form.status(), 400, "{field}");
        let passkey = browser
            .post(format!("{}/api/auth/passkey/options", app.url))
            .json(&json!({ field: value }))
            .send()
            .await
            .unwrap();
        assert_eq!(passkey.status(), 400, "{field}");
        assert_eq!(passkey.json::<Json>().await.unwrap()["error"], code, "{field}");
    }
    assert_eq!(pending_states(&app).await, 0);
    assert!(sink.mails().is_empty());
    // within the bound, as before
    let next = format!("https://app.example/{}", "n".repeat(1000));
    let form = browser
        .post(format!("{}/api/auth/e-mail", app.url))
        .form(&[("email", "ann@example.com"), ("next", &next)])
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), 200);
    assert_eq!(pending_states(&app).await, 1);
}

/// The status and error code of the e-mail page for `next`.
async fn email_page_for(app: &TestApp, next: &str) -> (u16, Json) {
    let response = app
        .http
        .get(format!("{}/api/auth/e-mail", app.url))
        .query(&[("next", next)])
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Json::Null))
}

#[tokio::test]
async fn next_is_any_https_url_or_a_loopback_http_one_unless_allowed_next_origins_narrows_it() {
    let open = TestApp::start().await;
    for next in [
        "https://anywhere.example/done?key=",
        "http://localhost:3000/?key=",
        "http://127.0.0.1:5173/#key=",
    ] {
        assert_eq!(email_page_for(&open, next).await.0, 200, "{next}");
    }
    assert_eq!(
        email_page_for(&open, "http://app.example.com/").await.1["error"],
        "invalid_next"
    );
    let allowed = json!(["https://app.example.com", "http://localhost:3000"]).to_string();
    let narrowed = TestApp::start_with(support::Storage::Local, &[("auth.allowed_next_origins", allowed)]).await;
    for next in ["https://app.example.com/signed-in?key=", "http://localhost:3000/?key="] {
        assert_eq!(email_page_for(&narrowed, next).await.0, 200, "{next}");
    }
    for next in [
        "https://anywhere.example/done?key=",
        "https://app.example.com.evil.example/",
        "http://localhost:3001/",
    ] {
        let (status, body) = email_page_for(&narrowed, next).await;
        assert_eq!((status, body["error"].as_str()), (400, Some("invalid_next")), "{next}");
    }
}

#[tokio::test]
async fn an_invitation_carried_through_a_sign_in_is_linked_only_once_the_person_accepts_it_on_its_own_page() {
    let (app, sink) = app_with_mail(&[]).await;
    let owner = app.owner_token().await;
    let (bob, invite) = invite_bob(&app, &sink, &owner, 0).await;
    let browser = client_at("127.0.0.1");
    let form = browser
        .post(format!("{}/api/auth/e-mail", app.url))
        .form(&[("email", "bob@example.com"), ("invite", &invite)])
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), 200);
    let link = sink.wait_for(2).await[1].links()[0].clone();
    let opened = browser.get(&link).send().await.unwrap();
    assert_eq!(opened.status(), 302);
    let page_url = opened.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        page_url.starts_with(&format!("{}/api/auth/invitation?confirmation=", app.url)),
        "{page_url}"
    );
    let still_pending = |entity: &Json| entity["entity"]["service_user"][0]["invite"] == true;
    let (_, entity) = app.get(&format!("/api/demo/entity/{bob}"), &owner).await;
    assert!(
        still_pending(&entity),
        "nothing is linked before the person accepts: {entity}"
    );

    let page = browser.get(&page_url).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(!page.headers().contains_key("access-control-allow-origin"));
    let html = page.text().await.unwrap();
    assert!(
        html.contains("You are accepting an invitation to <strong>demo</strong>"),
        "{html}"
    );
    assert_eq!(html.matches("<form").count(), 1, "{html}");
    let confirmation = page_url.split_once("confirmation=").unwrap().1.to_owned();
    let post = |client: reqwest::Client, origin: &str| {
        let request = client
            .post(format!("{}/api/auth/invitation", app.url))
            .header("Origin", origin)
            .form(&[("confirmation", confirmation.as_str())]);
        async move { request.send().await.unwrap() }
    };
    // another site cannot accept it for the person, nor another address
    let forged = post(client_at("127.0.0.1"), "https://attacker.example").await;
    assert_eq!(forged.status(), 403);
    let elsewhere = post(client_at("127.0.0.2"), &app.url).await;
    assert_eq!(elsewhere.status(), 400);
    assert_eq!(elsewhere.json::<Json>().await.unwrap()["error"], "invalid_sign_in");
    let (_, entity) = app.get(&format!("/api/demo/entity/{bob}"), &owner).await;
    assert!(still_pending(&entity), "{entity}");

    let accepted = accept_invitation(browser.clone(), &page_url).await;
    assert_eq!(accepted.status(), 200);
    let key = accepted.json::<Json>().await.unwrap()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, body) = exchange(&app, &key, "").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["accounts"][0]["user"]["_id"], bob.as_str(), "{body}");
    let (_, entity) = app.get(&format!("/api/demo/entity/{bob}"), &owner).await;
    assert_eq!(entity["entity"]["service_user"][0]["provider"], "e-mail", "{entity}");
    // the confirmation is used up
    assert_eq!(post(browser, &app.url).await.status(), 400);
}
