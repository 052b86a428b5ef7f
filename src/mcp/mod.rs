//! The Model Context Protocol as eds speaks it (streamable HTTP, JSON answers,
//! stateless): JSON-RPC 2.0 messages, version negotiation, the `initialize`
//! and `server/discover` answers with the server's instructions, the tool
//! catalogue (`catalogue`, `tools`) and the resources (`resources`). The
//! HTTP endpoint (`src/http/mcp/`) carries the messages; `calls` runs the
//! tools through the operations of `crate::service`.

pub mod calls;
pub mod catalogue;
pub mod resources;
pub mod tools;

use serde_json::{Value as Json, json};

/// Protocol versions served, newest first; a client asking for another gets the newest.
pub const PROTOCOL_VERSIONS: [&str; 5] = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Where a 2026-07-28 request names its protocol version, in `params._meta`.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// What a model reads once, at `initialize`: the query language and value objects.
pub const INSTRUCTIONS: &str = include_str!("instructions.md");

/// The version to answer a client asking for `requested`.
pub fn negotiate(requested: Option<&str>) -> &'static str {
    PROTOCOL_VERSIONS
        .into_iter()
        .find(|version| Some(*version) == requested)
        .unwrap_or(PROTOCOL_VERSIONS[0])
}

/// The `initialize` result for a client asking for protocol `requested`.
pub fn initialize_result(requested: Option<&str>, server_version: &str) -> Json {
    json!({
        "protocolVersion": negotiate(requested),
        "capabilities": capabilities(),
        "serverInfo": server_info(server_version),
        "instructions": INSTRUCTIONS,
    })
}

/// The `server/discover` result (2026-07-28, where it replaces `initialize`).
pub fn discover_result(server_version: &str) -> Json {
    json!({
        "supportedVersions": PROTOCOL_VERSIONS,
        "capabilities": capabilities(),
        "serverInfo": server_info(server_version),
        "instructions": INSTRUCTIONS,
    })
}

fn capabilities() -> Json {
    json!({"tools": {}, "resources": {}})
}

fn server_info(server_version: &str) -> Json {
    json!({"name": "eds", "title": "Entity Data Service", "version": server_version})
}

/// The refusal of a request in protocol version `requested`, which is not
/// served: the versions that are, so the client may retry in one of them.
pub fn unsupported_version(requested: &str) -> RpcError {
    RpcError {
        code: RpcError::UNSUPPORTED_PROTOCOL_VERSION,
        message: format!("Unsupported protocol version: {requested}"),
        data: Some(json!({"requested": requested, "supported": PROTOCOL_VERSIONS})),
    }
}

/// A JSON-RPC error.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Json>,
}

impl RpcError {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// MCP's code for an unknown resource URI.
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// A protocol version the server does not serve (2026-07-28).
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The error answer to the request `id` (`null` when it is not known).
    pub fn answer(&self, id: Json) -> Json {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        json!({"jsonrpc": "2.0", "id": id, "error": error})
    }
}

/// The success answer to the request `id`.
pub fn success(id: Json, result: Json) -> Json {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// One message a client posts.
#[derive(Debug, PartialEq)]
pub enum Message {
    /// Answered with a result or an error.
    Request { id: Json, method: String, params: Json },
    /// A notification, or a client's answer to a server request: accepted, not answered.
    Accepted,
}

/// Reads the body of a POST: one JSON-RPC message (batches are refused).
pub fn parse(body: &[u8]) -> Result<Message, RpcError> {
    let message: Json =
        serde_json::from_slice(body).map_err(|_| RpcError::new(RpcError::PARSE_ERROR, "Parse error"))?;
    let invalid = |message: &str| RpcError::new(RpcError::INVALID_REQUEST, message);
    if message.is_array() {
        return Err(invalid("Batches are not supported: send one message per request"));
    }
    let Json::Object(mut object) = message else {
        return Err(invalid("A message is a JSON object"));
    };
    if object.get("jsonrpc").and_then(Json::as_str) != Some("2.0") {
        return Err(invalid("`jsonrpc` must be \"2.0\""));
    }
    let method = match object.remove("method") {
        Some(Json::String(method)) => method,
        Some(_) => return Err(invalid("`method` must be a string")),
        // A client's answer to a server request: none is ever sent, none awaited.
        None if object.contains_key("result") || object.contains_key("error") => return Ok(Message::Accepted),
        None => return Err(invalid("`method` is missing")),
    };
    match object.remove("id") {
        None => Ok(Message::Accepted),
        Some(id @ (Json::String(_) | Json::Number(_))) => Ok(Message::Request {
            id,
            method,
            params: object.remove("params").unwrap_or(Json::Null),
        }),
        Some(_) => Err(invalid("`id` must be a string or a number")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_supported_version_is_kept_and_another_gets_the_newest() {
        assert_eq!(negotiate(Some("2025-03-26")), "2025-03-26");
        assert_eq!(negotiate(Some("2025-06-18")), "2025-06-18");
        assert_eq!(negotiate(Some("2025-11-25")), "2025-11-25");
        assert_eq!(negotiate(Some("2026-07-28")), "2026-07-28");
        assert_eq!(negotiate(Some("1999-01-01")), PROTOCOL_VERSIONS[0]);
        assert_eq!(negotiate(None), PROTOCOL_VERSIONS[0]);
    }

    #[test]
    fn requests_notifications_and_bad_messages_are_told_apart() {
        let request = parse(br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#).unwrap();
        assert_eq!(
            request,
            Message::Request {
                id: json!(7),
                method: "ping".into(),
                params: Json::Null
            }
        );
        let notification = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        assert_eq!(parse(notification).unwrap(), Message::Accepted);
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#).unwrap(),
            Message::Accepted
        );
        let code = |body: &[u8]| parse(body).unwrap_err().code;
        assert_eq!(code(b"{nope"), RpcError::PARSE_ERROR);
        assert_eq!(
            code(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#),
            RpcError::INVALID_REQUEST
        );
        assert_eq!(code(br#"{"id":1,"method":"ping"}"#), RpcError::INVALID_REQUEST);
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#),
            RpcError::INVALID_REQUEST
        );
    }

    #[test]
    fn the_instructions_teach_filters_and_value_objects() {
        for needle in [
            "prop.type.op=value",
            "`q`",
            "`sort`",
            "`props`",
            "`group`",
            "`_id`",
            "reference",
            "idempotency_key",
            "eds://{db}/entity/",
        ] {
            assert!(INSTRUCTIONS.contains(needle), "{needle}");
        }
    }
}
