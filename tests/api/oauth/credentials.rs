//! A token the OAuth server issued, whatever its scope, cannot add a
//! credential that would outlive it: no `service_api_key` or `service_user`
//! value (REST create and add, the MCP tool) and no passkey. The same writes
//! with a token of the person's own sign-in pass, and the OAuth token still
//! writes ordinary values.

use super::*;
use support::email_login::{access_token, exchange, invite_bob, session_key};
use support::smtp::SmtpSink;

/// An access token the OAuth server issued for Bob.
async fn oauth_token_for_bob(app: &TestApp, sink: &SmtpSink, mails: usize) -> String {
    let (client_id, code) = code_for_bob(app, sink, mails).await;
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", VERIFIER),
        ("client_id", client_id.as_str()),
    ];
    let (status, answer) = token(app, "127.0.0.1", &form).await;
    assert_eq!(status, 200, "{answer}");
    answer["access_token"].as_str().unwrap().to_owned()
}

fn assert_refused(status: u16, body: &Json) {
    assert_eq!((status, body["error"].as_str()), (403, Some("forbidden")), "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("OAuth tokens cannot add credentials"),
        "{body}"
    );
}

/// The live values of `property` on `entity`, as the owner reads them.
async fn values_of(app: &TestApp, owner: &str, entity: &str, property: &str) -> Vec<Json> {
    let (status, body) = app.get(&format!("/api/demo/entity/{entity}"), owner).await;
    assert_eq!(status, 200, "{body}");
    body["entity"][property].as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn an_oauth_token_cannot_add_api_keys_or_logins_by_rest_or_mcp_and_still_writes_ordinary_values() {
    let (app, sink, bob) = app_with_bob().await;
    let owner = app.owner_token().await;
    let oauth = oauth_token_for_bob(&app, &sink, 2).await;
    let signed_in = access_token(&app, &sink, "bob@example.com", "?db=demo", 3).await;
    let book_type = app.create_type(&owner, "book").await;
    let key = json!({"type": "service_api_key", "string": "generate"});
    let login = json!({"type": "service_user", "string": "another login"});
    let on_bob = format!("/api/demo/entity/{bob}");

    for credential in [&key, &login] {
        let (status, body) = app.post(&on_bob, &oauth, credential.clone()).await;
        assert_refused(status, &body);
        let properties = json!({"_id": bob, "properties": [credential]});
        let (answer, is_error) = mcp_tool(&app, &oauth, "add_properties", properties).await;
        assert!(is_error, "{answer}");
        assert_refused(answer["status"].as_u64().unwrap() as u16, &answer);
    }
    let create = json!([{"type": "_type", "reference": book_type}, {"type": "title", "string": "Dune"}, key]);
    let (status, body) = app.post("/api/demo/entity", &oauth, create.clone()).await;
    assert_refused(status, &body);
    assert_eq!(
        values_of(&app, &owner, &bob, "service_api_key").await,
        Vec::<Json>::new()
    );
    assert_eq!(
        values_of(&app, &owner, &bob, "service_user").await.len(),
        1,
        "only the accepted login"
    );
    let (status, books) = app.get("/api/demo/entity?_type.string=book", &owner).await;
    assert_eq!((status, books["count"].as_u64()), (200, Some(0)), "{books}");

    // the OAuth token writes ordinary values
    let title = json!([{"type": "_type", "reference": book_type}, {"type": "title", "string": "Emma"}]);
    let (status, body) = app.post("/api/demo/entity", &oauth, title).await;
    assert_eq!(status, 201, "{body}");
    // the person's own sign-in adds the same credentials
    let (status, body) = app.post("/api/demo/entity", &signed_in, create).await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = app.post(&on_bob, &signed_in, key).await;
    assert_eq!(status, 200, "{body}");
    let properties = json!({"_id": bob, "properties": [login]});
    let (answer, is_error) = mcp_tool(&app, &signed_in, "add_properties", properties).await;
    assert!(!is_error, "{answer}");
    assert_eq!(values_of(&app, &owner, &bob, "service_api_key").await.len(), 1);
    assert_eq!(values_of(&app, &owner, &bob, "service_user").await.len(), 2);
}

#[tokio::test]
async fn an_oauth_token_cannot_register_a_passkey() {
    let webauthn = [("auth.webauthn.origin", "http://localhost:8080".to_owned())];
    let (app, sink) = app_with_mail(&webauthn).await;
    let owner = app.owner_token().await;
    let (bob, invite) = invite_bob(&app, &sink, &owner, 0).await;
    let key = session_key(&app, &sink, "bob@example.com", &[], 1).await;
    assert_eq!(exchange(&app, &key, &format!("?invite={invite}")).await.0, 200);
    let oauth = oauth_token_for_bob(&app, &sink, 2).await;
    let signed_in = access_token(&app, &sink, "bob@example.com", "?db=demo", 3).await;
    let passkey = |path: &'static str, body: Json, bearer: String| {
        let request = client_at("127.0.0.1")
            .post(format!("{}/api/auth/passkey/register/{path}", app.url))
            .bearer_auth(bearer)
            .json(&body);
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            (status, response.json::<Json>().await.unwrap())
        }
    };

    let (status, body) = passkey("options", json!({"device": "Laptop"}), oauth.clone()).await;
    assert_refused(status, &body);
    let (status, begun) = passkey("options", json!({"device": "Laptop"}), signed_in.clone()).await;
    assert_eq!(status, 200, "{begun}");
    // the ceremony is never looked at: the token is refused first
    let answer = json!({"ceremony": begun["ceremony"], "credential": {}, "db": "demo"});
    let (status, body) = passkey("finish", answer.clone(), oauth).await;
    assert_refused(status, &body);
    let (status, body) = passkey("finish", answer, signed_in).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_sign_in")),
        "the person's own token reaches the ceremony: {body}"
    );
    let logins = values_of(&app, &owner, &bob, "service_user").await;
    assert!(logins.iter().all(|login| login["provider"] != "passkey"), "{logins:?}");
}

