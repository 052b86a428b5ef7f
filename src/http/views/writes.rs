//! Writes: the values a write takes and what it answers. The body is parsed
//! by `crate::model::value::parse_body` and the answers are still built as
//! JSON by the write path: these types describe both.

use serde::Serialize;
use serde_json::{Value as Json, json};
use utoipa::ToSchema;

use super::values::PropertyValue;

/// One value to write: `type` plus the one value field the property's type
/// takes (`filename`, `filesize` and `filetype` together for files), or
/// `counter` in place of a value.
#[derive(Serialize, ToSchema)]
pub struct NewValue {
    /// The property name.
    #[serde(rename = "type")]
    pub property: String,
    /// Overwrites this live value of the same entity and property (soft-deleted; the new value gets a new id).
    #[serde(rename = "_id", skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub string: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub number: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub boolean: Option<bool>,
    /// `YYYY-MM-DD`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub date: Option<String>,
    /// ISO 8601.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub datetime: Option<String>,
    /// An entity id.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub reference: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub filename: Option<String>,
    /// Bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub filesize: Option<u64>,
    /// MIME type.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub filetype: Option<String>,
    /// Exactly two lowercase letters, for multilingual properties.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub language: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub counter: Option<Counter>,
}

/// The next number of the property name's sequence across the database:
/// `true` steps by 1, a number by that step (`INV-41` → `INV-42`).
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum Counter {
    Next(bool),
    Step(f64),
}

/// The body of a write: an array of values, or one value alone.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum WriteBody {
    Values(Vec<NewValue>),
    Value(Box<NewValue>),
}

/// A write's result: the entity and the values created (file values with `upload`).
#[derive(Serialize, ToSchema)]
pub struct Written {
    #[serde(rename = "_id")]
    pub id: String,
    pub properties: Vec<PropertyValue>,
}

#[derive(Serialize, ToSchema)]
pub struct Deleted {
    /// Always `true`.
    pub deleted: bool,
}

/// `GET /api/{db}/entity/{id}/aggregate`.
#[derive(Serialize, ToSchema)]
pub struct Aggregated {
    #[serde(rename = "_id")]
    pub id: String,
    /// Entities whose formulas were re-computed.
    pub queued: u64,
}

pub fn write_body_example() -> Json {
    json!([
        {"type": "_type", "reference": "6571f3a4c2b9e8d7f6a5b401"},
        {"type": "title", "string": "Dune"},
        {"type": "no", "counter": true},
        {"type": "photo", "filename": "cover.jpg", "filesize": 48213, "filetype": "image/jpeg"},
    ])
}

pub fn written_example() -> Json {
    json!({
        "_id": "6571f3a4c2b9e8d7f6a5b4c3",
        "properties": [
            {"_id": "6571f3a4c2b9e8d7f6a5b4c4", "type": "_type", "reference": "6571f3a4c2b9e8d7f6a5b401"},
            {"_id": "6571f3a4c2b9e8d7f6a5b4c5", "type": "title", "string": "Dune"},
            {"_id": "6571f3a4c2b9e8d7f6a5b4c7", "type": "no", "string": "42", "number": 42},
            {"_id": "6571f3a4c2b9e8d7f6a5b4c6", "type": "photo", "filename": "cover.jpg", "filesize": 48213,
             "filetype": "image/jpeg", "upload": {
                "url": "http://127.0.0.1:8080/storage/demo/6571f3a4c2b9e8d7f6a5b4c3/6571f3a4c2b9e8d7f6a5b4c6?expires=1795000000&type=image%2Fjpeg&length=48213&signature=...",
                "method": "PUT",
                "headers": {"ACL": "private", "Content-Disposition": "inline;filename=\"cover.jpg\"",
                            "Content-Length": 48213, "Content-Type": "image/jpeg"}}},
        ],
    })
}
