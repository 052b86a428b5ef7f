//! The lines of an export (docs/guide/src/operating/export-format.md): a header, then one line per
//! entity with every value it ever had, deleted ones included and ids kept.

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};

/// The header's `format`.
pub const FORMAT: &str = "eds-export";
/// The header's `version`: raised whenever a reader of the old one would
/// misread a file of the new one.
pub const VERSION: u64 = 1;

/// The first line of an export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    pub format: String,
    pub version: u64,
    /// The exported database's name (an import may take another).
    pub database: String,
    pub exported_at: DateTime<Utc>,
    /// Entity lines that follow, and values on them: a shorter file is refused.
    pub entities: u64,
    pub values: u64,
}

/// When and by whom something was created or deleted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stamp {
    pub at: DateTime<Utc>,
    pub by: Option<String>,
}

/// One entity, with every value it ever had.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntityLine {
    #[serde(rename = "_id")]
    pub id: String,
    pub created: Stamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted: Option<Stamp>,
    pub values: Vec<ValueLine>,
}

/// One stored value, as its row holds it (credential columns included, so
/// API keys keep working after a move).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValueLine {
    #[serde(rename = "_id")]
    pub id: String,
    #[serde(rename = "type")]
    pub prop: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub string: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boolean: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<NaiveDate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datetime: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filesize: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filetype: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_lookup: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub login_provider: Option<String>,
    /// A restored file value: the value whose stored object holds its content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_id: Option<String>,
    pub created: Stamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted: Option<Stamp>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entity_line_reads_back_as_written() {
        let line = r#"{"_id":"6740e1a0a1b2c3d4e5000001","created":{"at":"2026-11-22T01:02:03.456789Z","by":null},"values":[{"_id":"6740e1a0a1b2c3d4e5000002","type":"price","string":"INV-7","number":7.0,"created":{"at":"2026-11-22T01:02:03.456789Z","by":"6740e1a0a1b2c3d4e5000001"},"deleted":{"at":"2026-11-22T02:00:00Z","by":"6740e1a0a1b2c3d4e5000001"}},{"_id":"6740e1a0a1b2c3d4e5000003","type":"born","date":"1990-05-17","created":{"at":"2026-11-22T01:02:03Z","by":null}}]}"#;
        let parsed: EntityLine = serde_json::from_str(line).unwrap();
        assert_eq!(parsed.values[0].number, Some(7.0));
        assert!(parsed.values[0].deleted.is_some());
        assert_eq!(parsed.values[1].date, NaiveDate::from_ymd_opt(1990, 5, 17));
        let again: EntityLine = serde_json::from_str(&serde_json::to_string(&parsed).unwrap()).unwrap();
        assert_eq!(again, parsed);
    }

    #[test]
    fn an_unknown_field_is_refused() {
        let unknown = r#"{"_id":"6740e1a0a1b2c3d4e5000001","created":{"at":"2026-11-22T01:02:03Z","by":null},"values":[],"colour":"red"}"#;
        assert!(serde_json::from_str::<EntityLine>(unknown).is_err());
    }
}