/// Calls an MCP tool; answers its JSON text, parsed, and `isError`.
async fn mcp_tool(app: &TestApp, token: &str, name: &str, arguments: Json) -> (Json, bool) {
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": name, "arguments": arguments}});
    let (status, body) = app.call("POST", "/api/demo/mcp", Some(token), Some(message)).await;
    assert_eq!(status, 200, "{body}");
    let result = &body["result"];
    let text: Json = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    (text, result["isError"].as_bool().expect("isError"))
}

#[tokio::test]
async fn an_oauth_token_cannot_write_a_webhook_secret_and_a_sign_in_token_can() {
    let (app, sink, _bob) = app_with_bob().await;
    let owner = app.owner_token().await;
    let oauth = oauth_token_for_bob(&app, &sink, 2).await;
    let signed_in = access_token(&app, &sink, "bob@example.com", "?db=demo", 3).await;
    let webhook_type = app.find(&owner, "entity", "webhook").await;
    let webhook = |secret: bool| {
        let mut values = vec![
            json!({"type": "_type", "reference": webhook_type}),
            json!({"type": "url", "string": "https://hooks.example.com/eds"}),
            json!({"type": "events", "string": "create"}),
        ];
        if secret {
            values.push(json!({"type": "secret", "string": "new"}));
        }
        Json::Array(values)
    };

    let (status, body) = app.post("/api/demo/entity", &oauth, webhook(true)).await;
    assert_refused(status, &body);
    let batch = json!({"operations": [{"op": "create", "properties": webhook(true)}]});
    let (status, body) = app.post("/api/demo/batch", &oauth, batch).await;
    assert_refused(status, &body);
    assert_eq!(body["operation"], 0, "{body}");
    let (status, hooks) = app.get("/api/demo/entity?_type.string=webhook", &owner).await;
    assert_eq!((status, hooks["count"].as_u64()), (200, Some(0)), "{hooks}");

    // the OAuth token may create a webhook without a secret; its owner's
    // own sign-in then adds one
    let (status, body) = app.post("/api/demo/entity", &oauth, webhook(false)).await;
    assert_eq!(status, 201, "{body}");
    let hook = body["_id"].as_str().unwrap().to_owned();
    let secret = json!([{"type": "secret", "string": "new"}]);
    let (status, body) = app
        .post(&format!("/api/demo/entity/{hook}"), &oauth, secret.clone())
        .await;
    assert_refused(status, &body);
    let (status, body) = app.post(&format!("/api/demo/entity/{hook}"), &signed_in, secret).await;
    assert_eq!(status, 200, "{body}");
    let generated = body["properties"][0]["string"].as_str().unwrap();
    assert!(generated.starts_with("whsec_"), "{body}");
}
