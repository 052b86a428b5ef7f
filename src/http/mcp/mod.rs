//! `POST /api/{db}/mcp`: the Model Context Protocol over streamable HTTP,
//! JSON answers only, stateless (no session id). Every message needs an
//! access token with a person in `{db}`, checked as the REST API checks it;
//! without one, 401 points the client at the protected-resource metadata
//! (`GET /.well-known/oauth-protected-resource/api/{db}/mcp`, RFC 9728) and
//! through it at the OAuth server. The methods are in `calls`.

mod calls;

use actix_web::http::header::{self, HeaderValue};
use actix_web::{FromRequest, HttpRequest, HttpResponse, ResponseError, web};
use serde_json::Value as Json;

use super::views::mcp::{
    ProtectedResource, RpcAnswer, RpcMessage, protected_resource_example, rpc_answer_example, rpc_request_example,
};
use super::{AppState, Caller};
use crate::auth::scope::SCOPES_SUPPORTED;
use crate::db::databases;
use crate::error::{ApiError, ErrorBody, ErrorCode};
use crate::mcp::{self, Message, PROTOCOL_VERSIONS, RpcError};

/// `POST /api/{db}/mcp`: one JSON-RPC message.
#[utoipa::path(
    post, path = "/api/{db}/mcp", operation_id = "mcp", tag = "mcp", summary = "MCP endpoint for AI clients",
    description = "The Model Context Protocol (streamable HTTP transport, JSON answers, no session): one JSON-RPC 2.0 message per request. Methods `initialize`, `ping`, `tools/list`, `tools/call`, `resources/list`, `resources/read`; notifications are accepted with 202. Tools `get_entity_type`, `search_entities`, `get_entity`, `get_file_url`, `get_entity_history`, `create_entity`, `add_properties`, `delete_property` answer, as text, the JSON the REST route answers the same caller (an error with `isError`). Needs an access token (`use: access`) with a person in the database.",
    security(("jwt" = [])),
    params(("db" = String, Path, description = "Database name", example = "demo")),
    request_body(content = RpcMessage, description = "A JSON-RPC request or notification (batches are refused)", example = rpc_request_example),
    responses(
        (status = 200, description = "The JSON-RPC answer: a result, or an error (`-32601` unknown method, `-32602` unknown tool)", body = RpcAnswer, example = rpc_answer_example),
        (status = 202, description = "A notification, accepted"),
        (status = 400, description = "Malformed JSON (`-32700`), not a JSON-RPC request or a batch (`-32600`), or an unsupported `MCP-Protocol-Version`", body = RpcAnswer),
        (status = 401, description = "No token, or an unacceptable one (only `use: access` tokens are taken)", body = ErrorBody,
         headers(("WWW-Authenticate" = String, description = "`Bearer resource_metadata=\"{api_url}/.well-known/oauth-protected-resource/api/{db}/mcp\"`, with `, error=\"invalid_token\"` when a token was sent"))),
        (status = 403, description = "The token is for other databases only, or an `Origin` header that is neither the service's own nor one of `mcp.allowed_origins`", body = ErrorBody),
        (status = 404, description = "No such database", body = ErrorBody),
    )
)]
pub async fn post(
    state: web::Data<AppState>,
    req: HttpRequest,
    db: web::Path<String>,
    body: web::Bytes,
) -> HttpResponse {
    let caller = match admitted(&state, &req, &db).await {
        Ok(caller) => caller,
        Err(refusal) => return refusal,
    };
    let version = req.headers().get("MCP-Protocol-Version").map(HeaderValue::to_str);
    if version.is_some_and(|version| !version.is_ok_and(|version| PROTOCOL_VERSIONS.contains(&version))) {
        let error = RpcError::new(RpcError::INVALID_REQUEST, "Unsupported MCP-Protocol-Version");
        return HttpResponse::BadRequest().json(error.answer(Json::Null));
    }
    match mcp::parse(&body) {
        Err(error) => HttpResponse::BadRequest().json(error.answer(Json::Null)),
        Ok(Message::Accepted) => HttpResponse::Accepted().finish(),
        Ok(Message::Request { id, method, params }) => {
            let answer = match calls::answer(&state, &caller, &db, &method, &params).await {
                Ok(result) => mcp::success(id, result),
                Err(error) => error.answer(id),
            };
            HttpResponse::Ok().json(answer)
        }
    }
}

