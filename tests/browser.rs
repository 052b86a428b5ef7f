//! The sign-in pages in a real headless Chromium, end to end: the chooser,
//! the e-mail form and its mailed link, and passkeys made and used by the
//! browser's own WebAuthn (a virtual authenticator). Each page is saved as
//! a screenshot under `target/sign-in-screenshots/` to be looked at; with
//! `EDS_WRITE_SCREENSHOTS=1` the guide's pictures of the sign-in and consent
//! pages (and of the original web app) are written anew.
//!
//! The app is opened as `http://localhost:PORT`: WebAuthn refuses an IP
//! address as the relying party, and localhost is a secure context.

#[path = "api/support/mod.rs"]
mod support;
#[path = "browser/web_app.rs"]
mod web_app;

use serde_json::{Value as Json, json};
use support::browser::Browser;
use support::email_login::{invite_bob, session_key};
use support::smtp::SmtpSink;
use support::{Storage, TestApp};

/// The app (mailing through a fresh SMTP server) and its address as the browser opens it.
async fn app_at_localhost() -> (TestApp, SmtpSink, String) {
    let sink = SmtpSink::start().await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://localhost:{}", listener.local_addr().unwrap().port());
    let app = TestApp::start_on(
        listener,
        Storage::Local,
        &[
            ("http.public_url", base.clone()),
            ("mail.smtp_url", sink.url.clone()),
            ("auth.webauthn.rp_id", "localhost".into()),
            ("auth.webauthn.origin", base.clone()),
        ],
    )
    .await;
    (app, sink, base)
}

/// The text of the first element matching `selector` (`null` when none).
async fn text_of(browser: &mut Browser, selector: &str) -> Json {
    browser
        .eval(&format!(
            "document.querySelector({})?.innerText ?? null",
            json!(selector)
        ))
        .await
}

/// Exchanges a session token at `GET /api/auth` (from 127.0.0.1, where the
/// browser's requests come from too); asserts it works and answers the body.
async fn exchange(app: &TestApp, key: &str) -> Json {
    let (status, body) = app.call("GET", "/api/auth", Some(key), None).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["token"].as_str().is_some_and(|t| !t.is_empty()), "{body}");
    body
}

#[tokio::test]
async fn the_e_mail_page_signs_in_in_a_real_browser_in_english_and_estonian() {
    let (app, sink, base) = app_at_localhost().await;
    let mut browser = Browser::launch().await;
    let pages = [
        (
            "en",
            [
                "Sign in",
                "E-mail",
                "Sign in with e-mail",
                "Send the link",
                "Check your mail",
            ],
            "If the address is right, a sign-in link is on its way. It works once, for 15 minutes, on this device.",
        ),
        (
            "et",
            [
                "Logi sisse",
                "E-post",
                "Logi sisse e-postiga",
                "Saada link",
                "Vaata oma postkasti",
            ],
            "Kui aadress on õige, on sisselogimise link teel. See töötab üks kord, 15 minuti jooksul, selles seadmes.",
        ),
    ];
    for (mails, (lang, [choose, e_mail, form_title, button, sent_title], sent_body)) in pages.into_iter().enumerate() {
        browser.navigate(&format!("{base}/api/auth/choose?lang={lang}")).await;
        assert_eq!(browser.eval("document.documentElement.lang").await, lang);
        assert_eq!(text_of(&mut browser, "h1").await, choose);
        match lang {
            "en" => browser.screenshot_for_guide("chooser-en", "sign-in").await,
            _ => browser.screenshot(&format!("chooser-{lang}")).await,
        }
        // the chooser's e-mail link leads to the form, in the same language
        let link = text_of(&mut browser, "a[href^='e-mail?']").await;
        assert_eq!(link, e_mail);
        browser
            .eval("document.querySelector(\"a[href^='e-mail?']\").click()")
            .await;
        let form = format!("{base}/api/auth/e-mail?lang={lang}");
        browser
            .wait_for(&format!(
                "location.href === {} && document.readyState === 'complete'",
                json!(form)
            ))
            .await;
        assert_eq!(browser.eval("document.documentElement.lang").await, lang);
        assert_eq!(text_of(&mut browser, "h1").await, form_title);
        assert_eq!(text_of(&mut browser, "button").await, button);
        browser.screenshot(&format!("e-mail-{lang}")).await;

        let address = format!("ann-{lang}@example.com");
        browser
            .eval(&format!(
                "document.querySelector('input[type=email]').value = {}",
                json!(address)
            ))
            .await;
        browser.eval("document.querySelector('button').click()").await;
        browser
            .wait_for(&format!(
                "document.querySelector('h1')?.innerText === {} && document.readyState === 'complete'",
                json!(sent_title)
            ))
            .await;
        assert_eq!(browser.eval("document.documentElement.lang").await, lang);
        assert_eq!(text_of(&mut browser, "[role=status]").await, sent_body);
        browser.screenshot(&format!("e-mail-sent-{lang}")).await;

        let received = sink.wait_for(mails + 1).await;
        let mail = received.last().unwrap();
        assert_eq!(mail.header("To"), Some(address.as_str()));
        let links = mail.links();
        assert_eq!(links.len(), 1, "exactly one link: {}", mail.body);
        assert!(
            links[0].starts_with(&format!("{base}/api/auth/e-mail?token=")),
            "{}",
            links[0]
        );
        // opened in the browser that asked for it: its JSON, as Chromium shows it
        browser.navigate(&links[0]).await;
        let shown = browser
            .eval("(document.querySelector('pre') ?? document.body).innerText")
            .await;
        let opened: Json = serde_json::from_str(shown.as_str().unwrap()).unwrap_or_else(|_| panic!("{shown}"));
        let key = opened["key"].as_str().unwrap_or_else(|| panic!("{opened}"));
        let signed_in = exchange(&app, key).await;
        assert_eq!(signed_in["accounts"], json!([]), "a new login has no accounts");
    }
}

