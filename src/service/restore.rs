//! Restore from history, as `POST /api/{db}/entity/{_id}/restore` and the
//! MCP tool `restore_entity` answer it: an entity's values as they were at
//! a moment, through the database's writer (`crate::write`).

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Value as Json, json};
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorCode};
use crate::service::bodies::writes::Written;
use crate::service::{Caller, Service};
use crate::write::{IdempotencyKey, WriteOp, WriteOutcome};

/// What a restore takes.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RestoreBody {
    /// The moment restored, RFC 3339; without it, the moment before the
    /// entity's deletion (a live entity needs it).
    #[schema(example = "2026-11-20T09:30:00Z")]
    pub at: Option<String>,
}

impl RestoreBody {
    /// The body of a restore request: JSON, or nothing at all.
    pub fn parse(bytes: &[u8]) -> Result<RestoreBody, ApiError> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(RestoreBody::default());
        }
        serde_json::from_slice(bytes).map_err(|error| {
            if error.is_data() {
                ApiError::new(
                    ErrorCode::InvalidBody,
                    format!("A restore takes {{\"at\": RFC 3339}}: {error}"),
                )
            } else {
                ApiError::new(ErrorCode::InvalidJson, format!("Malformed JSON body: {error}"))
            }
        })
    }
}

/// Restores entity `entity_id` to moment `at` (see [`RestoreBody`]) and
/// answers the values written again. With `retry`, a repeat answers the
/// first restore's values.
pub async fn restore(
    service: &Service,
    caller: &Caller,
    db: &str,
    entity_id: String,
    at: Option<&str>,
    retry: Option<IdempotencyKey>,
) -> Result<Written, ApiError> {
    caller.require_write()?;
    let at = at.map(parse_at).transpose()?;
    let outcome = service
        .write_as(caller, db, WriteOp::Restore { entity_id, at }, retry)
        .await?;
    match outcome.first() {
        // a file value written again keeps its stored content: no upload
        WriteOutcome::Written { entity_id, values } => {
            Written::signed(&service.files, db, entity_id, &values, &HashSet::new()).await
        }
        _ => Err(ApiError::internal("restore", "a restore answered another outcome")),
    }
}

fn parse_at(text: &str) -> Result<DateTime<Utc>, ApiError> {
    DateTime::parse_from_rfc3339(text)
        .map(|at| at.with_timezone(&Utc))
        .map_err(|_| ApiError::new(ErrorCode::InvalidBody, "`at` must be an RFC 3339 datetime"))
}

pub fn restore_body_example() -> Json {
    json!({"at": "2026-11-20T09:30:00Z"})
}

pub fn restored_example() -> Json {
    json!({
        "_id": "6571f3a4c2b9e8d7f6a5b4c3",
        "properties": [
            {"_id": "6571f3a4c2b9e8d7f6a5b4d1", "type": "title", "string": "Dune"},
            {"_id": "6571f3a4c2b9e8d7f6a5b4d2", "type": "_viewer", "reference": "6571f3a4c2b9e8d7f6a5b402"},
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restore_body_is_empty_or_names_only_at() {
        assert!(RestoreBody::parse(b"").unwrap().at.is_none());
        assert!(RestoreBody::parse(b"{}").unwrap().at.is_none());
        let body = RestoreBody::parse(br#"{"at": "2026-11-20T09:30:00Z"}"#).unwrap();
        assert_eq!(body.at.as_deref(), Some("2026-11-20T09:30:00Z"));
        for bad in [&br#"{"when": "x"}"#[..], br#"{"at": 5}"#, b"[1]"] {
            assert_eq!(RestoreBody::parse(bad).unwrap_err().code, ErrorCode::InvalidBody);
        }
        assert_eq!(RestoreBody::parse(b"{").unwrap_err().code, ErrorCode::InvalidJson);
    }

    #[test]
    fn at_is_an_rfc_3339_datetime() {
        let at = parse_at("2026-11-20T11:30:00+02:00").unwrap();
        assert_eq!(at.to_rfc3339(), "2026-11-20T09:30:00+00:00");
        for bad in ["2026-11-20", "yesterday", "2026-11-20 09:30"] {
            assert_eq!(parse_at(bad).unwrap_err().code, ErrorCode::InvalidBody, "{bad}");
        }
    }
}
