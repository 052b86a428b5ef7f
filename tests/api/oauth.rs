//! The OAuth 2.1 authorization server, end to end: registration, authorize
//! through the e-mail provider (a real SMTP server), the code exchanged for
//! an access token from another address, and every error of authorize and
//! token.

use crate::support;
mod credentials;

use chrono::Duration;
use serde_json::{Value as Json, json};
use support::TestApp;
use support::email_login::{app_with_mail, client_at};
use support::oauth::{
    REDIRECT, VERIFIER, app_with_bob, authorize_as, authorize_url, authorize_with, code_for_bob, location, param,
    register, token,
};

#[tokio::test]
async fn the_metadata_lists_the_endpoints_at_the_issuers_root_only() {
    let app = TestApp::start().await;
    let (status, metadata) = app
        .call("GET", "/.well-known/oauth-authorization-server", None, None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        metadata,
        json!({
            "issuer": app.url,
            "authorization_endpoint": format!("{}/auth/authorize", app.url),
            "token_endpoint": format!("{}/auth/token", app.url),
            "registration_endpoint": format!("{}/auth/register", app.url),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "authorization_response_iss_parameter_supported": true,
            "client_id_metadata_document_supported": true,
            "scopes_supported": ["read", "write"],
        })
    );
    let (status, _) = app
        .call("GET", "/api/.well-known/oauth-authorization-server", None, None)
        .await;
    assert_eq!(status, 404, "no alias under /api");
}

#[tokio::test]
async fn registration_takes_one_to_ten_absolute_redirect_uris_and_cuts_the_name() {
    let app = TestApp::start().await;
    let post = |body: Json| {
        let request = app.http.post(format!("{}/auth/register", app.url)).json(&body);
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            (status, response.json::<Json>().await.unwrap())
        }
    };
    let (status, registered) =
        post(json!({"client_name": "x".repeat(250), "redirect_uris": ["myapp:callback", "http://127.0.0.1:4000/cb"]}))
            .await;
    assert_eq!(status, 201, "{registered}");
    assert_eq!(registered["client_name"].as_str().unwrap().chars().count(), 200);
    assert_eq!(registered["token_endpoint_auth_method"], "none");
    assert!(registered.get("client_secret").is_none());
    for body in [
        json!({"redirect_uris": []}),
        json!({"redirect_uris": vec![REDIRECT; 11]}),
        json!({"redirect_uris": ["/relative"]}),
        json!({"redirect_uris": ["https://a.example/cb#fragment"]}),
    ] {
        let (status, refused) = post(body.clone()).await;
        assert_eq!(
            (status, refused["error"].as_str()),
            (400, Some("invalid_redirect_uri")),
            "{body}"
        );
        assert!(refused["error_description"].is_string(), "{refused}");
    }
    let (status, refused) = post(json!({"client_name": "no uris"})).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_client_metadata")),
        "{refused}"
    );
}

#[tokio::test]
async fn the_whole_flow_gives_a_token_for_the_one_database_usable_from_any_address_and_not_refreshable() {
    let (app, sink, _) = app_with_bob().await;
    let (client_id, code) = code_for_bob(&app, &sink, 2).await;
    let verifier = VERIFIER;
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", verifier),
        ("client_id", client_id.as_str()),
    ];
    let (status, answer) = token(&app, "127.0.0.2", &form).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        (answer["token_type"].as_str(), answer["expires_in"].as_i64()),
        (Some("Bearer"), Some(43200))
    );
    let access = answer["access_token"].as_str().unwrap();
    // a REST call from a third address: not bound
    let response = client_at("127.0.0.3")
        .get(format!("{}/api/demo", app.url))
        .bearer_auth(access)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let (status, refreshed) = app.call("GET", "/api/auth/refresh", Some(access), None).await;
    assert_eq!(
        (status, refreshed["message"].as_str()),
        (401, Some("Invalid token")),
        "{refreshed}"
    );
    // the code worked once
    let (status, replay) = token(&app, "127.0.0.2", &form).await;
    assert_eq!(
        (status, replay["error"].as_str()),
        (400, Some("invalid_grant")),
        "{replay}"
    );
}

#[tokio::test]
async fn a_login_that_is_no_person_in_the_database_is_sent_back_with_access_denied() {
    let (app, sink) = app_with_mail(&[]).await;
    let client_id = register(&app).await;
    let back = authorize_as(&app, &sink, &client_id, "stranger@example.com", 0).await;
    assert!(back.starts_with(REDIRECT), "{back}");
    assert_eq!(param(&back, "error").as_deref(), Some("access_denied"));
    assert_eq!(param(&back, "state").as_deref(), Some("st4te"));
    assert_eq!(param(&back, "code"), None);
}

