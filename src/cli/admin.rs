//! The administration commands behind `eds db usage` and
//! `eds key revoke`: they act with the operator's authority, without a token.

use serde_json::Value as Json;

use crate::cli::Failure;
use crate::db::databases;
use crate::db::placement::Clusters;
use crate::db::{Pool, values};
use crate::model::API_KEY_PROPERTY;
use crate::rights::{Right, has_right};
use crate::usage::Usage;
use crate::write::{self, WriteOp, WriteRequest};

/// Fails unless database `db` exists.
pub async fn require_database(pool: &Pool, db: &str) -> Result<(), Failure> {
    let mut conn = pool.get().await?;
    if databases::exists(&mut conn, db).await? {
        Ok(())
    } else {
        Err(Failure(format!("database {db} not found")))
    }
}

/// The usage object `GET /api/{db}` answers, computed now.
pub async fn usage(pool: &Pool, db: &str) -> Result<Json, Failure> {
    require_database(pool, db).await?;
    let usage = Usage::default()
        // `pool` is the database's own cluster's
        .of(&Clusters::new("", pool.clone(), 1, 0), db)
        .await
        .map_err(|e| Failure(format!("usage of {db}: {}", e.message)))?;
    Ok(serde_json::to_value(usage).expect("the usage object serializes"))
}

/// Soft-deletes API key `value_id` through the ordinary write path, so its
/// history and its entity's projection come out as after an API delete. The
/// deletion is recorded as made by the key's entity when it may edit itself,
/// otherwise by one of the entity's owners.
pub async fn revoke_key(pool: &Pool, db: &str, value_id: &str) -> Result<(), Failure> {
    require_database(pool, db).await?;
    let not_a_key = || Failure(format!("{value_id} is not a live {API_KEY_PROPERTY} value in {db}"));
    let mut conn = pool.get().await?;
    let key = values::find_value(&mut conn, db, value_id)
        .await?
        .filter(|key| key.prop == API_KEY_PROPERTY && key.deleted_at.is_none())
        .ok_or_else(not_a_key)?;
    let entity = values::live_entity(&mut conn, db, &key.entity_id, false)
        .await?
        .ok_or_else(not_a_key)?;
    let lists = entity.lists();
    let mut candidates = Vec::new();
    if has_right(&lists, &key.entity_id, Right::Editor) {
        candidates.push(key.entity_id.clone());
    }
    candidates.extend(lists.owners.iter().cloned());
    let mut actor = None;
    for candidate in candidates {
        if values::entity_exists(&mut conn, db, &candidate).await? {
            actor = Some(candidate);
            break;
        }
    }
    let actor = actor.ok_or_else(|| {
        Failure(format!(
            "entity {} has no live owner to record the revocation as",
            key.entity_id
        ))
    })?;
    drop(conn);
    let request = WriteRequest {
        db: db.to_owned(),
        actor,
        op: WriteOp::DeleteValue {
            value_id: value_id.to_owned(),
        },
        idempotency: None,
    };
    write::apply(pool, request)
        .await
        .map(drop)
        .map_err(|e| Failure(format!("revoking {value_id}: {}", e.message)))
}
