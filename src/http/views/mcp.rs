//! The MCP endpoint's bodies: JSON-RPC messages (built by `crate::mcp`; the
//! types here describe them) and the protected-resource metadata.

use serde::Serialize;
use serde_json::{Value as Json, json};
use utoipa::ToSchema;

/// RFC 9728 metadata of the MCP endpoint: who issues its tokens.
#[derive(Serialize, ToSchema)]
pub struct ProtectedResource {
    /// The MCP endpoint's URL.
    pub resource: String,
    /// The OAuth authorization server (`http.api_url`).
    pub authorization_servers: Vec<String>,
    pub bearer_methods_supported: Vec<&'static str>,
    /// `read` (reads as the person does) and `write` (writes too).
    pub scopes_supported: [&'static str; 2],
}

pub fn protected_resource_example() -> Json {
    json!({
        "resource": "http://localhost:8080/api/demo/mcp",
        "authorization_servers": ["http://localhost:8080"],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["read", "write"],
    })
}

/// One JSON-RPC 2.0 message: a request (with `id`) or a notification (without).
#[derive(Serialize, ToSchema)]
pub struct RpcMessage {
    /// `2.0`.
    pub jsonrpc: String,
    /// Absent in a notification.
    #[schema(nullable = false)]
    pub id: Option<Json>,
    /// `initialize`, `ping`, `tools/list`, `tools/call`, `resources/list`, `resources/read`, `notifications/...`.
    pub method: String,
    #[schema(nullable = false)]
    pub params: Option<Json>,
}

/// The answer to a request: `result`, or `error` with `code` and `message`.
#[derive(Serialize, ToSchema)]
pub struct RpcAnswer {
    pub jsonrpc: String,
    pub id: Json,
    #[schema(nullable = false)]
    pub result: Option<Json>,
    #[schema(nullable = false)]
    pub error: Option<Json>,
}

pub fn rpc_request_example() -> Json {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
           "params": {"name": "search_entities", "arguments": {"query": "_type.string=book&q=dune&props=title"}}})
}

pub fn rpc_answer_example() -> Json {
    json!({"jsonrpc": "2.0", "id": 2, "result": {
        "content": [{"type": "text", "text": "{\"entities\":[{\"_id\":\"6571f3a4c2b9e8d7f6a5b4c3\",\"title\":[{\"_id\":\"6571f3a4c2b9e8d7f6a5b4c5\",\"string\":\"Dune\"}]}],\"count\":1,\"limit\":100,\"skip\":0}"}],
        "isError": false,
    }})
}