#[tokio::test]
async fn an_unknown_client_or_an_unregistered_redirect_uri_gets_a_400_never_a_redirect() {
    let app = TestApp::start().await;
    let client_id = register(&app).await;
    let mut tampered = client_id.clone();
    tampered.insert(client_id.len() / 2, 'A');
    for url in [
        authorize_url(&app, "not-a-client", &[]),
        authorize_url(&app, &tampered, &[]),
        authorize_url(&app, &client_id, &[("redirect_uri", Some("https://evil.example/cb"))]),
        authorize_url(&app, &client_id, &[("redirect_uri", None)]),
    ] {
        let page = client_at("127.0.0.1").get(&url).send().await.unwrap();
        assert_eq!(page.status(), 400, "{url}");
        let content_type = page.headers()["content-type"].to_str().unwrap().to_owned();
        assert!(
            content_type.starts_with("text/html"),
            "{url}: {content_type} {}",
            page.text().await.unwrap()
        );
        let json = client_at("127.0.0.1")
            .get(&url)
            .header("Accept", "application/json")
            .send()
            .await
            .unwrap();
        assert_eq!(json.status(), 400);
        let body: Json = json.json().await.unwrap();
        assert_eq!(body["error"], "invalid_client", "{body}");
    }
}

#[tokio::test]
async fn every_other_authorize_problem_goes_back_to_the_redirect_uri_with_the_state() {
    let app = TestApp::start().await;
    let client_id = register(&app).await;
    let other_host = "https://elsewhere.example/api/demo/mcp";
    for (params, error) in [
        (vec![("response_type", Some("token"))], "unsupported_response_type"),
        (vec![("code_challenge", None)], "invalid_request"),
        (vec![("code_challenge_method", Some("plain"))], "invalid_request"),
        (vec![("code_challenge_method", None)], "invalid_request"),
        (vec![("db", None)], "invalid_request"),
        (vec![("db", None), ("resource", Some(other_host))], "invalid_request"),
        (vec![("db", Some("no_such_db"))], "invalid_request"),
        (vec![("provider", Some("myspace"))], "invalid_request"),
    ] {
        let response = client_at("127.0.0.1")
            .get(authorize_url(&app, &client_id, &params))
            .send()
            .await
            .unwrap();
        let back = location(&response);
        assert!(back.starts_with(REDIRECT), "{params:?}: {back}");
        assert_eq!(param(&back, "error").as_deref(), Some(error), "{params:?}");
        assert!(param(&back, "error_description").is_some());
        assert_eq!(param(&back, "state").as_deref(), Some("st4te"));
        assert_eq!(param(&back, "iss"), Some(app.url.clone()), "the issuer, byte for byte");
    }
    // a resource on this host names the database; no provider: the chooser
    let resource = format!("{}/api/demo/mcp", app.url);
    let params = [("db", None), ("resource", Some(resource.as_str())), ("provider", None)];
    let response = client_at("127.0.0.1")
        .get(authorize_url(&app, &client_id, &params))
        .send()
        .await
        .unwrap();
    let to = location(&response);
    assert!(to.starts_with(&format!("{}/api/auth/choose?next=", app.url)), "{to}");
}

