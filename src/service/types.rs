//! The database's entity types with their property definitions, as list
//! queries answer them (the MCP tool `get_entity_type` and the `schema`
//! resource): types are entities of type `entity`, definitions entities of
//! type `property` whose `_parent` is their type.

use super::list::documents;
use crate::error::ApiError;
use crate::model::{ENTITY_TYPE, PROPERTY_TYPE};
use crate::service::{Caller, Service};
use serde_json::{Value as Json, json};

/// Most types, and most definitions, one answer holds.
const MOST: &str = "10000";

/// The list query string of the types (named `name`, if given), by name.
pub fn types_query(name: Option<&str>) -> String {
    let mut params = vec![("_type.string", ENTITY_TYPE), ("sort", "name.string"), ("limit", MOST)];
    if let Some(name) = name {
        params.push(("name.string", name));
    }
    serde_urlencoded::to_string(params).expect("strings encode")
}

/// The list query string of the definitions of the types `type_ids`, in
/// their order of display.
pub fn definitions_query(type_ids: &[&str]) -> String {
    let ids = type_ids.join(",");
    serde_urlencoded::to_string([
        ("_type.string", PROPERTY_TYPE),
        ("_parent.reference.in", ids.as_str()),
        ("sort", "ordinal.number,name.string"),
        ("limit", MOST),
    ])
    .expect("strings encode")
}

/// `{"types":[{"entity":TYPE,"properties":[DEFINITION,...]}],"count":N}`:
/// each type the caller sees (only the one named `name`, if given) with the
/// definitions of it the caller sees, each as the list query shows it; 404
/// when a named type is not seen.
pub async fn entity_types(service: &Service, caller: &Caller, db: &str, name: Option<&str>) -> Result<Json, ApiError> {
    let types = documents(service, caller, db, &types_query(name)).await?;
    if types.is_empty() && name.is_some() {
        return Err(ApiError::not_found("Entity type not found"));
    }
    let ids: Vec<&str> = types.iter().filter_map(|doc| doc["_id"].as_str()).collect();
    let definitions = if ids.is_empty() {
        Vec::new()
    } else {
        documents(service, caller, db, &definitions_query(&ids)).await?
    };
    let described: Vec<Json> = types
        .iter()
        .map(|doc| {
            let of_type: Vec<&Json> = definitions
                .iter()
                .filter(|definition| parents(definition).any(|parent| Some(parent) == doc["_id"].as_str()))
                .collect();
            json!({"entity": doc, "properties": of_type})
        })
        .collect();
    let count = described.len();
    Ok(json!({"types": described, "count": count}))
}

/// The ids a document's `_parent` values reference.
fn parents(doc: &Json) -> impl Iterator<Item = &str> {
    doc["_parent"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|parent| parent["reference"].as_str())
}
