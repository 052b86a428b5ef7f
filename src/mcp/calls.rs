//! `tools/call`: each tool runs the operation its REST route runs
//! (`crate::service`) and answers the JSON that route answers the same
//! caller, as text and as `structuredContent`; an operation's error is its
//! JSON error body with `isError`.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value as Json, json};

use super::RpcError;
use super::tools::{CallError, ToolCall};
use crate::error::{ApiError, ErrorCode};
use crate::model::value::parse_values;
use crate::service::paging::Paging;
use crate::service::{Caller, Service, batch, entities, list, restore, types, values};

/// The result of `tools/call` with `params`, for `caller` in `db`.
pub async fn call(service: &Arc<Service>, caller: &Caller, db: &str, params: &Json) -> Result<Json, RpcError> {
    let name = params["name"]
        .as_str()
        .ok_or_else(|| RpcError::new(RpcError::INVALID_PARAMS, "`name` is required"))?;
    let answer = match ToolCall::parse(name, &params["arguments"]) {
        Ok(call) => run(service, caller, db, call).await,
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
async fn run(service: &Arc<Service>, caller: &Caller, db: &str, call: ToolCall) -> Result<String, ApiError> {
    Ok(match call {
        ToolCall::GetEntityType { name } => text_of(&types::entity_types(service, caller, db, name.as_deref()).await?),
        ToolCall::SearchEntities { query } => {
            let body = list::list(service, caller, db, &query).await?.into_bytes().await?;
            String::from_utf8(body.to_vec()).map_err(|error| ApiError::internal("search_entities", error))?
        }
        ToolCall::GetEntity { id } => text_of(&entities::read(service, caller, db, &id).await?),
        ToolCall::GetFileUrl { id } => text_of(&values::read(service, caller, db, &id).await?.value),
        ToolCall::GetEntityHistory { id, limit, skip } => {
            text_of(&entities::history(service, caller, db, &id, &Paging { limit, skip }).await?)
        }
        ToolCall::CreateEntity { properties, retry } => {
            let values = parse_values(&properties)?;
            text_of(&entities::create(service, caller, db, values, retry).await?)
        }
        ToolCall::AddProperties { id, properties, retry } => {
            let values = parse_values(&properties)?;
            text_of(&entities::add_values(service, caller, db, id, values, retry).await?)
        }
        ToolCall::DeleteProperty { id, retry } => text_of(&values::delete(service, caller, db, id, retry).await?),
        ToolCall::RestoreEntity { id, at, retry } => {
            text_of(&restore::restore(service, caller, db, id, at.as_deref(), retry).await?)
        }
        ToolCall::Batch { body, retry } => text_of(&batch::batch(service, caller, db, &body, retry).await?),
    })
}

/// A body as the REST route answers it.
pub fn text_of(body: &impl Serialize) -> String {
    serde_json::to_string(body).expect("answers serialize")
}
