//! The MCP endpoint (`POST /api/{db}/mcp`): the protocol, the access rules,
//! each tool against the REST route it stands for, and the official MCP
//! Python SDK as a client.

use crate::support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use eds::auth::jwt::{Claims, JwtKeys};
use eds::service::types::{definitions_query, types_query};
use serde_json::{Value as Json, json};
use support::{JWT_SECRET, Storage, TestApp};

const MCP: &str = "/api/demo/mcp";

/// Posts one JSON-RPC request; answers the status and the body.
async fn rpc(app: &TestApp, token: &str, method: &str, params: Json) -> (u16, Json) {
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    app.call("POST", MCP, Some(token), Some(message)).await
}

/// Calls a tool; answers its JSON text, parsed, and `isError` (a result's
/// `structuredContent` is checked to be that JSON).
async fn tool(app: &TestApp, token: &str, name: &str, arguments: Json) -> (Json, bool) {
    let (status, body) = rpc(app, token, "tools/call", json!({"name": name, "arguments": arguments})).await;
    assert_eq!(status, 200, "{body}");
    let result = &body["result"];
    let content = result["content"].as_array().expect("content");
    assert_eq!(content.len(), 1, "{body}");
    assert_eq!(content[0]["type"], "text");
    let text: Json = serde_json::from_str(content[0]["text"].as_str().unwrap()).unwrap();
    let is_error = result["isError"].as_bool().expect("isError");
    match is_error {
        false => assert_eq!(result["structuredContent"], text, "{name}"),
        true => assert!(result.get("structuredContent").is_none(), "{body}"),
    }
    (text, is_error)
}

/// A tool's answer next to the REST route's for the same caller: a 2xx as
/// the result, anything else as `isError` with the same error body.
async fn assert_same(app: &TestApp, token: &str, name: &str, arguments: Json, rest: (u16, Json)) -> Json {
    let (answer, is_error) = tool(app, token, name, arguments).await;
    let (status, body) = rest;
    assert_eq!(
        is_error,
        !(200..300).contains(&status),
        "{name}: {answer} vs {status} {body}"
    );
    assert_eq!(answer, body, "{name}");
    answer
}

/// A database with a `book` type (searchable `title`, file `photo`) and one book.
struct Library {
    book_type: String,
    book: String,
    title_value: String,
    photo_value: String,
}