/// Waits for the passkey page's outcome: the session token shown in `#key`,
/// or (a failure) the error in `#status`.
async fn passkey_key(browser: &mut Browser) -> String {
    browser
        .wait_for("document.querySelector('#key')?.textContent !== '' || document.querySelector('#status')?.textContent !== ''")
        .await;
    let key = browser.eval("document.querySelector('#key').textContent").await;
    let failed = text_of(browser, "#status").await;
    assert_eq!(failed, "", "the passkey page failed");
    key.as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_passkey_is_registered_and_then_signs_in_with_the_browsers_virtual_authenticator() {
    let (app, _sink, base) = app_at_localhost().await;
    let mut browser = Browser::launch().await;
    browser.command("WebAuthn.enable", json!({})).await;
    browser
        .command(
            "WebAuthn.addVirtualAuthenticator",
            json!({"options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": true,
                "hasUserVerification": true,
                "isUserVerified": true,
                "automaticPresenceSimulation": true,
            }}),
        )
        .await;

    browser
        .navigate(&format!("{base}/api/auth/passkey/register?lang=et"))
        .await;
    assert_eq!(browser.eval("document.documentElement.lang").await, "et");
    assert_eq!(text_of(&mut browser, "h1").await, "Loo pääsuvõti");
    browser.screenshot("passkey-register-et").await;
    browser
        .navigate(&format!("{base}/api/auth/passkey/register?lang=en"))
        .await;
    assert_eq!(text_of(&mut browser, "h1").await, "Create a passkey");
    browser.screenshot("passkey-register-en").await;

    browser
        .eval("document.querySelector('#device').value = 'Test laptop'")
        .await;
    browser
        .eval("document.querySelector('#passkey-register [type=submit]').click()")
        .await;
    let key = passkey_key(&mut browser).await;
    browser.screenshot("passkey-registered").await;
    let registered = exchange(&app, &key).await;
    assert_eq!(registered["accounts"], json!([]), "a new login has no accounts");
    let token = registered["token"].as_str().unwrap();
    let (status, body) = app.post("/api/new", token, json!({"database": "browser_db"})).await;
    assert_eq!(status, 201, "{body}");

    browser.navigate(&format!("{base}/api/auth/passkey?lang=en")).await;
    assert_eq!(text_of(&mut browser, "h1").await, "Sign in with a passkey");
    browser.screenshot("passkey-sign-in-en").await;
    browser.eval("document.querySelector('#passkey-sign-in').click()").await;
    let key = passkey_key(&mut browser).await;
    browser.screenshot("passkey-signed-in").await;
    let signed_in = exchange(&app, &key).await;
    assert_eq!(signed_in["accounts"][0]["_id"], "browser_db", "{signed_in}");
    let person = signed_in["accounts"][0]["user"]["_id"].as_str().unwrap();
    let (status, me) = app
        .get(
            &format!("/api/browser_db/entity/{person}"),
            signed_in["token"].as_str().unwrap(),
        )
        .await;
    assert_eq!(status, 200, "{me}");
    let login = &me["entity"]["service_user"][0];
    assert_eq!(
        (login["string"].as_str(), login["provider"].as_str()),
        (Some("Test laptop"), Some("passkey")),
        "{me}"
    );
}

