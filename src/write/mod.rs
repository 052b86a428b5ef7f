//! Writes: validation, rights, the values and the re-projection, all in one
//! transaction. The per-database writer actor runs these in order; the entity
//! row lock taken first keeps them correct across processes too.
//!
//! - `batch.rs`: transactions, group commit and the savepoint retry;
//!   `cache.rs`: what one transaction learns, and its writer keeps;
//! - `create.rs`, `add.rs`, `delete.rs`, `aggregate.rs`, `duplicate.rs`: the
//!   operations; `batch_ops.rs`: several of them, all or nothing (asked by
//!   `batch_request.rs`), runs of plain additions together (`batch_adds.rs`);
//! - `validate.rs`: values against rights and definitions; `replaced.rs`:
//!   what a write replaces, and the last-`_owner` rule; `counters.rs`:
//!   numbering;
//! - `access.rs`: who may write at all; `keys.rs`: API keys, hashed before a
//!   write's turn; `login.rs`: login methods, written by the service only;
//!   `webhook.rs`: webhooks' signing secrets and their number;
//! - `idempotency.rs`: writes sent with an idempotency key, applied once.

mod access;
mod add;
mod aggregate;
mod batch;
mod batch_adds;
mod batch_ops;
mod batch_request;
mod cache;
mod counters;
mod create;
mod delete;
mod duplicate;
mod idempotency;
pub mod keys;
pub mod login;
mod replaced;
mod restore;
pub mod validate;
mod webhook;

use std::collections::HashMap;

use diesel_async::AsyncPgConnection;
use serde::{Deserialize, Serialize};
use tracing::Span;

use crate::auth::api_key::GeneratedKey;
use crate::db::Pool;
use crate::db::values::ValueRecord;
use crate::error::ApiError;
use crate::model::stored::ValueRow;
use crate::model::value::ValueInput;

pub use batch_request::{Batch, BatchOp, EntityId, RefUse};
pub use cache::WriterCache;
pub use duplicate::Duplication;
pub use idempotency::{IdempotencyKey, is_valid_idempotency_key};

/// The bounds a writer's transactions check themselves, under the
/// database's write lock (`None`: no bound).
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteRules {
    /// `webhooks.max_per_database`.
    pub max_webhooks: Option<usize>,
}

/// One write, on behalf of `actor` (a person of database `db`).
#[derive(Debug, Clone)]
pub struct WriteRequest {
    pub db: String,
    pub actor: String,
    pub op: WriteOp,
    /// Set when the client may repeat the write: applied once, recorded.
    pub idempotency: Option<IdempotencyKey>,
}

#[derive(Debug, Clone)]
pub enum WriteOp {
    CreateEntity {
        values: Vec<ValueInput>,
    },
    AddValues {
        entity_id: String,
        values: Vec<ValueInput>,
    },
    DeleteValue {
        value_id: String,
    },
    DeleteEntity {
        entity_id: String,
    },
    /// Copies of an entity, created as `CreateEntity` creates one.
    DuplicateEntity(Duplication),
    /// An entity's values as they were at `at` (`None`: the moment before
    /// its deletion); a deleted entity is undeleted.
    Restore {
        entity_id: String,
        at: Option<chrono::DateTime<chrono::Utc>>,
    },
    /// Re-computes an entity's formulas and those of entities depending on it.
    Aggregate {
        entity_id: String,
    },
    /// Uses up the pending invitation `invitation`, if any, on person
    /// `entity_id` (the request's actor) and stores `login` on it. Only the
    /// service sends it: after checking the invitation token, or for a
    /// signed-in person adding a passkey to themselves.
    LinkLogin {
        entity_id: String,
        invitation: Option<String>,
        login: Option<crate::auth::login::Login>,
    },
    /// Creates the request's actor, a person of type `person_type` holding
    /// `login`, under `parent` (the database's `add_user` entity). Only the
    /// service sends it, for a login's first sign-in to the database.
    AddUser {
        parent: String,
        person_type: String,
        login: crate::auth::login::Login,
    },
    /// Operations applied in order, all or nothing (`batch_ops.rs`).
    Batch(Batch),
}

/// What a write did. Recorded (as JSON) for a write sent with an
/// idempotency key, and read back for its repeats.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum WriteOutcome {
    /// Values written on an entity, in the order they were given.
    Written {
        entity_id: String,
        values: Vec<WrittenValue>,
    },
    Deleted,
    /// Formulas re-computed; `queued` other entities were re-computed with it.
    Aggregated {
        queued: usize,
    },
    /// Copies of an entity, each as a `Written`, in order.
    Copies(Vec<WriteOutcome>),
    /// A batch's operations' outcomes, in order, and the ids its `$name`s took.
    Batched {
        results: Vec<WriteOutcome>,
        refs: std::collections::BTreeMap<String, String>,
        dry_run: bool,
    },
    /// A repeat of a write sent with an idempotency key: what the first
    /// write did (without any API key's plain text), and nothing written now.
    Replayed(Box<WriteOutcome>),
}

impl WriteOutcome {
    /// What the write did, a repeat's first write included.
    pub fn first(self) -> WriteOutcome {
        match self {
            WriteOutcome::Replayed(first) => first.first(),
            outcome => outcome,
        }
    }
}

/// One value a write stored.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WrittenValue {
    /// The value as stored (an API key's hash never leaves the database).
    pub row: ValueRow,
    /// A new API key in plain text: the only time it is ever shown (never
    /// recorded, so a repeat of the write shows it masked).
    #[serde(skip)]
    pub plain_key: Option<String>,
}