async fn library(app: &TestApp, owner: &str) -> Library {
    let book_type = app.create_type(owner, "book").await;
    app.define(
        owner,
        &book_type,
        "title",
        "string",
        json!([{"type": "search", "boolean": true}]),
    )
    .await;
    app.define(owner, &book_type, "photo", "file", json!([])).await;
    let (status, created) = app
        .post(
            "/api/demo/entity",
            owner,
            json!([
                {"type": "_type", "reference": book_type},
                {"type": "title", "string": "Dune"},
                {"type": "photo", "filename": "cover.jpg", "filesize": 10, "filetype": "image/jpeg"},
            ]),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    let value = |prop: &str| {
        created["properties"]
            .as_array()
            .unwrap()
            .iter()
            .find(|value| value["type"] == prop)
            .unwrap()["_id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    Library {
        book: created["_id"].as_str().unwrap().to_owned(),
        title_value: value("title"),
        photo_value: value("photo"),
        book_type,
    }
}

/// `json` without its `_id` fields, at any depth (two writes' answers compare equal).
fn without_ids(json: &Json) -> Json {
    match json {
        Json::Object(object) => object
            .iter()
            .filter(|(key, _)| *key != "_id")
            .map(|(key, value)| (key.clone(), without_ids(value)))
            .collect(),
        Json::Array(items) => items.iter().map(without_ids).collect(),
        other => other.clone(),
    }
}

#[tokio::test]
async fn initialize_lists_the_tools_and_the_schema_resource() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    for (asked, answered) in [
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2025-11-25", "2025-11-25"),
        ("2026-07-28", "2026-07-28"),
        ("1999-01-01", "2026-07-28"),
    ] {
        let params = json!({"protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
        let (status, body) = rpc(&app, &owner, "initialize", params).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["jsonrpc"], "2.0");
        assert_eq!(body["id"], 1);
        let result = &body["result"];
        assert_eq!(result["protocolVersion"], answered);
        assert_eq!(result["capabilities"], json!({"tools": {}, "resources": {}}));
        assert_eq!(result["serverInfo"]["name"], "eds");
        assert_eq!(result["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
        let instructions = result["instructions"].as_str().unwrap();
        assert!(instructions.contains("prop.type.op=value"), "{instructions}");
    }
    let response = app
        .http
        .post(format!("{}{MCP}", app.url))
        .bearer_auth(&owner)
        .json(&json!({"jsonrpc": "2.0", "id": "p", "method": "ping"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    assert!(response.headers().get("mcp-session-id").is_none());
    assert_eq!(
        response.json::<Json>().await.unwrap(),
        json!({"jsonrpc": "2.0", "id": "p", "result": {}})
    );

    let (_, body) = rpc(&app, &owner, "tools/list", json!({})).await;
    let tools = body["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|tool| tool["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "get_entity_type",
            "search_entities",
            "get_entity",
            "get_file_url",
            "get_entity_history",
            "create_entity",
            "add_properties",
            "delete_property",
            "restore_entity",
            "batch"
        ]
    );
    for tool in tools {
        assert!(tool["description"].as_str().is_some_and(|d| d.len() > 20), "{tool}");
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
    }

    let (_, body) = rpc(&app, &owner, "resources/list", json!({})).await;
    let resources = body["result"]["resources"].as_array().unwrap();
    assert_eq!(resources.len(), 1, "{body}");
    assert_eq!(resources[0]["uri"], "eds://demo/schema");
    let (_, read) = rpc(&app, &owner, "resources/read", json!({"uri": "eds://demo/schema"})).await;
    let contents = &read["result"]["contents"][0];
    assert_eq!(contents["mimeType"], "application/json");
    let schema: Json = serde_json::from_str(contents["text"].as_str().unwrap()).unwrap();
    let (types, _) = tool(&app, &owner, "get_entity_type", json!({})).await;
    assert_eq!(schema, types);
    let (_, missing) = rpc(&app, &owner, "resources/read", json!({"uri": "eds://demo/other"})).await;
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
    let (_, templates) = rpc(&app, &owner, "resources/templates/list", json!({})).await;
    let templates = templates["result"]["resourceTemplates"].as_array().unwrap();
    assert_eq!(templates.len(), 1);
    assert_eq!(templates[0]["uriTemplate"], "eds://demo/entity/{id}");
    assert_eq!(templates[0]["mimeType"], "application/json");
}

#[tokio::test]
async fn every_read_tool_answers_what_its_rest_route_answers() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let lib = library(&app, &owner).await;
    let (status, _) = app
        .post(
            &format!("/api/demo/entity/{}", lib.book),
            &owner,
            json!([{"type": "title", "_id": lib.title_value, "string": "Dune Messiah"}]),
        )
        .await;
    assert_eq!(status, 200);

    // get_entity_type: the type as the list of types shows it, with its definitions.
    let (types, is_error) = tool(&app, &owner, "get_entity_type", json!({"name": "book"})).await;
    assert!(!is_error, "{types}");
    let (_, listed) = app
        .get(&format!("/api/demo/entity?{}", types_query(Some("book"))), &owner)
        .await;
    let (_, definitions) = app
        .get(
            &format!("/api/demo/entity?{}", definitions_query(&[&lib.book_type])),
            &owner,
        )
        .await;
    assert_eq!(types["count"], 1);
    assert_eq!(types["types"][0]["entity"], listed["entities"][0]);
    assert_eq!(types["types"][0]["properties"], definitions["entities"]);
    let names: Vec<&str> = definitions["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|definition| definition["name"][0]["string"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["photo", "title"]);
    let (all, _) = tool(&app, &owner, "get_entity_type", json!({})).await;
    let all_names: Vec<&str> = all["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|described| described["entity"]["name"][0]["string"].as_str().unwrap())
        .collect();
    assert!(
        all_names.contains(&"book") && all_names.contains(&"person"),
        "{all_names:?}"
    );
    let (missing, is_error) = tool(&app, &owner, "get_entity_type", json!({"name": "nothing"})).await;
    assert!(is_error);
    assert_eq!(missing["status"], 404);

    for query in [
        "_type.string=book&q=dune",
        "_type.string=book&props=title&sort=-title.string",
        "_type.string=entity&group=_type.reference",
        "title.string.regex=/(/",
        "title.reference=nope",
    ] {
        let rest = app.get(&format!("/api/demo/entity?{query}"), &owner).await;
        assert_same(&app, &owner, "search_entities", json!({"query": query}), rest).await;
    }
    // A page longer than a chunk streams from REST and is read whole by the tool.
    let rest = app.get("/api/demo/entity?limit=600", &owner).await;
    assert_same(&app, &owner, "search_entities", json!({"query": "limit=600"}), rest).await;

    for id in [lib.book.as_str(), "000000000000000000000000", "nope"] {
        let rest = app.get(&format!("/api/demo/entity/{id}"), &owner).await;
        assert_same(&app, &owner, "get_entity", json!({"_id": id}), rest).await;
    }

    for (limit, skip) in [(json!(1), json!(1)), (json!("2"), json!(0))] {
        let path = format!(
            "/api/demo/entity/{}/history?limit={}&skip={}",
            lib.book,
            limit.as_i64().unwrap_or(2),
            skip
        );
        let rest = app.get(&path, &owner).await;
        let arguments = json!({"_id": lib.book, "limit": limit, "skip": skip});
        assert_same(&app, &owner, "get_entity_history", arguments, rest).await;
    }

    // The signed URL holds its expiry second: compare the rest, and the URL up to it.
    let (status, mut rest) = app
        .get(&format!("/api/demo/property/{}", lib.photo_value), &owner)
        .await;
    assert_eq!(status, 200, "{rest}");
    let (mut answer, is_error) = tool(&app, &owner, "get_file_url", json!({"_id": lib.photo_value})).await;
    assert!(!is_error, "{answer}");
    let path = |url: Json| url.as_str().unwrap().split('?').next().unwrap().to_owned();
    assert_eq!(path(answer["url"].take()), path(rest["url"].take()));
    assert_eq!(answer, rest);
    let rest = app.get("/api/demo/property/000000000000000000000000", &owner).await;
    assert_same(
        &app,
        &owner,
        "get_file_url",
        json!({"_id": "000000000000000000000000"}),
        rest,
    )
    .await;

    let (bad, is_error) = tool(&app, &owner, "get_entity", json!({})).await;
    assert!(is_error);
    assert_eq!(bad["status"], 400, "{bad}");
}

#[tokio::test]
async fn write_tools_answer_what_rest_writes_answer() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let lib = library(&app, &owner).await;
    let values = json!([{"type": "_type", "reference": lib.book_type}, {"type": "title", "string": "Emma"}]);

    let (created, is_error) = tool(&app, &owner, "create_entity", json!({"properties": values})).await;
    assert!(!is_error, "{created}");
    let (status, rest_created) = app.post("/api/demo/entity", &owner, values.clone()).await;
    assert_eq!(status, 201);
    assert_eq!(without_ids(&created), without_ids(&rest_created));
    let mcp_book = created["_id"].as_str().unwrap();
    let rest_book = rest_created["_id"].as_str().unwrap();
    let rest = app.get(&format!("/api/demo/entity/{mcp_book}"), &owner).await;
    assert_same(&app, &owner, "get_entity", json!({"_id": mcp_book}), rest).await;

    let more = json!([{"type": "title", "string": "Persuasion"}]);
    let (added, is_error) = tool(
        &app,
        &owner,
        "add_properties",
        json!({"_id": mcp_book, "properties": more}),
    )
    .await;
    assert!(!is_error, "{added}");
    let (status, rest_added) = app
        .post(&format!("/api/demo/entity/{rest_book}"), &owner, more.clone())
        .await;
    assert_eq!(status, 200);
    assert_eq!(without_ids(&added), without_ids(&rest_added));
    let added_value = added["properties"][0]["_id"].as_str().unwrap();
    let (_, entity) = app.get(&format!("/api/demo/entity/{mcp_book}"), &owner).await;
    assert!(entity.to_string().contains("Persuasion"), "{entity}");

    let rest_value = rest_added["properties"][0]["_id"].as_str().unwrap();
    let rest = app.delete(&format!("/api/demo/property/{rest_value}"), &owner).await;
    assert_same(&app, &owner, "delete_property", json!({"_id": added_value}), rest).await;
    let (_, entity) = app.get(&format!("/api/demo/entity/{mcp_book}"), &owner).await;
    assert!(!entity.to_string().contains("Persuasion"), "{entity}");
    // Deleting it again: both answer the same 404.
    let rest = app.delete(&format!("/api/demo/property/{rest_value}"), &owner).await;
    assert_same(&app, &owner, "delete_property", json!({"_id": added_value}), rest).await;

    // The same validation: no `_type`, a bad language, an `_id` of another property.
    let bad_writes = [
        json!([{"type": "title", "string": "Untyped"}]),
        json!([{"type": "_type", "reference": lib.book_type}, {"type": "title", "string": "x", "language": "eng"}]),
    ];
    for bad in bad_writes {
        let rest = app.post("/api/demo/entity", &owner, bad.clone()).await;
        assert!(rest.0 >= 400, "{}", rest.1);
        assert_same(&app, &owner, "create_entity", json!({"properties": bad}), rest).await;
    }
    let overwrite = json!([{"type": "photo", "_id": lib.title_value, "string": "x"}]);
    let rest = app
        .post(&format!("/api/demo/entity/{}", lib.book), &owner, overwrite.clone())
        .await;
    assert_eq!(rest.0, 400, "{}", rest.1);
    let arguments = json!({"_id": lib.book, "properties": overwrite});
    assert_same(&app, &owner, "add_properties", arguments, rest).await;
}

#[tokio::test]
async fn a_caller_with_fewer_rights_gets_what_rest_gives_them() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let lib = library(&app, &owner).await;
    let (reader_id, reader_key) = app.add_person(&owner, "Reader").await;
    let reader = app.token_for(&reader_key).await;

    // Not shared with the reader: the same 404s as REST.
    let book_path = format!("/api/demo/entity/{}", lib.book);
    let rest = app.get(&book_path, &reader).await;
    assert_eq!(rest.0, 404);
    assert_same(&app, &reader, "get_entity", json!({"_id": lib.book}), rest).await;
    let rest = app
        .get(&format!("/api/demo/property/{}", lib.photo_value), &reader)
        .await;
    assert_same(&app, &reader, "get_file_url", json!({"_id": lib.photo_value}), rest).await;
    let rest = app.get("/api/demo/entity?_type.string=book", &reader).await;
    let listed = assert_same(
        &app,
        &reader,
        "search_entities",
        json!({"query": "_type.string=book"}),
        rest,
    )
    .await;
    assert_eq!(listed["count"], 0);
    let more = json!([{"type": "title", "string": "Mine"}]);
    let adding = json!({"_id": lib.book, "properties": more});
    let rest = app.post(&book_path, &reader, more.clone()).await;
    assert_eq!(rest.0, 404);
    assert_same(&app, &reader, "add_properties", adding.clone(), rest).await;

    // A viewer: reads and history, but no writes (403, as REST).
    let (status, _) = app
        .post(&book_path, &owner, json!([{"type": "_viewer", "reference": reader_id}]))
        .await;
    assert_eq!(status, 200);
    let rest = app.get(&book_path, &reader).await;
    assert_eq!(rest.0, 200);
    assert_same(&app, &reader, "get_entity", json!({"_id": lib.book}), rest).await;
    let rest = app.get(&format!("{book_path}/history"), &reader).await;
    assert_eq!(rest.0, 200);
    assert_same(&app, &reader, "get_entity_history", json!({"_id": lib.book}), rest).await;
    let rest = app.post(&book_path, &reader, more.clone()).await;
    assert_eq!(rest.0, 403, "{}", rest.1);
    assert_same(&app, &reader, "add_properties", adding.clone(), rest).await;
    let rest = app
        .delete(&format!("/api/demo/property/{}", lib.title_value), &reader)
        .await;
    assert_eq!(rest.0, 403, "{}", rest.1);
    assert_same(&app, &reader, "delete_property", json!({"_id": lib.title_value}), rest).await;
}

fn keys() -> JwtKeys {
    JwtKeys::new(
        JWT_SECRET.as_bytes(),
        chrono::NaiveDate::from_ymd_opt(2026, 11, 6).unwrap(),
    )
}

#[tokio::test]
async fn without_an_access_token_the_endpoint_challenges_with_its_metadata() {
    let api_url = "http://auth.example.test";
    let app = TestApp::start_with(support::Storage::Local, &[("http.api_url", api_url.to_owned())]).await;
    let challenge = format!("Bearer resource_metadata=\"{api_url}/.well-known/oauth-protected-resource/api/demo/mcp\"");
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let accounts = BTreeMap::from([("demo".to_owned(), app.person.clone())]);
    let session = {
        let mut claims = Claims::access(app.person.clone(), accounts.clone(), None, chrono::Utc::now());
        claims.token_use = Some("session".into());
        keys().sign(&claims).unwrap()
    };
    for token in [None, Some("not-a-jwt"), Some(session.as_str())] {
        let mut request = app.http.post(format!("{}{MCP}", app.url)).json(&ping);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 401, "{token:?}");
        let expected = match token {
            None => challenge.clone(),
            Some(_) => format!("{challenge}, error=\"invalid_token\""),
        };
        assert_eq!(response.headers()["www-authenticate"], expected.as_str());
        let body: Json = response.json().await.unwrap();
        assert_eq!(body["status"], 401, "{body}");
        assert!(body["error"].is_string() && body["message"].is_string(), "{body}");
    }
    // A token for another database only: refused as REST refuses it.
    let elsewhere = BTreeMap::from([("other".to_owned(), app.person.clone())]);
    let other = keys()
        .sign(&Claims::access(app.person.clone(), elsewhere, None, chrono::Utc::now()))
        .unwrap();
    let (status, body) = app.call("POST", MCP, Some(&other), Some(ping.clone())).await;
    assert!(status == 401 || status == 403, "{body}");
    assert_eq!((status, body), app.get("/api/demo", &other).await);
    // No event stream: GET is 405 for an admitted caller.
    let owner = app.owner_token().await;
    let response = app
        .http
        .get(format!("{}{MCP}", app.url))
        .bearer_auth(&owner)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 405);
    assert_eq!(response.headers()["allow"], "POST");

    let (status, metadata) = app
        .call("GET", "/.well-known/oauth-protected-resource/api/demo/mcp", None, None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        metadata,
        json!({
            "resource": format!("{}/api/demo/mcp", app.url),
            "authorization_servers": [api_url],
            "bearer_methods_supported": ["header"],
            "scopes_supported": ["read", "write"],
        })
    );
    let (status, _) = app
        .call(
            "GET",
            "/.well-known/oauth-protected-resource/api/nowhere/mcp",
            None,
            None,
        )
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn notifications_are_accepted_and_bad_messages_get_json_rpc_errors() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let notification = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = app
        .http
        .post(format!("{}{MCP}", app.url))
        .bearer_auth(&owner)
        .json(&notification)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    assert!(response.text().await.unwrap().is_empty());

    let (status, body) = rpc(&app, &owner, "prompts/get", json!({})).await;
    assert_eq!((status, &body["error"]["code"]), (200, &json!(-32601)), "{body}");
    assert_eq!(body["id"], 1);
    let (status, body) = rpc(&app, &owner, "tools/call", json!({"name": "drop_database"})).await;
    assert_eq!((status, &body["error"]["code"]), (200, &json!(-32602)), "{body}");

    let raw = |body: &'static str| {
        app.http
            .post(format!("{}{MCP}", app.url))
            .bearer_auth(&owner)
            .header("Content-Type", "application/json")
            .body(body)
            .send()
    };
    let response = raw("{not json").await.unwrap();
    assert_eq!(response.status(), 400);
    let body: Json = response.json().await.unwrap();
    assert_eq!(
        (&body["error"]["code"], &body["id"]),
        (&json!(-32700), &Json::Null),
        "{body}"
    );
    let response = raw(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#).await.unwrap();
    assert_eq!(response.status(), 400);
    assert_eq!(response.json::<Json>().await.unwrap()["error"]["code"], -32600);
}

#[tokio::test]
async fn the_official_python_sdk_lists_and_calls_every_tool() {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(".data/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/fetch-python-tools.sh (it installs the MCP SDK)",
        python.display()
    );
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let lib = library(&app, &owner).await;
    let more = json!([{"type": "title", "string": "Dune Messiah"}]);
    let calls = json!([
        ["get_entity_type", {"name": "book"}],
        ["search_entities", {"query": "_type.string=book&q=dune&props=title"}],
        ["get_entity", {"_id": lib.book}],
        ["get_file_url", {"_id": lib.photo_value}],
        ["get_entity_history", {"_id": lib.book, "limit": 2}],
        ["create_entity", {"properties": [{"type": "_type", "reference": lib.book_type}, {"type": "title", "string": "Emma"}]}],
        ["add_properties", {"_id": lib.book, "properties": more}],
        ["delete_property", {"_id": lib.title_value}],
        ["batch", {"operations": [{"op": "create", "ref": "$b", "properties": [{"type": "_type", "reference": lib.book_type}]}]}],
        ["get_entity", {"_id": "000000000000000000000000"}],
    ]);
    let output = Command::new(python)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/sdk_client.py"))
        .arg(format!("{}{MCP}", app.url))
        .arg(&owner)
        .arg(calls.to_string())
        .output()
        .expect("run the MCP SDK client");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "sdk_client.py failed: {stderr}");
    let summary: Json = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| panic!("{stderr}"));
    assert_eq!(summary["server"], "eds");
    assert_eq!(summary["protocolVersion"], "2025-11-25");
    assert_eq!(summary["instructions"], true);
    assert_eq!(summary["tools"].as_array().unwrap().len(), 10, "{summary}");
    assert_eq!(summary["resources"], json!(["eds://demo/schema"]));
    assert_eq!(summary["templates"], json!(["eds://demo/entity/{id}"]));
    assert!(summary["schema"]["count"].as_u64().unwrap() >= 5, "{summary}");

    let results = summary["calls"].as_array().unwrap();
    assert_eq!(results.len(), 10);
    for result in &results[..9] {
        assert_eq!(result["isError"], false, "{result}");
        assert_eq!(result["structured"], result["answer"], "{result}");
    }
    let answer = |at: usize| &results[at]["answer"];
    assert_eq!(answer(0)["types"][0]["entity"]["_id"], lib.book_type.as_str());
    assert_eq!(answer(1)["count"], 1);
    let (_, now) = app.get(&format!("/api/demo/entity/{}", lib.book), &owner).await;
    assert_eq!(answer(2)["entity"]["_id"], now["entity"]["_id"]);
    assert!(answer(3)["url"].as_str().is_some(), "{}", answer(3));
    assert_eq!(answer(4)["changes"].as_array().unwrap().len(), 2);
    let created = answer(5)["_id"].as_str().unwrap();
    assert_eq!(app.get(&format!("/api/demo/entity/{created}"), &owner).await.0, 200);
    assert_eq!(answer(6)["properties"][0]["string"], "Dune Messiah");
    assert_eq!(answer(7), &json!({"deleted": true}));
    assert!(!now.to_string().contains(&lib.title_value), "{now}");
    assert_eq!(answer(8)["results"][0]["_id"], answer(8)["refs"]["$b"]);
    assert_eq!(results[9]["isError"], true);
    assert_eq!(
        results[9]["structured"],
        Json::Null,
        "an error carries no structuredContent"
    );
    assert_eq!(answer(9)["status"], 404);
}

#[tokio::test]
async fn an_origin_neither_the_services_own_nor_allowed_is_refused() {
    let app = TestApp::start_with(
        Storage::Local,
        &[("mcp.allowed_origins", "https://agent.example.com".to_owned())],
    )
    .await;
    let token = app.owner_token().await;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let send = |origin: Option<String>| {
        let mut request = reqwest::Client::new()
            .post(format!("{}{MCP}", app.url))
            .bearer_auth(&token)
            .json(&ping);
        if let Some(origin) = origin {
            request = request.header("Origin", origin);
        }
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            (status, response.json::<Json>().await.unwrap_or(Json::Null))
        }
    };
    // no Origin (a client that is not a browser), the service's own, an allowed one
    for origin in [
        None,
        Some(app.url.clone()),
        Some("https://agent.example.com".to_owned()),
    ] {
        let (status, answer) = send(origin.clone()).await;
        assert_eq!(status, 200, "{origin:?}: {answer}");
        assert_eq!(answer["result"], json!({}), "{answer}");
    }
    // a page elsewhere, or a rebound name for this server, before any token check
    for origin in ["https://evil.example", "http://attacker.localtest.me:8080", "null"] {
        let (status, refusal) = send(Some(origin.to_owned())).await;
        assert_eq!(status, 403, "{origin}: {refusal}");
        assert_eq!(refusal["status"], 403);
        assert!(refusal["message"].as_str().unwrap().contains("Origin"), "{refusal}");
    }
    let (status, _) = app.call("GET", MCP, None, None).await;
    assert_eq!(status, 401, "no Origin, no token: challenged as before");
}

