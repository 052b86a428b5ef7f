//! Signing in through the e-mail provider, as a browser does: the form, the
//! mailed link (from a real SMTP server), the session token.

use serde_json::Value as Json;

use super::smtp::SmtpSink;
use super::{Storage, TestApp};

/// The app, mailing through a fresh SMTP server, with further settings.
pub async fn app_with_mail(overrides: &[(&str, String)]) -> (TestApp, SmtpSink) {
    let sink = SmtpSink::start().await;
    let mut all = vec![("mail.smtp_url", sink.url.clone())];
    all.extend(overrides.iter().cloned());
    (TestApp::start_with(Storage::Local, &all).await, sink)
}

/// A client that sends from `address` and does not follow redirects.
pub fn client_at(address: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(address.parse::<std::net::IpAddr>().unwrap())
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Submits the e-mail form for `email` with the fields `extra` from
/// `client`; answers the status.
pub async fn ask_for_link(app: &TestApp, client: &reqwest::Client, email: &str, extra: &[(&str, &str)]) -> u16 {
    let mut form = vec![("email", email)];
    form.extend_from_slice(extra);
    let response = client
        .post(format!("{}/api/auth/e-mail", app.url))
        .form(&form)
        .send()
        .await
        .unwrap();
    response.status().as_u16()
}

/// Submits the e-mail form for `email` (and the fields `extra`) from
/// 127.0.0.1, opens the link of the mail that follows the `mails` already
/// received, and answers the session token.
pub async fn session_key(app: &TestApp, sink: &SmtpSink, email: &str, extra: &[(&str, &str)], mails: usize) -> String {
    let client = client_at("127.0.0.1");
    assert_eq!(ask_for_link(app, &client, email, extra).await, 200);
    let received = sink.wait_for(mails + 1).await;
    let links = received.last().unwrap().links();
    assert_eq!(links.len(), 1, "exactly one link");
    let mut opened = client.get(&links[0]).send().await.unwrap();
    if opened.status() == 302 {
        // a sign-in carrying an invitation: the person accepts it first
        let page = opened.headers()["location"].to_str().unwrap().to_owned();
        opened = accept_invitation(client.clone(), &page).await;
    }
    let opened: Json = opened.json().await.unwrap();
    opened["key"].as_str().expect("a session token").to_owned()
}

/// Opens the invitation's confirmation `page` in `browser` and posts its
/// one form as it is, from the page's own origin; answers the answer.
pub async fn accept_invitation(browser: reqwest::Client, page: &str) -> reqwest::Response {
    let response = browser.get(page).send().await.unwrap();
    assert_eq!(response.status(), 200, "{page}");
    let html = response.text().await.unwrap();
    assert_eq!(html.matches("<form").count(), 1, "{html}");
    let field = |name: &str| {
        let start = html
            .find(&format!("name=\"{name}\" value=\""))
            .unwrap_or_else(|| panic!("{name}: {html}"));
        let value = &html[start + name.len() + 15..];
        value[..value.find('"').unwrap()].to_owned()
    };
    let origin = page.split("/api/").next().unwrap();
    browser
        .post(format!("{origin}/api/auth/invitation"))
        .header("Origin", origin)
        .form(&[("confirmation", field("confirmation")), ("lang", field("lang"))])
        .send()
        .await
        .unwrap()
}

/// Exchanges a session token at `GET /api/auth{query}` from 127.0.0.1.
pub async fn exchange(app: &TestApp, key: &str, query: &str) -> (u16, Json) {
    app.call("GET", &format!("/api/auth{query}"), Some(key), None).await
}

/// An access token for `email`, signed in through the e-mail provider.
pub async fn access_token(app: &TestApp, sink: &SmtpSink, email: &str, query: &str, mails: usize) -> String {
    let key = session_key(app, sink, email, &[], mails).await;
    let (status, body) = exchange(app, &key, query).await;
    assert_eq!(status, 200, "{body}");
    body["token"].as_str().unwrap().to_owned()
}

/// Bob, a new person of `demo` with a name and an e-mail, invited by
/// `owner`: answers his id and the invitation token of the link mailed to
/// him (the mail after the `mails` already received).
pub async fn invite_bob(app: &TestApp, sink: &SmtpSink, owner: &str, mails: usize) -> (String, String) {
    let person_type = app.find(owner, "entity", "person").await;
    let bob = app
        .create(
            owner,
            &person_type,
            serde_json::json!([{"type": "name", "string": "Bob"}, {"type": "email", "string": "bob@example.com"}]),
        )
        .await;
    let invitation = serde_json::json!({"type": "service_user", "string": "an invitation"});
    let (status, written) = app.post(&format!("/api/demo/entity/{bob}"), owner, invitation).await;
    assert_eq!(status, 200, "{written}");
    let received = sink.wait_for(mails + 1).await;
    let links = received.last().unwrap().links();
    let invite = links[0].split_once("invite=").expect("the link carries invite").1;
    (bob, invite.to_owned())
}