impl WrittenValue {
    /// The rows a write stored, in order, each new API key with its plain
    /// text (`plain_keys`, by value id).
    fn all(rows: &[ValueRecord], mut plain_keys: HashMap<String, String>) -> Vec<WrittenValue> {
        rows.iter()
            .map(|row| WrittenValue {
                row: ValueRow::from(row),
                plain_key: plain_keys.remove(&row.id),
            })
            .collect()
    }
}

/// Applies one write in its own transaction, outside any writer actor.
pub async fn apply(pool: &Pool, request: WriteRequest) -> Result<WriteOutcome, ApiError> {
    let keys = keys::prepare_keys(pool, &request).await?;
    let mut known = WriterCache::default();
    apply_batch(pool, vec![(request, keys, tracing::Span::current())], &mut known)
        .await
        .pop()
        .unwrap_or_else(|| Err(ApiError::internal("write", "no outcome")))
}

/// Applies writes, each with the API keys it asks for
/// ([`keys::prepare_keys`]), in order in one transaction (group commit: one
/// commit, and one wait for the disk, for the whole batch). A refused write
/// leaves no trace and does not disturb the others. Answers one outcome per
/// request, in order. Each write runs (and logs) under the span it came with.
/// What the writer learned in its earlier transactions (`known`) is reused
/// while still true, and holds what this batch learned when it commits.
///
/// A connection that breaks before COMMIT (PostgreSQL restarting, a
/// terminated backend) wrote nothing: the batch runs once more on a fresh
/// one. One that breaks during COMMIT leaves the outcome unknown: each write
/// answers 503 `database_unavailable`, and a client's repeat with its
/// idempotency key is then safe. A batch PostgreSQL rolled back for a
/// deadlock runs again too, a few times, before its writes answer 503
/// `write_conflict`.
pub async fn apply_batch(
    pool: &Pool,
    batch: Vec<(WriteRequest, Vec<GeneratedKey>, Span)>,
    known: &mut WriterCache,
) -> Vec<Result<WriteOutcome, ApiError>> {
    apply_batch_under(pool, &batch, known, WriteRules::default()).await
}

/// [`apply_batch`] under a writer's `rules`.
pub async fn apply_batch_under(
    pool: &Pool,
    batch: &[(WriteRequest, Vec<GeneratedKey>, Span)],
    known: &mut WriterCache,
    rules: WriteRules,
) -> Vec<Result<WriteOutcome, ApiError>> {
    const CONFLICT_RUNS: u32 = 3;
    let mut applied = match pool.get().await {
        Ok(mut conn) => apply_on(&mut conn, batch, known, rules).await,
        Err(error) => Err(batch::Failed::NoConnection(error.into())),
    };
    let (mut reconnected, mut conflicted_runs) = (false, 1);
    loop {
        let rerun = match &applied {
            Err(failed) => failed.rerun(),
            Ok(_) => None,
        };
        applied = match rerun {
            Some(batch::Rerun::LostConnection) if !reconnected => {
                tracing::warn!("the database connection broke before COMMIT; running the writes again on a new one");
                reconnected = true;
                // a new connection: others in the pool may have broken with it
                match crate::db::new_connection(pool).await {
                    Ok(mut conn) => apply_on(&mut conn, batch, known, rules).await,
                    Err(error) => Err(batch::Failed::NoConnection(error)),
                }
            }
            Some(batch::Rerun::Conflict) if conflicted_runs < CONFLICT_RUNS => {
                tracing::warn!("the writes met another transaction in a deadlock; running them again");
                conflicted_runs += 1;
                match pool.get().await {
                    Ok(mut conn) => apply_on(&mut conn, batch, known, rules).await,
                    Err(error) => Err(batch::Failed::NoConnection(error.into())),
                }
            }
            _ => break,
        };
    }
    match applied {
        Ok(outcomes) => outcomes,
        Err(failed) => vec![Err(failed.into_error()); batch.len()],
    }
}

/// [`apply_batch`] on one connection. Most batches pass whole: they run
/// without the cost of a savepoint per write, and only when one is refused
/// run again, each isolated (never after COMMIT was sent: it may have
/// stored them). A single write never needs one: its refusal is the batch's.
async fn apply_on(
    conn: &mut AsyncPgConnection,
    batch: &[(WriteRequest, Vec<GeneratedKey>, Span)],
    known: &mut WriterCache,
    rules: WriteRules,
) -> Result<Vec<Result<WriteOutcome, ApiError>>, batch::Failed> {
    match batch::run_batch(conn, batch, false, known, rules).await {
        Err(failed) if batch.len() > 1 && failed.refused() => batch::run_batch(conn, batch, true, known, rules).await,
        result => result,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_new_api_key_comes_back_with_its_own_value_only() {
        let row = |id: &str, prop: &str| ValueRecord {
            id: id.into(),
            prop: prop.into(),
            ..ValueRecord::default()
        };
        let rows = [
            row("v1", "title"),
            row("v2", "service_api_key"),
            row("v3", "service_api_key"),
        ];
        let plain_keys = HashMap::from([("v3".to_owned(), "k3".to_owned()), ("v2".to_owned(), "k2".to_owned())]);
        let written: Vec<(String, Option<String>)> = WrittenValue::all(&rows, plain_keys)
            .into_iter()
            .map(|value| (value.row.id, value.plain_key))
            .collect();
        assert_eq!(
            written,
            [
                ("v1".to_owned(), None),
                ("v2".to_owned(), Some("k2".to_owned())),
                ("v3".to_owned(), Some("k3".to_owned()))
            ]
        );
    }
}
