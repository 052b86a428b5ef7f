//! Driving the OAuth server as a client and a person's browser do:
//! registration, authorize, the e-mail sign-in, the consent page (its one
//! form submitted as it is, or its deny link), and the token endpoint.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value as Json, json};
use sha2::{Digest, Sha256};

use super::TestApp;
use super::email_login::{app_with_mail, ask_for_link, client_at, exchange, invite_bob, session_key};
use super::smtp::SmtpSink;

pub const REDIRECT: &str = "https://client.example/callback";
pub const VERIFIER: &str = "a-verifier-of-at-least-forty-three-characters-0123456789";

pub fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// Registers a client named `name` for `redirect_uris`; answers its id.
pub async fn register_client(app: &TestApp, name: &str, redirect_uris: &[&str]) -> String {
    let body = json!({"client_name": name, "redirect_uris": redirect_uris});
    let response = app
        .http
        .post(format!("{}/auth/register", app.url))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let registered: Json = response.json().await.unwrap();
    assert_eq!(registered["redirect_uris"], json!(redirect_uris));
    registered["client_id"].as_str().unwrap().to_owned()
}

/// Registers a client for `REDIRECT`; answers its id.
pub async fn register(app: &TestApp) -> String {
    register_client(app, "Test client", &[REDIRECT]).await
}

/// The authorize URL with `params` over the usual ones (`None` drops one).
pub fn authorize_url(app: &TestApp, client_id: &str, params: &[(&str, Option<&str>)]) -> String {
    let challenge = challenge(VERIFIER);
    let mut all: Vec<(&str, Option<&str>)> = vec![
        ("client_id", Some(client_id)),
        ("redirect_uri", Some(REDIRECT)),
        ("response_type", Some("code")),
        ("code_challenge", Some(&challenge)),
        ("code_challenge_method", Some("S256")),
        ("state", Some("st4te")),
        ("db", Some("demo")),
        ("provider", Some("e-mail")),
    ];
    for (name, value) in params {
        match all.iter_mut().find(|(given, _)| given == name) {
            Some(pair) => pair.1 = *value,
            None => all.push((name, *value)),
        }
    }
    let pairs: Vec<(&str, &str)> = all.into_iter().filter_map(|(n, v)| Some((n, v?))).collect();
    format!(
        "{}/auth/authorize?{}",
        app.url,
        serde_urlencoded::to_string(pairs).unwrap()
    )
}

/// The `Location` of a 302 answer.
pub fn location(response: &reqwest::Response) -> String {
    assert_eq!(response.status(), 302, "{}", response.url());
    response.headers()["location"].to_str().unwrap().to_owned()
}

/// A query parameter of `url`.
pub fn param(url: &str, name: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    serde_urlencoded::from_str::<Vec<(String, String)>>(query)
        .unwrap()
        .into_iter()
        .find_map(|(n, v)| (n == name).then_some(v))
}

/// The consent page as a browser finds it: its one form and its deny link.
#[derive(Debug, Clone)]
pub struct ConsentPage {
    pub html: String,
    pub csp: String,
    pub action: String,
    pub fields: Vec<(String, String)>,
    pub deny: String,
}

