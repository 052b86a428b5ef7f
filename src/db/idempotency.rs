//! Writes sent with an `Idempotency-Key`: what each stored, recorded in the
//! write's own transaction and kept 24 hours (`idempotent_writes`).

use chrono::{DateTime, Duration, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value as Json;

use crate::db::schema::idempotent_writes as recorded;

/// How long a key answers its first outcome.
pub const KEPT_FOR: Duration = Duration::hours(24);

/// A write recorded under a key: the request it was and what it stored.
#[derive(Queryable)]
pub struct Recorded {
    pub fingerprint: String,
    pub outcome: Json,
}

/// What was recorded under `key` of `caller` in `db` within [`KEPT_FOR`].
/// Writes run under the database's write lock, so a repeat arriving on
/// another process while the first runs waits for it and then finds this.
pub async fn recorded(
    conn: &mut AsyncPgConnection,
    db: &str,
    caller: &str,
    key: &str,
    now: DateTime<Utc>,
) -> QueryResult<Option<Recorded>> {
    recorded::table
        .filter(recorded::db.eq(db))
        .filter(recorded::caller.eq(caller))
        .filter(recorded::key.eq(key))
        .filter(recorded::created_at.gt(now - KEPT_FOR))
        .select((recorded::fingerprint, recorded::outcome))
        .first(conn)
        .await
        .optional()
}

/// Records what the write under `key` stored (replacing an expired record).
pub async fn record(
    conn: &mut AsyncPgConnection,
    db: &str,
    caller: &str,
    key: &str,
    fingerprint: &str,
    outcome: &Json,
    now: DateTime<Utc>,
) -> QueryResult<()> {
    diesel::insert_into(recorded::table)
        .values((
            recorded::db.eq(db),
            recorded::caller.eq(caller),
            recorded::key.eq(key),
            recorded::fingerprint.eq(fingerprint),
            recorded::outcome.eq(outcome),
            recorded::created_at.eq(now),
        ))
        .on_conflict((recorded::db, recorded::caller, recorded::key))
        .do_update()
        .set((
            recorded::fingerprint.eq(fingerprint),
            recorded::outcome.eq(outcome),
            recorded::created_at.eq(now),
        ))
        .execute(conn)
        .await
        .map(drop)
}

/// Deletes the records past [`KEPT_FOR`].
pub async fn sweep(conn: &mut AsyncPgConnection, now: DateTime<Utc>) -> QueryResult<usize> {
    diesel::delete(recorded::table.filter(recorded::created_at.le(now - KEPT_FOR)))
        .execute(conn)
        .await
}