#[tokio::test]
async fn the_token_endpoint_refuses_a_wrong_verifier_redirect_uri_client_or_resource_and_each_uses_the_code() {
    let (app, sink, _) = app_with_bob().await;
    let mut mails = 2;
    for (field, value, error) in [
        (
            "code_verifier",
            "a-wrong-verifier-of-at-least-forty-three-characters-000",
            "invalid_grant",
        ),
        ("redirect_uri", "https://client.example/other", "invalid_grant"),
        ("client_id", "another-client", "invalid_grant"),
        ("resource", "https://elsewhere.example/api/demo/mcp", "invalid_target"),
    ] {
        let (_, code) = code_for_bob(&app, &sink, mails).await;
        mails += 1;
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", REDIRECT),
            ("code_verifier", VERIFIER),
        ];
        match form.iter_mut().find(|(name, _)| *name == field) {
            Some(pair) => pair.1 = value,
            None => form.push((field, value)),
        }
        let (status, refused) = token(&app, "127.0.0.1", &form).await;
        assert_eq!(
            (status, refused["error"].as_str()),
            (400, Some(error)),
            "{field}: {refused}"
        );
        assert!(refused["error_description"].is_string());
        let right = [
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", REDIRECT),
            ("code_verifier", VERIFIER),
        ];
        let (status, _) = token(&app, "127.0.0.1", &right).await;
        assert_eq!(status, 400, "{field}: a refused attempt used the code");
    }
    // a code lives 5 minutes
    let (_, code) = code_for_bob(&app, &sink, mails).await;
    app.state.clock.advance(Duration::seconds(5 * 60));
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", VERIFIER),
    ];
    let (status, expired) = token(&app, "127.0.0.1", &form).await;
    assert_eq!(
        (status, expired["error"].as_str()),
        (400, Some("invalid_grant")),
        "{expired}"
    );
    for (form, error) in [
        (vec![("grant_type", "password")], "unsupported_grant_type"),
        (vec![], "invalid_request"),
        (vec![("grant_type", "authorization_code")], "invalid_request"),
    ] {
        let (status, refused) = token(&app, "127.0.0.1", &form).await;
        assert_eq!((status, refused["error"].as_str()), (400, Some(error)), "{form:?}");
    }
}

#[tokio::test]
async fn an_mcp_client_with_only_the_mcp_url_discovers_registers_signs_in_and_calls_a_tool() {
    let (app, sink, _) = app_with_bob().await;
    let mcp_url = format!("{}/api/demo/mcp", app.url);
    let agent = client_at("127.0.0.2");
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    let challenge = agent.post(&mcp_url).json(&initialize).send().await.unwrap();
    assert_eq!(challenge.status(), 401);
    let header = challenge.headers()["www-authenticate"].to_str().unwrap().to_owned();
    let metadata_url = header
        .split_once("resource_metadata=\"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(url, _)| url.to_owned())
        .unwrap_or_else(|| panic!("{header}"));
    let resource: Json = agent.get(&metadata_url).send().await.unwrap().json().await.unwrap();
    assert_eq!(resource["resource"], mcp_url.as_str());
    let issuer = resource["authorization_servers"][0].as_str().unwrap();
    let server: Json = agent
        .get(format!("{issuer}/.well-known/oauth-authorization-server"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let registration = json!({"client_name": "An agent", "redirect_uris": [REDIRECT]});
    let registered: Json = agent
        .post(server["registration_endpoint"].as_str().unwrap())
        .json(&registration)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let client_id = registered["client_id"].as_str().unwrap();
    // the person signs in in their browser; the MCP URL is the resource, no db
    let params = [("db", None), ("resource", Some(mcp_url.as_str()))];
    let back = authorize_with(&app, &sink, client_id, &params, "bob@example.com", 2).await;
    let code = param(&back, "code").unwrap_or_else(|| panic!("{back}"));
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", VERIFIER),
        ("client_id", client_id),
        ("resource", mcp_url.as_str()),
    ];
    let answer: Json = agent
        .post(server["token_endpoint"].as_str().unwrap())
        .form(&form)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let access = answer["access_token"].as_str().unwrap_or_else(|| panic!("{answer}"));
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "search_entities", "arguments": {"query": "_type.string=person&props=name"}}});
    let response = agent
        .post(&mcp_url)
        .bearer_auth(access)
        .json(&call)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: Json = response.json().await.unwrap();
    assert_eq!(body["result"]["isError"], false, "{body}");
    let found: Json = serde_json::from_str(body["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert!(found["count"].as_i64().is_some(), "the REST list answer: {found}");
}

#[tokio::test]
async fn a_token_request_or_a_sign_in_form_without_its_content_type_is_400_not_415() {
    let app = TestApp::start().await;
    for path in ["/auth/token", "/api/auth/e-mail"] {
        let response = app
            .http
            .post(format!("{}{path}", app.url))
            .body("grant_type=authorization_code")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{path}");
        let body: Json = response.json().await.unwrap();
        assert_eq!(body["error"], "invalid_request", "{path}: {body}");
        assert_eq!(
            body["message"],
            "The body must be a form (Content-Type: application/x-www-form-urlencoded)"
        );
    }
    // a JSON body without its type, where JSON is taken
    let response = app
        .http
        .post(format!("{}/api/auth/passkey/options", app.url))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Json = response.json().await.unwrap();
    assert_eq!(body["error"], "invalid_json", "{body}");
}
