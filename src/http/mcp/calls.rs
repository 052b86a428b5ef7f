//! The JSON-RPC methods of the MCP endpoint; a tool call runs in
//! `crate::mcp::calls`, through the operation its REST route runs.

use actix_web::web;
use serde_json::{Value as Json, json};

use crate::http::{AppState, Caller};
use crate::mcp::calls::{self, text_of};
use crate::mcp::tools::catalogue;
use crate::mcp::{self, RpcError};
use crate::service::types;

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
        "tools/call" => calls::call(&state.service, caller, db, params).await,
        "resources/list" => Ok(json!({"resources": [schema_resource(db)]})),
        "resources/templates/list" => Ok(json!({"resourceTemplates": []})),
        "resources/read" => read_resource(state, caller, db, params).await,
        _ => Err(RpcError::new(
            RpcError::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )),
    }
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
    let schema = types::entity_types(&state.service, caller, db, None)
        .await
        .map_err(|error| RpcError::new(RpcError::INTERNAL_ERROR, error.message.to_string()))?;
    Ok(json!({"contents": [{"uri": uri, "mimeType": "application/json", "text": text_of(&schema)}]}))
}
