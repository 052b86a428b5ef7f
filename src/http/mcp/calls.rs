//! The JSON-RPC methods of the MCP endpoint, each tool call run through the
//! operation its REST route runs (`src/http/operations/`).

use actix_web::web;
use serde::Serialize;
use serde_json::{Value as Json, json};

use crate::error::{ApiError, ErrorCode};
use crate::http::{AppState, Caller};
use crate::mcp::tools::{CallError, ToolCall, catalogue};
use crate::mcp::{self, RpcError};
use crate::service::{entities, list, types, values};

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
        "ping" => Ok(json!({})),
        "tools/list" => Ok(catalogue()),
        "tools/call" => call(state, caller, db, params).await,
        "resources/list" => Ok(json!({"resources": [schema_resource(db)]})),
        "resources/templates/list" => Ok(json!({"resourceTemplates": []})),
        "resources/read" => read_resource(state, caller, db, params).await,
        _ => Err(RpcError::new(
            RpcError::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )),
    }
}

/// `tools/call`: the REST answer as text; a REST error as text with `isError`.
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
    let (text, is_error) = match answer {
        Ok(text) => (text, false),
        Err(error) => (text_of(&error.body()), true),
    };
    Ok(json!({"content": [{"type": "text", "text": text}], "isError": is_error}))
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
        ToolCall::CreateEntity { properties } => {
            text_of(&entities::create(state, caller, db, &body_of(&properties), None).await?)
        }
        ToolCall::AddProperties { id, properties } => {
            text_of(&entities::add_values(state, caller, db, id, &body_of(&properties), None).await?)
        }
        ToolCall::DeleteProperty { id } => text_of(&values::delete(state, caller, db, id, None).await?),
    })
}

/// The URI of the schema resource of `db`.
pub fn schema_uri(db: &str) -> String {
    format!("eds://{db}/schema")
}

fn schema_resource(db: &str) -> Json {
    json!({
        "uri": schema_uri(db),
        "name": "schema",
        "title": format!("The entity types of {db}"),
        "description": "The entity types with their property definitions, as the tool get_entity_type answers them",
        "mimeType": "application/json",
    })
}

/// `resources/read` of the schema resource: what `get_entity_type` answers without a name.
async fn read_resource(
    state: &web::Data<AppState>,
    caller: &Caller,
    db: &str,
    params: &Json,
) -> Result<Json, RpcError> {
    let uri = params["uri"].as_str().unwrap_or_default();
    if uri != schema_uri(db) {
        return Err(RpcError::new(
            RpcError::RESOURCE_NOT_FOUND,
            format!("Resource not found: {uri}"),
        ));
    }
    let schema = types::entity_types(state, caller, db, None)
        .await
        .map_err(|error| RpcError::new(RpcError::INTERNAL_ERROR, error.message.to_string()))?;
    Ok(json!({"contents": [{"uri": uri, "mimeType": "application/json", "text": text_of(&schema)}]}))
}

/// A body as the REST route answers it.
fn text_of(body: &impl Serialize) -> String {
    serde_json::to_string(body).expect("answers serialize")
}

/// The tool's values as the body of a REST write.
fn body_of(properties: &Json) -> Vec<u8> {
    serde_json::to_vec(properties).expect("JSON values serialize")
}