#[tokio::test]
async fn every_tool_lists_a_title_behaviour_hints_an_output_schema_and_a_2020_12_input_schema() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (_, body) = rpc(&app, &owner, "tools/list", json!({})).await;
    let hints: Vec<(&str, bool, bool, bool)> = body["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| {
            let annotations = &tool["annotations"];
            assert!(tool["title"].as_str().is_some_and(|title| !title.is_empty()), "{tool}");
            assert_eq!(annotations["title"], tool["title"], "{tool}");
            assert_eq!(annotations["openWorldHint"], false, "{tool}");
            assert_eq!(
                tool["inputSchema"]["$schema"],
                "https://json-schema.org/draft/2020-12/schema"
            );
            assert_eq!(tool["outputSchema"]["type"], "object", "{tool}");
            let hint = |name: &str| annotations[name].as_bool().unwrap();
            (
                tool["name"].as_str().unwrap(),
                hint("readOnlyHint"),
                hint("destructiveHint"),
                hint("idempotentHint"),
            )
        })
        .collect();
    assert_eq!(
        hints,
        [
            ("get_entity_type", true, false, true),
            ("search_entities", true, false, true),
            ("get_entity", true, false, true),
            ("get_file_url", true, false, true),
            ("get_entity_history", true, false, true),
            ("create_entity", false, false, false),
            ("add_properties", false, true, false),
            ("delete_property", false, true, true),
            ("restore_entity", false, true, false),
            ("batch", false, true, false),
        ]
    );
}