impl ConsentPage {
    /// Reads a 200 HTML answer; asserts it holds exactly one form, posting.
    pub async fn read(response: reqwest::Response) -> ConsentPage {
        assert_eq!(response.status(), 200, "{}", response.url());
        let csp = response.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .to_owned();
        let html = response.text().await.unwrap();
        assert_eq!(html.matches("<form").count(), 1, "exactly one form: {html}");
        let form = regex::Regex::new(r#"<form method="post" action="([^"]*)">(.*?)</form>"#).unwrap();
        let found = form.captures(&html).unwrap_or_else(|| panic!("a posting form: {html}"));
        let input = regex::Regex::new(r#"<input type="hidden" name="([^"]*)" value="([^"]*)">"#).unwrap();
        let fields = input
            .captures_iter(&found[2])
            .map(|field| (unescape(&field[1]), unescape(&field[2])))
            .collect();
        let action = unescape(&found[1]);
        let link = regex::Regex::new(r#"<a href="([^"]*/auth/authorize/deny[^"]*)">"#).unwrap();
        let deny = unescape(&link.captures(&html).unwrap_or_else(|| panic!("a deny link: {html}"))[1]);
        ConsentPage {
            html,
            csp,
            action,
            fields,
            deny,
        }
    }

    /// Submits the form as it is from `browser`.
    pub async fn allow(&self, browser: &reqwest::Client) -> reqwest::Response {
        browser.post(&self.action).form(&self.fields).send().await.unwrap()
    }
}

fn unescape(text: &str) -> String {
    text.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// Runs authorize → e-mail sign-in as `email` (the `mails` already
/// received) from `browser`; answers the completion's answer: the consent
/// page, or a redirect.
pub async fn sign_in_through_authorize(
    app: &TestApp,
    sink: &SmtpSink,
    browser: &reqwest::Client,
    authorize: &str,
    email: &str,
    mails: usize,
) -> reqwest::Response {
    let to_sign_in = location(&browser.get(authorize).send().await.unwrap());
    assert!(
        to_sign_in.starts_with(&format!("{}/api/auth/e-mail?", app.url)),
        "{to_sign_in}"
    );
    let next = param(&to_sign_in, "next").expect("the sign-in returns to the authorization");
    assert_eq!(ask_for_link(app, browser, email, &[("next", &next)]).await, 200);
    let link = sink.wait_for(mails + 1).await.last().unwrap().links()[0].clone();
    let completion = location(&browser.get(&link).send().await.unwrap());
    assert!(
        completion.starts_with(&format!("{}/auth/authorize/complete?", app.url)),
        "{completion}"
    );
    browser.get(&completion).send().await.unwrap()
}

/// Runs authorize `url` without a provider from `browser`: the method
/// chooser, its e-mail form as `email`, the mailed link (the mail after the
/// `mails` already received); answers the consent page it ends on.
pub async fn consent_page_through_the_chooser(
    app: &TestApp,
    sink: &SmtpSink,
    browser: &reqwest::Client,
    url: &str,
    email: &str,
    mails: usize,
) -> ConsentPage {
    let to_chooser = location(&browser.get(url).send().await.unwrap());
    assert!(
        to_chooser.starts_with(&format!("{}/api/auth/choose?", app.url)),
        "{to_chooser}"
    );
    let chooser = browser.get(&to_chooser).send().await.unwrap().text().await.unwrap();
    let link = regex::Regex::new(r#"href="e-mail\?([^"]*)""#).unwrap();
    let query = link.captures(&chooser).unwrap_or_else(|| panic!("{chooser}"))[1].replace("&amp;", "&");
    let next = param(&format!("?{query}"), "next").expect("the chooser carries next");
    assert_eq!(ask_for_link(app, browser, email, &[("next", &next)]).await, 200);
    let mail_link = sink.wait_for(mails + 1).await.last().unwrap().links()[0].clone();
    let completion = location(&browser.get(&mail_link).send().await.unwrap());
    ConsentPage::read(browser.get(&completion).send().await.unwrap()).await
}

/// Runs authorize → e-mail sign-in as `email` → the consent page, allowed
/// (if it is shown), from 127.0.0.1; answers where the browser is sent at
/// the end.
pub async fn authorize_with(
    app: &TestApp,
    sink: &SmtpSink,
    client_id: &str,
    params: &[(&str, Option<&str>)],
    email: &str,
    mails: usize,
) -> String {
    let browser = client_at("127.0.0.1");
    let url = authorize_url(app, client_id, params);
    let completed = sign_in_through_authorize(app, sink, &browser, &url, email, mails).await;
    if completed.status() == 302 {
        return location(&completed);
    }
    let page = ConsentPage::read(completed).await;
    location(&page.allow(&browser).await)
}

/// As [`authorize_with`], with the usual parameters.
pub async fn authorize_as(app: &TestApp, sink: &SmtpSink, client_id: &str, email: &str, mails: usize) -> String {
    authorize_with(app, sink, client_id, &[], email, mails).await
}

/// POSTs the token form from `address`; answers status and body.
pub async fn token(app: &TestApp, address: &str, form: &[(&str, &str)]) -> (u16, Json) {
    let response = client_at(address)
        .post(format!("{}/auth/token", app.url))
        .form(form)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// An app whose `bob@example.com` login is Bob, a person of `demo`; answers Bob's id.
pub async fn app_with_bob() -> (TestApp, SmtpSink, String) {
    app_with_bob_and(&[]).await
}

/// As [`app_with_bob`], with further settings.
pub async fn app_with_bob_and(overrides: &[(&str, String)]) -> (TestApp, SmtpSink, String) {
    let (app, sink) = app_with_mail(overrides).await;
    let owner = app.owner_token().await;
    let (bob, invite) = invite_bob(&app, &sink, &owner, 0).await;
    let key = session_key(&app, &sink, "bob@example.com", &[], 1).await;
    assert_eq!(exchange(&app, &key, &format!("?invite={invite}")).await.0, 200);
    (app, sink, bob)
}

/// A code for Bob, with the client it was issued to.
pub async fn code_for_bob(app: &TestApp, sink: &SmtpSink, mails: usize) -> (String, String) {
    let client_id = register(app).await;
    let back = authorize_as(app, sink, &client_id, "bob@example.com", mails).await;
    assert!(back.starts_with(REDIRECT), "{back}");
    assert_eq!(param(&back, "state").as_deref(), Some("st4te"));
    (client_id, param(&back, "code").expect("a code"))
}
