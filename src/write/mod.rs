//! Writes: validation, rights, the values and the re-projection, all in one
//! transaction. The per-database writer actor runs these in order; the entity
//! row lock taken first keeps them correct across processes too.
//!
//! - [`batch`]: transactions, group commit, the savepoint retry and the
//!   per-transaction cache;
//! - [`create`], [`add`], [`delete`], [`aggregate`]: the operations;
//! - [`validate`]: values against rights and definitions; [`replaced`]: what
//!   a write replaces, and the last-`_owner` rule; [`counters`]: numbering;
//! - [`access`]: who may write at all; [`keys`]: API keys, hashed before a
//!   write's turn.

mod access;
mod add;
mod aggregate;
mod batch;
mod counters;
mod create;
mod delete;
pub mod keys;
mod replaced;
pub mod validate;

use std::collections::HashMap;

use serde_json::Value as Json;
use tracing::Span;

use crate::auth::api_key::GeneratedKey;
use crate::db::Pool;
use crate::db::values::{NewValue, ValueRow};
use crate::error::ApiError;
use crate::model::value::ValueInput;
use crate::view;

/// One write, on behalf of `actor` (a person of database `db`).
#[derive(Debug, Clone)]
pub struct WriteRequest {
    pub db: String,
    pub actor: String,
    pub op: WriteOp,
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
    /// Re-computes an entity's formulas and those of entities depending on it.
    Aggregate {
        entity_id: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum WriteOutcome {
    /// Values written on an entity; `values` as the creation response shows them.
    Written {
        entity_id: String,
        values: Vec<Json>,
    },
    Deleted,
    /// Formulas re-computed; `queued` other entities were re-computed with it.
    Aggregated {
        queued: usize,
    },
}

/// Applies one write in its own transaction, outside any writer actor.
pub async fn apply(pool: &Pool, request: WriteRequest) -> Result<WriteOutcome, ApiError> {
    let keys = keys::prepare_keys(pool, &request).await?;
    apply_batch(pool, vec![(request, keys, tracing::Span::current())])
        .await
        .pop()
        .unwrap_or_else(|| Err(ApiError::internal("write", "no outcome")))
}

/// Applies writes, each with the API keys it asks for
/// ([`keys::prepare_keys`]), in order in one transaction (group commit: one
/// commit, and one wait for the disk, for the whole batch). A refused write
/// leaves no trace and does not disturb the others. Answers one outcome per
/// request, in order. Each write runs (and logs) under the span it came with.
pub async fn apply_batch(
    pool: &Pool,
    batch: Vec<(WriteRequest, Vec<GeneratedKey>, Span)>,
) -> Vec<Result<WriteOutcome, ApiError>> {
    let applied = match pool.get().await {
        // Most batches pass whole: try without the cost of a savepoint per
        // write, and only when one is refused run them again, each isolated.
        Ok(mut conn) => match batch::run_batch(&mut conn, &batch, batch.len() == 1).await {
            Err(_) if batch.len() > 1 => batch::run_batch(&mut conn, &batch, true).await,
            result => result,
        },
        Err(error) => Err(error.into()),
    };
    match applied {
        Ok(outcomes) => outcomes,
        Err(error) => vec![Err(error); batch.len()],
    }
}

/// The written values as the response shows them: with `type`, and a new API
/// key in plain text (the only time it is ever shown).
fn response_values(rows: &[NewValue], plain_keys: &HashMap<String, String>) -> Vec<Json> {
    rows.iter()
        .map(|row| {
            let mut value = view::stored_value_json(&ValueRow::from(row));
            value.insert("type".into(), Json::String(row.prop.clone()));
            if let Some(plain) = plain_keys.get(&row.id) {
                value.insert("string".into(), Json::String(plain.clone()));
            }
            Json::Object(value)
        })
        .collect()
}