#[tokio::test]
async fn tool_results_carry_the_answer_as_structured_content_and_errors_do_not() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let lib = library(&app, &owner).await;
    // `tool` checks `structuredContent` against the text on every call.
    let (entity, is_error) = tool(&app, &owner, "get_entity", json!({"_id": lib.book})).await;
    assert!(!is_error);
    assert_eq!(entity["entity"]["_id"], lib.book.as_str());
    let (listed, _) = tool(&app, &owner, "search_entities", json!({"query": "_type.string=book"})).await;
    assert_eq!(listed["count"], 1);
    let (missing, is_error) = tool(&app, &owner, "get_entity", json!({"_id": "000000000000000000000000"})).await;
    assert!(is_error);
    assert_eq!(missing["status"], 404);
}

#[tokio::test]
async fn a_write_tool_repeated_with_its_idempotency_key_answers_the_first_result_and_writes_once() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let lib = library(&app, &owner).await;
    let values = json!([{"type": "_type", "reference": lib.book_type}, {"type": "title", "string": "Emma"}]);
    let arguments = json!({"properties": values, "idempotency_key": "create-emma"});
    let (first, is_error) = tool(&app, &owner, "create_entity", arguments.clone()).await;
    assert!(!is_error, "{first}");
    let (again, is_error) = tool(&app, &owner, "create_entity", arguments).await;
    assert!(!is_error, "{again}");
    assert_eq!(again, first);
    let (_, listed) = app
        .get("/api/demo/entity?_type.string=book&title.string=Emma", &owner)
        .await;
    assert_eq!(listed["count"], 1, "{listed}");

    let deleting = json!({"_id": lib.title_value, "idempotency_key": "delete-title"});
    let (deleted, _) = tool(&app, &owner, "delete_property", deleting.clone()).await;
    assert_eq!(deleted, json!({"deleted": true}));
    // Without the key a second delete is a 404; with it, the first answer.
    let (repeated, is_error) = tool(&app, &owner, "delete_property", deleting).await;
    assert!(!is_error, "{repeated}");
    assert_eq!(repeated, deleted);
}

