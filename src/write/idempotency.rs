//! Safe retries: a write sent with an idempotency key is applied once; a
//! repeat by the same caller within 24 hours (whichever process takes it,
//! before or after a crash) answers the first outcome and writes nothing.

use chrono::{DateTime, Utc};
use diesel_async::AsyncPgConnection;

use super::WriteOutcome;
use crate::db::idempotency;
use crate::error::{ApiError, ErrorCode};

/// The longest key taken.
const MAX_KEY_LENGTH: usize = 255;

/// A key is 1 to 255 visible ASCII characters (no space or control character).
pub fn is_valid_idempotency_key(key: &str) -> bool {
    (1..=MAX_KEY_LENGTH).contains(&key.len()) && key.bytes().all(|byte| byte.is_ascii_graphic())
}

/// A client's `Idempotency-Key` and a digest of the request it came with.
#[derive(Debug, Clone, PartialEq)]
pub struct IdempotencyKey {
    pub key: String,
    /// The SHA-256 of the request (method, path, body), hex.
    pub fingerprint: String,
}

/// What an earlier write under `key` stored, as [`WriteOutcome::Replayed`];
/// `None` when the key is new (or its record expired).
pub(super) async fn first_outcome(
    conn: &mut AsyncPgConnection,
    db: &str,
    caller: &str,
    key: &IdempotencyKey,
    now: DateTime<Utc>,
) -> Result<Option<WriteOutcome>, ApiError> {
    let Some(recorded) = idempotency::recorded(conn, db, caller, &key.key, now).await? else {
        return Ok(None);
    };
    if recorded.fingerprint != key.fingerprint {
        return Err(ApiError::new(
            ErrorCode::IdempotencyKeyReused,
            "This Idempotency-Key was used with another request",
        ));
    }
    let first: WriteOutcome = serde_json::from_value(recorded.outcome)
        .map_err(|e| ApiError::internal("a recorded write outcome does not read back", e))?;
    Ok(Some(WriteOutcome::Replayed(Box::new(first))))
}

/// Records `outcome` under `key`, in the write's own transaction: the record
/// exists exactly when the write does.
pub(super) async fn record(
    conn: &mut AsyncPgConnection,
    db: &str,
    caller: &str,
    key: &IdempotencyKey,
    outcome: &WriteOutcome,
    now: DateTime<Utc>,
) -> Result<(), ApiError> {
    let stored = serde_json::to_value(outcome).map_err(|e| ApiError::internal("recording a write outcome", e))?;
    idempotency::record(conn, db, caller, &key.key, &key.fingerprint, &stored, now).await?;
    Ok(())
}
