//! The administration commands behind `eds db list`, `eds db usage` and
//! `eds key revoke`: they act with the operator's authority, without a token.

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Text};
use diesel_async::RunQueryDsl;
use serde_json::Value as Json;

use crate::db::{Pool, databases, values};
use crate::model::API_KEY_PROPERTY;
use crate::rights::{Right, has_right};
use crate::usage::Usage;
use crate::write::{self, WriteOp, WriteRequest};

/// A command's failure: the one line printed on stderr.
#[derive(Debug)]
pub struct Failure(pub String);

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<Failure> for String {
    fn from(failure: Failure) -> String {
        failure.0
    }
}

impl From<diesel::result::Error> for Failure {
    fn from(error: diesel::result::Error) -> Failure {
        Failure(format!("database error: {error}"))
    }
}

impl From<diesel_async::pooled_connection::deadpool::PoolError> for Failure {
    fn from(error: diesel_async::pooled_connection::deadpool::PoolError) -> Failure {
        Failure(format!("cannot connect to PostgreSQL: {error}"))
    }
}

impl From<std::io::Error> for Failure {
    fn from(error: std::io::Error) -> Failure {
        Failure(error.to_string())
    }
}

/// One database and how many live entities it holds.
#[derive(Debug, QueryableByName)]
pub struct DatabaseCount {
    #[diesel(sql_type = Text)]
    pub database: String,
    #[diesel(sql_type = BigInt)]
    pub entities: i64,
}

/// Every database, by name, with its live entity count.
pub async fn list_databases(pool: &Pool) -> Result<Vec<DatabaseCount>, Failure> {
    let mut conn = pool.get().await?;
    Ok(diesel::sql_query(
        "SELECT d.name AS database, \
                count(e.id) FILTER (WHERE e.deleted_at IS NULL) AS entities \
         FROM databases d LEFT JOIN entities e ON e.db = d.name \
         GROUP BY d.name ORDER BY d.name",
    )
    .load(&mut conn)
    .await?)
}

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
        .of(pool, db)
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
    };
    write::apply(pool, request)
        .await
        .map(drop)
        .map_err(|e| Failure(format!("revoking {value_id}: {}", e.message)))
}
