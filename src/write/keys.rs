//! API keys a write asks for: generated and hashed before the write's turn,
//! and only by a caller who may add them.

use diesel_async::AsyncPgConnection;

use super::access::{self, Reach};
use super::batch_request::{Batch, BatchOp, EntityId};
use super::{WriteOp, WriteRequest};
use crate::auth::api_key::{self, GeneratedKey};
use crate::db::Pool;
use crate::error::ApiError;
use crate::model::API_KEY_PROPERTY;
use crate::rights::Right;

/// API keys one write may ask for: each costs a deliberately slow hash.
pub const MAX_KEYS_PER_WRITE: usize = 10;

/// API keys asked for by the write, generated before it is applied because
/// hashing is slow: off the async workers, and never in a writer's turn. A
/// caller who may not add them is refused first (read-only, on a pooled
/// connection) so that a refused write costs no hashing; the transaction
/// checks again, under the entity's lock.
pub async fn prepare_keys(pool: &Pool, request: &WriteRequest) -> Result<Vec<GeneratedKey>, ApiError> {
    let (entity_id, values) = match &request.op {
        WriteOp::Batch(batch) => return prepare_batch_keys(pool, &request.db, &request.actor, batch).await,
        WriteOp::CreateEntity { values } => (None, values),
        WriteOp::AddValues { entity_id, values } => (Some(entity_id), values),
        _ => return Ok(Vec::new()),
    };
    let wanted = values.iter().filter(|v| v.prop == API_KEY_PROPERTY).count();
    if wanted == 0 {
        return Ok(Vec::new());
    }
    {
        let mut conn = pool.get().await?;
        access::require_person(&mut conn, &request.db, &request.actor).await?;
        // a new entity is its creator's: they may add keys to it
        if let Some(entity_id) = entity_id {
            may_add_keys(&mut conn, &request.db, &request.actor, entity_id).await?;
        }
    }
    generate(wanted).await
}

/// The API keys a batch asks for, generated before its turn as a single
/// write's are: each operation adding keys to an existing entity is checked
/// first, so a refused batch costs no hashing. A new entity is its
/// creator's: they may add keys to it.
async fn prepare_batch_keys(pool: &Pool, db: &str, actor: &str, batch: &Batch) -> Result<Vec<GeneratedKey>, ApiError> {
    let wanted = batch
        .operations
        .iter()
        .flat_map(BatchOp::values)
        .filter(|v| v.prop == API_KEY_PROPERTY)
        .count();
    if wanted == 0 {
        return Ok(Vec::new());
    }
    {
        let mut conn = pool.get().await?;
        access::require_person(&mut conn, db, actor).await?;
        for (index, operation) in batch.operations.iter().enumerate() {
            if let BatchOp::Add {
                entity: EntityId::Id(entity_id),
                values,
                ..
            } = operation
                && values.iter().any(|v| v.prop == API_KEY_PROPERTY)
            {
                may_add_keys(&mut conn, db, actor, entity_id)
                    .await
                    .map_err(|error| error.in_operation(index))?;
            }
        }
    }
    generate(wanted).await
}

/// `wanted` new API keys, hashed off the async workers.
async fn generate(wanted: usize) -> Result<Vec<GeneratedKey>, ApiError> {
    tokio::task::spawn_blocking(move || (0..wanted).map(|_| api_key::generate()).collect())
        .await
        .map_err(|e| ApiError::internal("key generation failed", e))
}

/// What `add_values` and `check_property` answer a caller adding an API key:
/// 404 when they cannot see the entity, 403 unless they own it or are it.
async fn may_add_keys(conn: &mut AsyncPgConnection, db: &str, actor: &str, entity_id: &str) -> Result<(), ApiError> {
    let reach = Reach {
        sees_itself: true,
        ..Reach::READ
    };
    let entity = access::seen_entity(conn, db, actor, entity_id, reach).await?;
    if actor == entity_id {
        return Ok(());
    }
    access::require_right(
        &entity,
        actor,
        Right::Owner,
        format!("Missing rights to write {API_KEY_PROPERTY}"),
    )
}
