//! Writes: the values a write takes and what it answers. The body is parsed
//! by `crate::model::value::parse_body`; the answer is built here from the
//! write's typed outcome, file values with the signed `upload` their content
//! goes to.

use std::collections::HashSet;

use serde::Serialize;
use serde_json::{Map, Value as Json, json};
use utoipa::ToSchema;

use super::values::{PropertyValue, Upload, UploadHeaders};
use crate::error::ApiError;
use crate::storage::files::{FileService, SignedUpload};
use crate::write::WrittenValue;

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
    /// `YYYY-MM-DD`, or milliseconds since 1970 UTC (the UTC day nearest to that instant).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub date: Option<DateInput>,
    /// ISO 8601, or milliseconds since 1970 UTC.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub datetime: Option<DateInput>,
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

/// A date as text, or as the original Entu API's clients write it: a whole
/// number of milliseconds since 1970-01-01 UTC.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum DateInput {
    Text(String),
    Millis(i64),
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
    /// Each value as stored values show it, then its `type`, then `upload`
    /// for a file value.
    #[schema(value_type = Vec<PropertyValue>)]
    pub properties: Vec<Json>,
}

impl Written {
    /// The answer to values written on `entity_id`: the file values in
    /// `to_sign` (by id) get a signed upload.
    pub async fn signed(
        files: &FileService,
        db: &str,
        entity_id: String,
        values: &[WrittenValue],
        to_sign: &HashSet<String>,
    ) -> Result<Written, ApiError> {
        let mut properties = Vec::with_capacity(values.len());
        for value in values {
            let mut json = value_json(value);
            if !to_sign.contains(&value.row.id) {
                properties.push(Json::Object(json));
                continue;
            }
            if let Some(upload) = files.upload(db, &value.row).await? {
                let upload = serde_json::to_value(Upload::from(upload)).map_err(|e| ApiError::internal("upload", e))?;
                json.insert("upload".into(), upload);
            }
            properties.push(Json::Object(json));
        }
        Ok(Written {
            id: entity_id,
            properties,
        })
    }
}

/// A written value as stored values show, with `type`, and a new API key in
/// plain text (the only time it is ever shown).
fn value_json(value: &WrittenValue) -> Map<String, Json> {
    let mut json = value.row.stored_json();
    json.insert("type".into(), Json::String(value.row.prop.clone()));
    if let Some(plain) = &value.plain_key {
        json.insert("string".into(), Json::String(plain.clone()));
    }
    json
}

impl From<SignedUpload> for Upload {
    fn from(signed: SignedUpload) -> Upload {
        Upload {
            url: signed.url,
            method: "PUT".into(),
            headers: UploadHeaders {
                acl: "private".into(),
                content_disposition: signed.upload.content_disposition,
                content_length: signed.upload.content_length,
                content_type: signed.upload.content_type,
            },
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::values::ValueRecord;
    use crate::model::API_KEY_PROPERTY;
    use crate::model::stored::ValueRow;

    fn row(prop: &str) -> ValueRecord {
        ValueRecord {
            id: "v1".into(),
            entity_id: "e1".into(),
            prop: prop.into(),
            ..ValueRecord::default()
        }
    }

    fn shown(row: ValueRecord, plain_key: Option<&str>) -> String {
        let value = WrittenValue {
            row: ValueRow::from(&row),
            plain_key: plain_key.map(str::to_owned),
        };
        Json::Object(value_json(&value)).to_string()
    }

    #[test]
    fn a_written_value_shows_its_fields_then_its_type() {
        let mut title = row("title");
        title.string = Some("Dune".into());
        title.language = Some("en".into());
        assert_eq!(
            shown(title, None),
            r#"{"_id":"v1","string":"Dune","language":"en","type":"title"}"#
        );
        let mut pages = row("pages");
        pages.number = Some(412.0);
        assert_eq!(shown(pages, None), r#"{"_id":"v1","number":412,"type":"pages"}"#);
        let mut photo = row("photo");
        photo.filename = Some("a.png".into());
        photo.filesize = Some(3);
        photo.filetype = Some("image/png".into());
        assert_eq!(
            shown(photo, None),
            r#"{"_id":"v1","filename":"a.png","filesize":3,"filetype":"image/png","type":"photo"}"#
        );
    }

    #[test]
    fn a_new_api_key_shows_in_plain_text_once_and_nothing_else_of_it() {
        assert_eq!(
            shown(row(API_KEY_PROPERTY), Some("plain")),
            format!(r#"{{"_id":"v1","string":"plain","type":"{API_KEY_PROPERTY}"}}"#)
        );
        assert_eq!(
            shown(row(API_KEY_PROPERTY), None),
            format!(r#"{{"_id":"v1","string":"***","type":"{API_KEY_PROPERTY}"}}"#)
        );
    }
}
