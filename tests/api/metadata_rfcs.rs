//! The two metadata documents an OAuth client reads, held to the rules of
//! their RFCs rather than to a copy of themselves: the authorization
//! server's (RFC 8414) and the MCP endpoint's as a protected resource
//! (RFC 9728), each found where its RFC says to look.

use serde_json::Value as Json;

use crate::support::TestApp;

/// An absolute URL without fragment; `http` only on the test's loopback.
fn assert_endpoint(metadata: &Json, field: &str) -> url::Url {
    let text = metadata[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} is required: {metadata}"));
    let url = url::Url::parse(text).unwrap_or_else(|_| panic!("{field} is an absolute URL: {text}"));
    assert!(url.fragment().is_none(), "{field} has no fragment: {text}");
    assert!(
        url.scheme() == "https" || url.host_str() == Some("127.0.0.1"),
        "{field} is https: {text}"
    );
    url
}

/// Each of `fields` is a non-empty array of strings, if present (`required`: must be).
fn assert_string_arrays(metadata: &Json, fields: &[&str], required: bool) {
    for field in fields {
        match metadata.get(*field) {
            None => assert!(!required, "{field} is required: {metadata}"),
            Some(values) => {
                let values = values
                    .as_array()
                    .unwrap_or_else(|| panic!("{field} is an array: {metadata}"));
                assert!(!values.is_empty(), "{field} is not empty");
                assert!(values.iter().all(Json::is_string), "{field} holds strings: {metadata}");
            }
        }
    }
}

/// RFC 8414: the document at `{issuer}/.well-known/oauth-authorization-server`
/// (the issuer has no path here) names that issuer exactly (§3.3), an issuer
/// with no query or fragment (§2), the endpoints as absolute URLs, and the
/// required and listed values as arrays of strings.
async fn assert_authorization_server(app: &TestApp, issuer: &str) -> Json {
    let response = app
        .http
        .get(format!("{issuer}/.well-known/oauth-authorization-server"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let metadata: Json = response.json().await.unwrap();
    assert_eq!(metadata["issuer"], issuer, "§3.3: the issuer it was fetched for");
    let parsed = assert_endpoint(&metadata, "issuer");
    assert!(parsed.query().is_none(), "§2: the issuer has no query");
    for endpoint in ["authorization_endpoint", "token_endpoint", "registration_endpoint"] {
        assert_endpoint(&metadata, endpoint);
    }
    assert_string_arrays(&metadata, &["response_types_supported"], true);
    assert_string_arrays(
        &metadata,
        &[
            "scopes_supported",
            "grant_types_supported",
            "code_challenge_methods_supported",
            "token_endpoint_auth_methods_supported",
        ],
        false,
    );
    // RFC 9207 §3: a server that sends `iss` says so
    assert_eq!(metadata["authorization_response_iss_parameter_supported"], true);
    metadata
}

#[tokio::test]
async fn the_metadata_documents_hold_what_rfc_8414_and_rfc_9728_require() {
    let app = TestApp::start().await;
    let resource = format!("{}/api/demo/mcp", app.url);
    // RFC 9728 §3.1: the well-known path goes between host and the resource's path
    let response = app
        .http
        .get(format!("{}/.well-known/oauth-protected-resource/api/demo/mcp", app.url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let protected: Json = response.json().await.unwrap();
    assert_eq!(
        protected["resource"],
        resource.as_str(),
        "§3.3: the resource it was fetched for"
    );
    assert_endpoint(&protected, "resource");
    assert_string_arrays(
        &protected,
        &["authorization_servers", "scopes_supported", "bearer_methods_supported"],
        false,
    );
    let servers = protected["authorization_servers"].as_array().unwrap();
    assert!(!servers.is_empty(), "a client finds its way to sign-in");
    for server in servers {
        let metadata = assert_authorization_server(&app, server.as_str().unwrap()).await;
        // the scopes the resource asks are ones its authorization server grants
        let granted = metadata["scopes_supported"].as_array().unwrap();
        for scope in protected["scopes_supported"].as_array().unwrap() {
            assert!(granted.contains(scope), "{scope} is granted: {metadata}");
        }
    }
    assert!(
        protected["bearer_methods_supported"]
            .as_array()
            .unwrap()
            .iter()
            .all(|method| ["header", "body", "query"].contains(&method.as_str().unwrap())),
        "§2: bearer methods are RFC 6750's: {protected}"
    );
}
