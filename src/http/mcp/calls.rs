//! The JSON-RPC methods of the MCP endpoint; a tool call runs in
//! `crate::mcp::calls`, through the operation its REST route runs.

use actix_web::web;
use serde_json::{Value as Json, json};

use crate::error::ApiError;
use crate::http::{AppState, Caller};
use crate::mcp::calls::{self, text_of};
use crate::mcp::catalogue::catalogue;
use crate::mcp::resources::{self, Resource};
use crate::mcp::{self, RpcError};
use crate::service::{entities, types};

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
        "tools/call" => calls::call(&state.service, caller, db, params).await,
        "resources/list" => Ok(resources::listed(db)),
        "resources/templates/list" => Ok(resources::templates(db)),
        "resources/read" => read_resource(state, caller, db, params).await,
        _ => Err(RpcError::new(
            RpcError::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )),
    }
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
    let service = &state.service;
    let text = match Resource::parse(db, uri).ok_or_else(not_found)? {
        Resource::Schema => text_of(&types::entity_types(service, caller, db, None).await.map_err(internal)?),
        Resource::Entity(id) => match entities::read(service, caller, db, &id).await {
            Ok(entity) => text_of(&entity),
            Err(error) if matches!(error.status().as_u16(), 400 | 404) => return Err(not_found()),
            Err(error) => return Err(internal(error)),
        },
    };
    Ok(json!({"contents": [{"uri": uri, "mimeType": "application/json", "text": text}]}))
}