#[tokio::test]
async fn the_same_idempotency_key_with_other_arguments_gets_the_rest_error() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let lib = library(&app, &owner).await;
    let book = format!("/api/demo/entity/{}", lib.book);
    let adding = |title: &str| json!({"_id": lib.book, "properties": [{"type": "title", "string": title}], "idempotency_key": "k"});
    let (_, is_error) = tool(&app, &owner, "add_properties", adding("One")).await;
    assert!(!is_error);
    let (refused, is_error) = tool(&app, &owner, "add_properties", adding("Two")).await;
    assert!(is_error);
    // REST answers a reused key the same way.
    let rest = app
        .http
        .post(format!("{}{book}", app.url))
        .bearer_auth(&owner)
        .header("Idempotency-Key", "rest-key")
        .json(&json!([{"type": "title", "string": "Three"}]))
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status(), 200);
    let reused = app
        .http
        .post(format!("{}{book}", app.url))
        .bearer_auth(&owner)
        .header("Idempotency-Key", "rest-key")
        .json(&json!([{"type": "title", "string": "Four"}]))
        .send()
        .await
        .unwrap();
    let status = reused.status().as_u16();
    let rest_refusal: Json = reused.json().await.unwrap();
    assert_eq!(refused["status"], status, "{refused}");
    assert_eq!(refused["error"], rest_refusal["error"]);
    assert_eq!(refused["error"], "idempotency_key_reused", "{refused}");

    let (bad, is_error) = tool(
        &app,
        &owner,
        "delete_property",
        json!({"_id": lib.title_value, "idempotency_key": "has space"}),
    )
    .await;
    assert!(is_error);
    assert_eq!(bad["status"], 400, "{bad}");
    // Dune, One (by the tool) and Three (by REST); neither refused write.
    let (_, entity) = app.get(&book, &owner).await;
    assert_eq!(entity["entity"]["title"].as_array().unwrap().len(), 3, "{entity}");
}

