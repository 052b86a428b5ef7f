//! The durable queue of entity types whose entities must be re-projected in
//! the background: a change to a definition or to a type's sharing that lets
//! no fewer see anything, on a type with more entities than a write
//! re-projects itself ([`INLINE_MEMBERS`]). A job (`jobs::reprojection`)
//! re-projects the next batch of one queued type in its own short
//! transaction and records how far it got, so a write to the database waits for at most one
//! batch, a restart resumes where it stopped, and any number of processes
//! share the work (`FOR UPDATE SKIP LOCKED`). A change that narrows who sees
//! what is re-projected in its own transaction instead (`projection::follow`),
//! so it holds at commit.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::db::prepared::Prepared;

/// Types with at most this many live entities have them re-projected by the
/// write that changed the type, one by one with what follows each.
pub const INLINE_MEMBERS: usize = 1000;

/// Entities re-projected per transaction.
pub const BATCH: usize = 1000;

/// Queues the entities of type `type_id` for re-projection, from the first.
pub async fn enqueue(conn: &mut AsyncPgConnection, db: &str, type_id: &str) -> QueryResult<()> {
    super::queued_work::note();
    Prepared::kept(
        diesel::sql_query("INSERT INTO type_reprojections (db, type_id) VALUES ($1, $2)")
            .bind::<Text, _>(db)
            .bind::<Text, _>(type_id),
    )
    .execute(conn)
    .await
    .map(|_| ())
}

/// Types waiting for (or under) re-projection, all databases together.
pub async fn pending(conn: &mut AsyncPgConnection) -> QueryResult<i64> {
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        count: i64,
    }
    let found: Count = diesel::sql_query("SELECT count(*) AS count FROM type_reprojections")
        .get_result(conn)
        .await?;
    Ok(found.count)
}

/// Up to `limit` live entities of type `type_id` with ids after `after`, in id order.
pub async fn members_after(
    conn: &mut AsyncPgConnection,
    db: &str,
    type_id: &str,
    after: &str,
    limit: usize,
) -> QueryResult<Vec<String>> {
    #[derive(QueryableByName)]
    struct Id {
        #[diesel(sql_type = Text)]
        id: String,
    }
    let found: Vec<Id> = Prepared::kept(
        diesel::sql_query(
            "SELECT id FROM entities WHERE db = $1 AND type_id = $2 AND deleted_at IS NULL AND id > $3 \
             ORDER BY id LIMIT $4",
        )
        .bind::<Text, _>(db)
        .bind::<Text, _>(type_id)
        .bind::<Text, _>(after)
        .bind::<BigInt, _>(i64::try_from(limit).unwrap_or(i64::MAX)),
    )
    .load(conn)
    .await?;
    Ok(found.into_iter().map(|row| row.id).collect())
}

/// A type taken off the queue, locked by the caller's transaction.
#[derive(QueryableByName)]
pub struct QueuedType {
    #[diesel(sql_type = BigInt)]
    pub id: i64,
    #[diesel(sql_type = Text)]
    pub db: String,
    #[diesel(sql_type = Text)]
    pub type_id: String,
    /// The last entity re-projected so far.
    #[diesel(sql_type = Text)]
    pub done_through: String,
    /// Whether the type was queued again since: re-projected from the first.
    #[diesel(sql_type = Bool)]
    pub superseded: bool,
}

/// Takes the oldest queued type no one else is working on, locked by the
/// caller's transaction; `None` when nothing is queued.
pub async fn take(conn: &mut AsyncPgConnection) -> QueryResult<Option<QueuedType>> {
    // Losing this commit in a crash only repeats the batch.
    diesel::sql_query("SET LOCAL synchronous_commit TO OFF")
        .execute(conn)
        .await?;
    Prepared::kept(diesel::sql_query(
        "SELECT q.id, q.db, q.type_id, q.done_through, EXISTS (SELECT 1 FROM type_reprojections n \
         WHERE n.db = q.db AND n.type_id = q.type_id AND n.id > q.id) AS superseded \
         FROM type_reprojections q ORDER BY q.id LIMIT 1 FOR UPDATE SKIP LOCKED",
    ))
    .get_result(conn)
    .await
    .optional()
}

/// Records that the entities of queued type `id` through `last` are re-projected.
pub async fn advance(conn: &mut AsyncPgConnection, id: i64, last: &str) -> QueryResult<()> {
    Prepared::kept(
        diesel::sql_query("UPDATE type_reprojections SET done_through = $2 WHERE id = $1")
            .bind::<BigInt, _>(id)
            .bind::<Text, _>(last),
    )
    .execute(conn)
    .await
    .map(drop)
}

/// Removes queued type `id`: all its entities are re-projected.
pub async fn finish(conn: &mut AsyncPgConnection, id: i64) -> QueryResult<()> {
    Prepared::kept(diesel::sql_query("DELETE FROM type_reprojections WHERE id = $1").bind::<BigInt, _>(id))
        .execute(conn)
        .await
        .map(drop)
}
