//! Property values as documents show them, and the signed upload a created
//! file value comes back with. The values are JSON built by `crate::view`
//! and the write path; these types describe their shape.

use serde::Serialize;
use serde_json::{Value as Json, json};
use utoipa::ToSchema;

/// One property value. Which value fields it has depends on the property's
/// type; `type` is present outside entity documents (where the property name
/// is the key). Fields a value lacks are absent, not null.
#[derive(Serialize, ToSchema)]
pub struct PropertyValue {
    /// The value's id (24 lowercase hex characters).
    #[serde(rename = "_id")]
    pub id: String,
    /// The property name.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub property: Option<String>,
    /// `string`, `text` and `counter` values; for a `reference`, the referenced entity's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub string: Option<String>,
    /// `number` values; for a `counter`, its numeric part.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub number: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub boolean: Option<bool>,
    /// `date` values, as `YYYY-MM-DDT00:00:00.000Z`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub date: Option<String>,
    /// `datetime` values (RFC 3339 UTC with milliseconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub datetime: Option<String>,
    /// `reference` values: the referenced entity's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub reference: Option<String>,
    /// For a `reference`: the referenced entity's type name.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub entity_type: Option<String>,
    /// For a `reference`: the property name.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub property_type: Option<String>,
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
    /// Two lowercase letters, on multilingual properties.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub language: Option<String>,
    /// Only from `GET /api/{db}/property/{id}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub created: Option<Created>,
    /// File values from `GET /api/{db}/property/{id}`: a download URL valid 60 seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub url: Option<String>,
    /// File values just created: where and how to upload the content.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub upload: Option<Upload>,
}

#[derive(Serialize, ToSchema)]
pub struct Created {
    /// ISO 8601 timestamp.
    pub at: String,
    /// The creating person's id.
    pub by: Option<String>,
}

/// A signed upload: PUT the content to `url` within 60 seconds with exactly these headers.
#[derive(Serialize, ToSchema)]
pub struct Upload {
    pub url: String,
    /// Always `PUT`.
    pub method: String,
    pub headers: UploadHeaders,
}

#[derive(Serialize, ToSchema)]
pub struct UploadHeaders {
    /// Always `private`.
    #[serde(rename = "ACL")]
    pub acl: String,
    /// `inline;filename="<filename>"`.
    #[serde(rename = "Content-Disposition")]
    pub content_disposition: String,
    /// The value's `filesize`.
    #[serde(rename = "Content-Length")]
    pub content_length: u64,
    /// The value's `filetype`.
    #[serde(rename = "Content-Type")]
    pub content_type: String,
}

pub fn property_example() -> Json {
    json!({
        "_id": "6571f3a4c2b9e8d7f6a5b4c6", "type": "photo", "filename": "cover.jpg", "filesize": 48213,
        "filetype": "image/jpeg", "created": {"at": "2026-11-21T10:00:00.000Z", "by": "6571f3a4c2b9e8d7f6a5b402"},
        "url": "http://127.0.0.1:8080/storage/demo/6571f3a4c2b9e8d7f6a5b4c3/6571f3a4c2b9e8d7f6a5b4c6?expires=1795000000&signature=...",
    })
}