#[tokio::test]
async fn an_entity_resource_reads_as_get_entity_and_is_not_found_for_a_caller_who_cannot_read_it() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let lib = library(&app, &owner).await;
    let uri = format!("eds://demo/entity/{}", lib.book);
    let (_, read) = rpc(&app, &owner, "resources/read", json!({"uri": uri})).await;
    let contents = &read["result"]["contents"][0];
    assert_eq!(
        (&contents["uri"], &contents["mimeType"]),
        (&json!(uri), &json!("application/json"))
    );
    let entity: Json = serde_json::from_str(contents["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        entity,
        app.get(&format!("/api/demo/entity/{}", lib.book), &owner).await.1
    );

    let (_, reader_key) = app.add_person(&owner, "Reader").await;
    let reader = app.token_for(&reader_key).await;
    for (token, uri) in [
        (&reader, uri.clone()),
        (&owner, "eds://demo/entity/000000000000000000000000".to_owned()),
        (&owner, "eds://demo/entity/nope".to_owned()),
        (&owner, format!("eds://other/entity/{}", lib.book)),
    ] {
        let (status, missing) = rpc(&app, token, "resources/read", json!({"uri": uri})).await;
        assert_eq!(status, 200);
        assert_eq!(missing["error"]["code"], -32002, "{uri}: {missing}");
        assert!(missing.get("result").is_none());
    }
}

