//! A stored value as the service reads it back, and its JSON.

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json, json};

use crate::model::json::{format_date, format_datetime, number_json};
use crate::model::{API_KEY_PROPERTY, LOGIN_PROPERTY};

/// One stored value, without its credential columns. The database layer
/// reads it from `property_values` (`db::values`); here it is plain data, so
/// the pure projection and the views can take it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ValueRow {
    pub id: String,
    pub entity_id: String,
    pub prop: String,
    pub string: Option<String>,
    pub number: Option<f64>,
    pub boolean: Option<bool>,
    pub date: Option<NaiveDate>,
    pub datetime: Option<DateTime<Utc>>,
    pub reference: Option<String>,
    pub filename: Option<String>,
    pub filesize: Option<i64>,
    pub filetype: Option<String>,
    pub language: Option<String>,
    pub created_at: DateTime<Utc>,
    pub created_by: Option<String>,
    pub deleted_at: Option<DateTime<Utc>>,
    pub deleted_by: Option<String>,
    /// A `service_user` value's provider; `None` on a pending invitation.
    pub login_provider: Option<String>,
    /// A file value a restore wrote again: the value whose stored object
    /// holds its content (`None`: its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_id: Option<String>,
}

impl ValueRow {
    /// The value id a file value's stored object is named by.
    pub fn object_value_id(&self) -> &str {
        self.object_id.as_deref().unwrap_or(&self.id)
    }

    /// The value as it appears inside an entity: `_id` and its fields.
    pub fn stored_json(&self) -> Map<String, Json> {
        let mut value = Map::new();
        value.insert("_id".into(), Json::String(self.id.clone()));
        if self.prop == API_KEY_PROPERTY {
            value.insert("string".into(), Json::String("***".into()));
            return value;
        }
        if self.prop == LOGIN_PROPERTY {
            // A login method shows only its e-mail or device name and its
            // provider; the identity the service matches at sign-in never
            // leaves it. Without a provider it is a pending invitation.
            if let Some(shown) = &self.string {
                value.insert("string".into(), Json::String(shown.clone()));
            }
            match &self.login_provider {
                Some(provider) => value.insert("provider".into(), Json::String(provider.clone())),
                None => value.insert("invite".into(), Json::Bool(true)),
            };
            return value;
        }
        let mut put = |field: &str, json: Option<Json>| {
            if let Some(json) = json {
                value.insert(field.into(), json);
            }
        };
        put("string", self.string.clone().map(Json::String));
        put("number", self.number.map(number_json));
        put("boolean", self.boolean.map(Json::Bool));
        put("date", self.date.map(|d| Json::String(format_date(d))));
        put("datetime", self.datetime.map(|d| Json::String(format_datetime(d))));
        put("reference", self.reference.clone().map(Json::String));
        put("filename", self.filename.clone().map(Json::String));
        put("filesize", self.filesize.map(Json::from));
        put("filetype", self.filetype.clone().map(Json::String));
        put("language", self.language.clone().map(Json::String));
        value
    }

    /// The value read on its own (`GET /api/{db}/property/{_id}`): with `type` and `created`.
    pub fn property_json(&self) -> Json {
        let mut value = self.stored_json();
        value.insert("type".into(), Json::String(self.prop.clone()));
        value.insert(
            "created".into(),
            json!({"at": format_datetime(self.created_at), "by": self.created_by}),
        );
        Json::Object(value)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use chrono::TimeZone;

    use super::*;

    /// A live value of `prop` with no field set, created by `p1` at a fixed time.
    pub(crate) fn value(id: &str, prop: &str) -> ValueRow {
        ValueRow {
            id: id.into(),
            entity_id: "e1".into(),
            prop: prop.into(),
            string: None,
            number: None,
            boolean: None,
            date: None,
            datetime: None,
            reference: None,
            filename: None,
            filesize: None,
            filetype: None,
            language: None,
            created_at: Utc.with_ymd_and_hms(2024, 1, 2, 3, 4, 5).unwrap(),
            created_by: Some("p1".into()),
            deleted_at: None,
            deleted_by: None,
            login_provider: None,
            object_id: None,
        }
    }

    #[test]
    fn a_value_shows_its_id_and_the_fields_it_has() {
        let mut row = value("v1", "price");
        row.number = Some(12.0);
        row.language = Some("en".into());
        assert_eq!(
            Json::Object(row.stored_json()),
            json!({"_id": "v1", "number": 12, "language": "en"})
        );
        let mut row = value("v2", "born");
        row.date = Some(NaiveDate::from_ymd_opt(1990, 5, 6).unwrap());
        row.boolean = Some(false);
        assert_eq!(
            Json::Object(row.stored_json()),
            json!({"_id": "v2", "date": "1990-05-06T00:00:00.000Z", "boolean": false})
        );
    }

    #[test]
    fn credentials_show_only_their_hidden_form() {
        let mut key = value("k", API_KEY_PROPERTY);
        key.string = Some("plain".into());
        assert_eq!(Json::Object(key.stored_json()), json!({"_id": "k", "string": "***"}));
        let mut login = value("l", LOGIN_PROPERTY);
        login.string = Some("ann@example.com".into());
        login.reference = Some("hidden".into());
        assert_eq!(
            Json::Object(login.stored_json()),
            json!({"_id": "l", "string": "ann@example.com", "invite": true})
        );
        login.login_provider = Some("e-mail".into());
        assert_eq!(
            Json::Object(login.stored_json()),
            json!({"_id": "l", "string": "ann@example.com", "provider": "e-mail"})
        );
    }

    #[test]
    fn a_value_read_alone_carries_its_type_and_creation() {
        let mut row = value("v1", "title");
        row.string = Some("Dune".into());
        assert_eq!(
            row.property_json(),
            json!({
                "_id": "v1", "string": "Dune", "type": "title",
                "created": {"at": "2024-01-02T03:04:05.000Z", "by": "p1"},
            })
        );
    }
}
