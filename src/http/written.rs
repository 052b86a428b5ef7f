//! A write's outcome as the client receives it: the entity's id and the
//! values written, each with its `type`, a new API key in plain text, and a
//! file value with the signed `upload` its content goes to.

use serde_json::{Map, Value as Json, json};

use super::files::Files;
use crate::error::ApiError;
use crate::write::{WriteOutcome, WrittenValue};

/// `{"_id","properties"}` of values written; `{}` for other outcomes.
pub async fn written_json(files: &Files, db: &str, outcome: WriteOutcome) -> Result<Json, ApiError> {
    let WriteOutcome::Written { entity_id, values } = outcome else {
        return Ok(Json::Object(Map::new()));
    };
    let mut properties = Vec::with_capacity(values.len());
    for value in &values {
        let mut json = value_json(value);
        if let Some(upload) = files.upload(db, &value.row).await? {
            json.insert("upload".into(), upload);
        }
        properties.push(Json::Object(json));
    }
    Ok(json!({"_id": entity_id, "properties": properties}))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::values::NewValue;
    use crate::model::API_KEY_PROPERTY;
    use crate::model::stored::ValueRow;

    fn row(prop: &str) -> NewValue {
        NewValue {
            id: "v1".into(),
            entity_id: "e1".into(),
            prop: prop.into(),
            ..NewValue::default()
        }
    }

    fn shown(row: NewValue, plain_key: Option<&str>) -> String {
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