#[tokio::test]
async fn server_discover_lists_the_protocol_versions_served() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let meta = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
    let (status, body) = rpc(&app, &owner, "server/discover", meta).await;
    assert_eq!(status, 200, "{body}");
    let result = &body["result"];
    let versions = result["supportedVersions"].as_array().unwrap();
    for version in ["2026-07-28", "2025-11-25", "2025-06-18"] {
        assert!(versions.contains(&json!(version)), "{version}");
    }
    assert_eq!(result["serverInfo"]["name"], "eds");
    assert_eq!(result["capabilities"], json!({"tools": {}, "resources": {}}));
    assert_eq!(result["resultType"], "complete");
}

#[tokio::test]
async fn an_unsupported_or_mismatched_protocol_version_is_refused_with_400() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let send = |header: Option<&'static str>, meta: Option<&'static str>| {
        let mut params = json!({});
        if let Some(meta) = meta {
            params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": meta});
        }
        let mut request = app
            .http
            .post(format!("{}{MCP}", app.url))
            .bearer_auth(&owner)
            .json(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": params}));
        if let Some(header) = header {
            request = request.header("MCP-Protocol-Version", header);
        }
        async move {
            let response = request.send().await.unwrap();
            (response.status().as_u16(), response.json::<Json>().await.unwrap())
        }
    };
    for (header, meta) in [(Some("2025-06-18"), None), (Some("2025-11-25"), None), (None, None)] {
        let (status, body) = send(header, meta).await;
        assert_eq!(
            (status, &body["result"]),
            (200, &json!({})),
            "{header:?} {meta:?}: {body}"
        );
    }
    // A 2026-07-28 request (its version in `_meta`) gets a result that says it is final.
    for header in [Some("2026-07-28"), None] {
        let (status, body) = send(header, Some("2026-07-28")).await;
        let result = json!({"resultType": "complete"});
        assert_eq!((status, &body["result"]), (200, &result), "{header:?}: {body}");
    }
    for (header, meta) in [
        (Some("2099-01-01"), None),
        (Some("nonsense"), None),
        (None, Some("2099-01-01")),
    ] {
        let (status, body) = send(header, meta).await;
        assert_eq!(status, 400, "{header:?} {meta:?}: {body}");
        assert_eq!(body["error"]["code"], -32022, "{body}");
        let supported = body["error"]["data"]["supported"].as_array().unwrap();
        assert!(supported.contains(&json!("2026-07-28")), "{body}");
    }
    let (status, body) = send(Some("2025-11-25"), Some("2026-07-28")).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        (&body["error"]["code"], &body["id"]),
        (&json!(-32600), &json!(3)),
        "{body}"
    );
}
