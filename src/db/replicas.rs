//! The SQL of read replicas: commit positions (WAL LSNs as byte offsets) on
//! the primary, how far a streaming standby has replayed, and the
//! notification that tells every process of a database's rights change.

use diesel::sql_types::{BigInt, Nullable, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use super::Pool;
use crate::error::ApiError;

/// The channel a rights change is announced on; the payload is
/// `POSITION DATABASE`.
pub const RIGHTS_CHANNEL: &str = "eds_rights";

#[derive(diesel::QueryableByName)]
struct Position {
    #[diesel(sql_type = BigInt)]
    position: i64,
}

/// The primary's WAL written so far: what its standbys can have replayed.
pub async fn current_position(conn: &mut AsyncPgConnection) -> Result<u64, ApiError> {
    let found: Position = diesel::sql_query("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint AS position")
        .get_result(conn)
        .await?;
    Ok(found.position as u64)
}

/// The position after the writes a writer just committed, or `None` when it
/// cannot be read (the write stands; its answer then carries no position).
/// The insert position, not the written one: with asynchronous commit the
/// WAL written may still end before the commit's record.
pub async fn commit_position(pool: &Pool) -> Option<u64> {
    let position = async {
        let found: Position =
            diesel::sql_query("SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint AS position")
                .get_result(&mut *pool.get().await?)
                .await?;
        Ok::<_, ApiError>(found.position as u64)
    }
    .await;
    position
        .inspect_err(|error| tracing::warn!(%error, "reading the commit position failed"))
        .ok()
}

/// How far a standby is: the position it has replayed (`None` on a server
/// that is not a standby) and the age of its last replayed commit.
#[derive(diesel::QueryableByName, Debug, Clone, Copy)]
pub struct Replay {
    #[diesel(sql_type = Nullable<BigInt>)]
    pub replayed: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub commit_age_ms: Option<i64>,
}

/// Where the standby behind `conn` stands.
pub async fn replay(conn: &mut AsyncPgConnection) -> Result<Replay, ApiError> {
    Ok(diesel::sql_query(
        "SELECT (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint AS replayed, \
         (extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp()) * 1000)::bigint AS commit_age_ms",
    )
    .get_result(conn)
    .await?)
}

/// Tells every process (through `NOTIFY`) that database `db`'s rights
/// changed at `position`.
pub async fn announce_rights_change(pool: &Pool, db: &str, position: u64) -> Result<(), ApiError> {
    diesel::sql_query("SELECT pg_notify($1, $2)")
        .bind::<Text, _>(RIGHTS_CHANNEL)
        .bind::<Text, _>(format!("{position} {db}"))
        .execute(&mut *pool.get().await?)
        .await?;
    Ok(())
}

/// The database and position of a rights change's notification payload.
pub fn parse_rights_change(payload: &str) -> Option<(&str, u64)> {
    let (position, db) = payload.split_once(' ')?;
    Some((db, position.parse().ok()?))
}
