//! `POST /api/{db}/batch`: the operations it takes and what it answers.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value as Json, json};
use utoipa::ToSchema;

/// The body of a batch.
#[derive(Serialize, ToSchema)]
pub struct BatchBody {
    /// Applied in order, all or nothing: `{"op":"create","ref"?:"$name","properties":[values]}`,
    /// `{"op":"add","entity":ID|"$name","properties":[values]}`,
    /// `{"op":"delete_property","property":ID}`, `{"op":"delete_entity","entity":ID|"$name"}`.
    /// A `reference` value may name an earlier create's `ref` too.
    #[schema(value_type = Vec<Object>)]
    pub operations: Vec<Json>,
    /// Checks everything and answers what would be written, keeping nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub dry_run: Option<bool>,
}

/// What a batch wrote.
#[derive(Serialize, ToSchema)]
pub struct Batched {
    /// One per operation, as its single route answers: `{"_id","properties"}`
    /// for `create` and `add` (file values with `upload`), `{"deleted":true}` for the deletes.
    #[schema(value_type = Vec<Object>)]
    pub results: Vec<Json>,
    /// The id each `ref` took.
    pub refs: BTreeMap<String, String>,
    /// Present (`true`) on a dry run's answer: its ids are not kept.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
}

pub fn batch_body_example() -> Json {
    json!({
        "operations": [
            {"op": "create", "ref": "$author", "properties": [
                {"type": "_type", "reference": "6571f3a4c2b9e8d7f6a5b401"},
                {"type": "name", "string": "Frank Herbert"},
            ]},
            {"op": "create", "properties": [
                {"type": "_type", "reference": "6571f3a4c2b9e8d7f6a5b402"},
                {"type": "title", "string": "Dune"},
                {"type": "author", "reference": "$author"},
            ]},
            {"op": "add", "entity": "6571f3a4c2b9e8d7f6a5b4c3", "properties": [
                {"type": "_viewer", "reference": "6571f3a4c2b9e8d7f6a5b404"},
            ]},
            {"op": "delete_property", "property": "6571f3a4c2b9e8d7f6a5b4c9"},
        ],
    })
}

pub fn batched_example() -> Json {
    json!({
        "results": [
            {"_id": "6571f3a4c2b9e8d7f6a5b4d0", "properties": [
                {"_id": "6571f3a4c2b9e8d7f6a5b4d1", "type": "_type", "reference": "6571f3a4c2b9e8d7f6a5b401"},
                {"_id": "6571f3a4c2b9e8d7f6a5b4d2", "type": "name", "string": "Frank Herbert"},
            ]},
            {"_id": "6571f3a4c2b9e8d7f6a5b4d3", "properties": [
                {"_id": "6571f3a4c2b9e8d7f6a5b4d4", "type": "_type", "reference": "6571f3a4c2b9e8d7f6a5b402"},
                {"_id": "6571f3a4c2b9e8d7f6a5b4d5", "type": "title", "string": "Dune"},
                {"_id": "6571f3a4c2b9e8d7f6a5b4d6", "type": "author", "reference": "6571f3a4c2b9e8d7f6a5b4d0"},
            ]},
            {"_id": "6571f3a4c2b9e8d7f6a5b4c3", "properties": [
                {"_id": "6571f3a4c2b9e8d7f6a5b4d7", "type": "_viewer", "reference": "6571f3a4c2b9e8d7f6a5b404"},
            ]},
            {"deleted": true},
        ],
        "refs": {"$author": "6571f3a4c2b9e8d7f6a5b4d0"},
    })
}