/// `GET /api/{db}/mcp`: no event stream is offered.
#[utoipa::path(
    get, path = "/api/{db}/mcp", operation_id = "mcp_stream", tag = "mcp", summary = "MCP event stream (not offered)",
    description = "The streamable HTTP transport's server-sent event stream is not offered: every answer comes with its request. A caller the endpoint admits gets 405.",
    security(("jwt" = [])),
    params(("db" = String, Path, description = "Database name", example = "demo")),
    responses(
        (status = 405, description = "No event stream", body = ErrorBody, headers(("Allow" = String, description = "`POST`")),
         example = json!({"status": 405, "error": "method_not_allowed", "message": "The MCP endpoint takes POST only"})),
        (status = 401, description = "No token, or an unacceptable one", body = ErrorBody,
         headers(("WWW-Authenticate" = String, description = "`Bearer resource_metadata=\"...\"`"))),
        (status = 403, description = "The token is for other databases only", body = ErrorBody),
        (status = 404, description = "No such database", body = ErrorBody),
    )
)]
pub async fn stream(state: web::Data<AppState>, req: HttpRequest, db: web::Path<String>) -> HttpResponse {
    if let Err(refusal) = admitted(&state, &req, &db).await {
        return refusal;
    }
    let mut response = ApiError::new(ErrorCode::MethodNotAllowed, "The MCP endpoint takes POST only").error_response();
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}

/// `GET /.well-known/oauth-protected-resource/api/{db}/mcp` (RFC 9728).
#[utoipa::path(
    get, path = "/.well-known/oauth-protected-resource/api/{db}/mcp", operation_id = "mcp_protected_resource", tag = "mcp",
    summary = "MCP protected-resource metadata",
    description = "RFC 9728 metadata of the MCP endpoint of `{db}`: its URL and the OAuth authorization server (`http.api_url`) that issues its tokens.",
    params(("db" = String, Path, description = "Database name", example = "demo")),
    responses(
        (status = 200, description = "The metadata", body = ProtectedResource, example = protected_resource_example),
        (status = 404, description = "No such database", body = ErrorBody),
    )
)]
pub async fn protected_resource(state: web::Data<AppState>, db: web::Path<String>) -> Result<HttpResponse, ApiError> {
    known(&state, &db).await?;
    Ok(HttpResponse::Ok().json(ProtectedResource {
        resource: format!("{}/api/{db}/mcp", state.sign_in.public_url),
        authorization_servers: vec![state.sign_in.api_url.clone()],
        bearer_methods_supported: vec!["header"],
        scopes_supported: SCOPES_SUPPORTED,
    }))
}

/// 404 unless `db` names an existing database.
async fn known(state: &AppState, db: &str) -> Result<(), ApiError> {
    if databases::name_problem(db).is_some() {
        return Err(ApiError::not_found("Database not found"));
    }
    state.require_database(db).await
}

/// The caller, when an access token gives them a person in `db`; else the
/// refusal, with a `WWW-Authenticate` challenge naming the metadata.
async fn admitted(state: &AppState, req: &HttpRequest, db: &str) -> Result<Caller, HttpResponse> {
    // A page a browser fetched from elsewhere (a DNS-rebound name for a local
    // server among them) sends its own Origin: refused before anything else.
    if let Some(origin) = req.headers().get(header::ORIGIN)
        && !origin
            .to_str()
            .is_ok_and(|origin| state.mcp_origins.iter().any(|allowed| allowed == origin))
    {
        return Err(
            ApiError::forbidden("This Origin may not use the MCP endpoint (mcp.allowed_origins)").error_response(),
        );
    }
    known(state, db).await.map_err(|error| error.error_response())?;
    let challenge = |error: ApiError| {
        let mut response = error.error_response();
        let metadata = format!(
            "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/api/{db}/mcp\"",
            state.sign_in.api_url
        );
        if let Ok(value) = HeaderValue::from_str(&metadata) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
        }
        response
    };
    let caller = Caller::extract(req).await.map_err(challenge)?;
    if caller.claims.is_none() {
        return Err(challenge(ApiError::token_required()));
    }
    caller.require_person(db).map_err(challenge)?;
    Ok(caller)
}
