//! The JSON-RPC methods of the MCP endpoint, each tool call run through the
//! operation its REST route runs (`src/http/operations/`).

use actix_web::web;
use serde::Serialize;
use serde_json::{Value as Json, json};

use crate::error::{ApiError, ErrorCode};
use crate::http::operations::{entities, list, types, values};
use crate::http::{AppState, Caller};
use crate::mcp::catalogue::catalogue;
use crate::mcp::resources::{self, Resource};
use crate::mcp::tools::{CallError, ToolCall};
use crate::mcp::{self, RpcError};

/// The result of request `method` with `params`, for `caller` in `db`.
pub async fn answer(
    state: &web::Data<AppState>,
    caller: &Caller,
    db: &str,
    method: &str,
    params: &Json,
) -> Result<Json, RpcError> {
    match method {
        "initialize" => Ok(mcp::initialize_result(
            params["protocolVersion"].as_str(),
            env!("CARGO_PKG_VERSION"),
        )),
        "server/discover" => Ok(mcp::discover_result(env!("CARGO_PKG_VERSION"))),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(catalogue()),
        "tools/call" => call(state, caller, db, params).await,
        "resources/list" => Ok(resources::listed(db)),
        "resources/templates/list" => Ok(resources::templates(db)),
        "resources/read" => read_resource(state, caller, db, params).await,
        _ => Err(RpcError::new(
            RpcError::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )),
    }
}

/// `tools/call`: the REST answer as text and as `structuredContent`; a REST
/// error as text with `isError`.
async fn call(state: &web::Data<AppState>, caller: &Caller, db: &str, params: &Json) -> Result<Json, RpcError> {
    let name = params["name"]
        .as_str()
        .ok_or_else(|| RpcError::new(RpcError::INVALID_PARAMS, "`name` is required"))?;
    let answer = match ToolCall::parse(name, &params["arguments"]) {
        Ok(call) => run(state, caller, db, call).await,
        Err(CallError::UnknownTool(name)) => {
            return Err(RpcError::new(RpcError::INVALID_PARAMS, format!("Unknown tool: {name}")));
        }
        Err(CallError::BadArguments(message)) => Err(ApiError::new(ErrorCode::BadRequest, message)),
    };
    Ok(match answer {
        Ok(text) => {
            let structured = match serde_json::from_str(&text) {
                Ok(object @ Json::Object(_)) => object,
                // structuredContent is an object: any other answer goes under `result`.
                other => json!({"result": other.unwrap_or(Json::Null)}),
            };
            json!({"content": [{"type": "text", "text": text}], "structuredContent": structured, "isError": false})
        }
        Err(error) => json!({"content": [{"type": "text", "text": text_of(&error.body())}], "isError": true}),
    })
}

/// The JSON text the REST route answers for `call`.
async fn run(state: &web::Data<AppState>, caller: &Caller, db: &str, call: ToolCall) -> Result<String, ApiError> {
    Ok(match call {
        ToolCall::GetEntityType { name } => text_of(&types::entity_types(state, caller, db, name.as_deref()).await?),
        ToolCall::SearchEntities { query } => {
            let body = list::list(state, caller, db, &query).await?.into_bytes().await?;
            String::from_utf8(body.to_vec()).map_err(|error| ApiError::internal("search_entities", error))?
        }
        ToolCall::GetEntity { id } => text_of(&entities::read(state, caller, db, &id).await?),
        ToolCall::GetFileUrl { id } => text_of(&values::read(state, caller, db, &id).await?.value),
        ToolCall::GetEntityHistory { id, limit, skip } => {
            let (limit, skip) = (limit.as_deref(), skip.as_deref());
            text_of(&entities::history(state, caller, db, &id, limit, skip).await?)
        }
        ToolCall::CreateEntity { properties, retry } => {
            text_of(&entities::create(state, caller, db, &body_of(&properties), retry).await?)
        }
        ToolCall::AddProperties { id, properties, retry } => {
            text_of(&entities::add_values(state, caller, db, id, &body_of(&properties), retry).await?)
        }
        ToolCall::DeleteProperty { id, retry } => text_of(&values::delete(state, caller, db, id, retry).await?),
    })
}

/// `resources/read`: the schema as `get_entity_type` answers it without a
/// name, an entity as `get_entity` answers it (not found unless the caller may read it).
async fn read_resource(
    state: &web::Data<AppState>,
    caller: &Caller,
    db: &str,
    params: &Json,
) -> Result<Json, RpcError> {
    let uri = params["uri"].as_str().unwrap_or_default();
    let not_found = || RpcError::new(RpcError::RESOURCE_NOT_FOUND, format!("Resource not found: {uri}"));
    let internal = |error: ApiError| RpcError::new(RpcError::INTERNAL_ERROR, error.message.to_string());
    let text = match Resource::parse(db, uri).ok_or_else(not_found)? {
        Resource::Schema => text_of(&types::entity_types(state, caller, db, None).await.map_err(internal)?),
        Resource::Entity(id) => match entities::read(state, caller, db, &id).await {
            Ok(entity) => text_of(&entity),
            Err(error) if matches!(error.status().as_u16(), 400 | 404) => return Err(not_found()),
            Err(error) => return Err(internal(error)),
        },
    };
    Ok(json!({"contents": [{"uri": uri, "mimeType": "application/json", "text": text}]}))
}

/// A body as the REST route answers it.
fn text_of(body: &impl Serialize) -> String {
    serde_json::to_string(body).expect("answers serialize")
}

/// The tool's values as the body of a REST write.
fn body_of(properties: &Json) -> Vec<u8> {
    serde_json::to_vec(properties).expect("JSON values serialize")
}