#[tokio::test]
async fn the_consent_page_allows_in_a_real_browser_and_its_redirect_to_the_client_passes_the_pages_policy() {
    let (app, sink, base) = app_at_localhost().await;
    let owner = app.owner_token().await;
    let (_, invite) = invite_bob(&app, &sink, &owner, 0).await;
    let key = session_key(&app, &sink, "bob@example.com", &[], 1).await;
    let (status, _) = app
        .call("GET", &format!("/api/auth?invite={invite}"), Some(&key), None)
        .await;
    assert_eq!(status, 200);
    // the client's redirect URI is another origin (this server by its address answers it)
    let port = base.rsplit(':').next().unwrap();
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");
    let registration = json!({"client_name": "Browser client", "redirect_uris": [redirect_uri]});
    let registered: Json = app
        .http
        .post(format!("{base}/auth/register"))
        .json(&registration)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let client_id = registered["client_id"].as_str().unwrap();
    let authorize = format!(
        "{base}/auth/authorize?{}",
        serde_urlencoded::to_string([
            ("client_id", client_id),
            ("redirect_uri", &redirect_uri),
            ("response_type", "code"),
            ("code_challenge", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"),
            ("code_challenge_method", "S256"),
            ("state", "st4te"),
            ("db", "demo"),
            ("provider", "e-mail"),
        ])
        .unwrap()
    );
    let mut browser = Browser::launch().await;
    browser.navigate(&authorize).await;
    browser
        .eval("document.querySelector('input[type=email]').value = 'bob@example.com'")
        .await;
    browser.eval("document.querySelector('button').click()").await;
    browser
        .wait_for("document.querySelector('[role=status]') !== null && document.readyState === 'complete'")
        .await;
    let link = sink.wait_for(3).await.last().unwrap().links()[0].clone();
    browser.navigate(&link).await;
    browser
        .wait_for("document.querySelector('h1')?.innerText === 'Allow access?'")
        .await;
    assert_eq!(text_of(&mut browser, "q.client-words").await, "Browser client");
    browser.screenshot_for_guide("consent-en", "consent").await;
    browser.eval("document.querySelector('form button').click()").await;
    let back = format!("{redirect_uri}?code=");
    browser
        .wait_for(&format!(
            "location.href.startsWith({}) && document.readyState === 'complete'",
            json!(back)
        ))
        .await;
    let at = browser.eval("location.href").await;
    assert!(at.as_str().unwrap().contains("state=st4te"), "{at}");
}

#[tokio::test]
async fn a_page_with_event_source_and_a_stream_ticket_sees_a_change_made_through_the_api() {
    let (app, _sink, base) = app_at_localhost().await;
    let owner = app.owner_token().await;
    let books = app.create_type(&owner, "book").await;
    // the browser connects from 127.0.0.1 too, the address the ticket is bound to
    let (status, answer) = app.call("POST", "/api/demo/changes/ticket", Some(&owner), None).await;
    assert_eq!(status, 200, "{answer}");
    let ticket = answer["ticket"].as_str().unwrap();
    let mut browser = Browser::launch().await;
    browser.navigate(&format!("{base}/")).await;
    browser
        .eval(&format!(
            "window.seen = []; window.feed = new EventSource('/api/demo/changes?ticket=' + {}); \
             feed.addEventListener('change', event => seen.push(JSON.parse(event.data))); true",
            json!(ticket)
        ))
        .await;
    browser.wait_for("feed.readyState === EventSource.OPEN").await;

    let id = app
        .create(&owner, &books, json!([{"type": "name", "string": "seen by a browser"}]))
        .await;
    browser
        .wait_for(&format!(
            "seen.some(change => change._id === {} && change.action === 'create')",
            json!(id)
        ))
        .await;
}

/// Installed before any script of a page: records the page's CSP
/// violations and the `Authorization` header of each `fetch` it makes.
const CONSOLE_RECORDER: &str = "window.cspViolations = []; window.sentAuthorizations = [];\
    document.addEventListener('securitypolicyviolation', event =>\
        cspViolations.push(event.effectiveDirective + ' ' + event.blockedURI));\
    const pageFetch = window.fetch;\
    window.fetch = function (url, init) {\
        sentAuthorizations.push(new Headers((init && init.headers) || {}).get('Authorization'));\
        return pageFetch.apply(this, arguments);\
    };";

/// Waits until the console's editors are on the page.
async fn wait_for_console(browser: &mut Browser) {
    browser
        .wait_for("document.querySelector('.graphiql-query-editor .CodeMirror') !== null")
        .await;
}

/// Types `query` into the console, runs it and answers the JSON its result
/// pane shows (emptied first, so the answer is this run's).
async fn run_in_console(browser: &mut Browser, query: &str) -> Json {
    let pane = "document.querySelector('.graphiql-response .CodeMirror').CodeMirror";
    browser
        .eval(&format!(
            "{pane}.setValue(''); \
             document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror.setValue({}); \
             document.querySelector('.graphiql-execute-button').click(); true",
            json!(query)
        ))
        .await;
    browser
        .wait_for(&format!(
            "(() => {{ try {{ JSON.parse({pane}.getValue()); return true; }} catch {{ return false; }} }})()"
        ))
        .await;
    let shown = browser.eval(&format!("{pane}.getValue()")).await;
    serde_json::from_str(shown.as_str().unwrap()).unwrap_or_else(|_| panic!("{shown}"))
}

#[tokio::test]
async fn graphql_console_runs_a_query_with_the_callers_token() {
    let (app, _sink, base) = app_at_localhost().await;
    let owner = app.owner_token().await;
    let books = app.create_type(&owner, "book").await;
    // not public: only a caller with rights sees it
    let id = app
        .create(
            &owner,
            &books,
            json!([{"type": "name", "string": "read in the console"}]),
        )
        .await;
    let mut browser = Browser::launch().await;
    browser.command("Page.enable", json!({})).await;
    browser
        .command(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({"source": CONSOLE_RECORDER}),
        )
        .await;
    // a navigation asks for HTML: the endpoint answers the console
    browser.navigate(&format!("{base}/api/demo/graphql")).await;
    wait_for_console(&mut browser).await;
    assert_eq!(text_of(&mut browser, "#eds-database").await, "demo");
    let query = "{ book { _id } }";

    // without a token the query runs anonymously and sees no private book
    let anonymous = run_in_console(&mut browser, query).await;
    assert!(!anonymous.to_string().contains(&id), "{anonymous}");
    let sent = browser.eval("sentAuthorizations").await;
    let sent = sent.as_array().unwrap();
    assert!(
        sent.len() >= 2 && sent.iter().all(Json::is_null),
        "schema and query, anonymous: {sent:?}"
    );

    browser
        .eval(&format!(
            "document.querySelector('#eds-token').value = {}",
            json!(owner)
        ))
        .await;
    browser
        .eval("document.querySelector('#eds-token-form [type=submit]').click()")
        .await;
    assert_eq!(
        browser.eval("sessionStorage.getItem('eds.graphql.token')").await,
        json!(owner)
    );
    // the tab keeps the token: a page loaded afresh (here with the trailing
    // `/` the API ignores) queries with it from its first request
    browser.navigate(&format!("{base}/api/demo/graphql/")).await;
    wait_for_console(&mut browser).await;
    let answer = run_in_console(&mut browser, query).await;
    browser.screenshot("graphql-console").await;
    assert_eq!(answer["data"]["book"], json!([{"_id": id}]), "{answer}");
    let sent = browser.eval("sentAuthorizations").await;
    let sent = sent.as_array().unwrap();
    let bearer = json!(format!("Bearer {owner}"));
    assert!(
        sent.len() >= 2 && sent.iter().all(|sent| *sent == bearer),
        "schema and query, with the token: {sent:?}"
    );

    // forgotten, the token goes with no request any more
    browser
        .eval("document.querySelector('#eds-token-forget').click()")
        .await;
    assert_eq!(
        browser.eval("sessionStorage.getItem('eds.graphql.token')").await,
        Json::Null
    );
    let forgotten = run_in_console(&mut browser, query).await;
    assert!(!forgotten.to_string().contains(&id), "{forgotten}");
    assert_eq!(browser.eval("sentAuthorizations.at(-1)").await, Json::Null);

    // a dialog locks scrolling with a style element it adds: the policy lets it apply
    browser
        .eval("document.querySelector('[aria-label=\"Open settings dialog\"]').click(); true")
        .await;
    browser
        .wait_for(
            "document.querySelector('[role=dialog]') !== null && getComputedStyle(document.body).overflow === 'hidden'",
        )
        .await;
    assert_eq!(browser.eval("cspViolations").await, json!([]));
}
