//! The durable queue of entity types whose entities must be re-projected in
//! the background: a change to a definition or to a type's sharing that lets
//! no fewer see anything, on a type with more entities than a write
//! re-projects itself ([`INLINE_MEMBERS`]). [`reproject_next`] re-projects
//! the next batch of one queued type in its own short transaction and
//! records how far it got, so a write to the database waits for at most one
//! batch, a restart resumes where it stopped, and any number of processes
//! share the work (`FOR UPDATE SKIP LOCKED`). A change that narrows who sees
//! what is re-projected in its own transaction instead (`projection::follow`),
//! so it holds at commit.

use std::collections::HashSet;

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Text};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

use crate::db::prepared::Prepared;
use crate::db::projection::{self, Followers, TypeCache};
use crate::db::schema::entities;
use crate::db::values::EntityRow;
use crate::db::{Pool, formula_queue, formulas};

/// Types with at most this many live entities have them re-projected by the
/// write that changed the type, one by one with what follows each.
pub const INLINE_MEMBERS: usize = 1000;

/// Entities re-projected per transaction.
pub const BATCH: usize = 1000;

/// Queues the entities of type `type_id` for re-projection, from the first.
pub async fn enqueue(conn: &mut AsyncPgConnection, db: &str, type_id: &str) -> QueryResult<()> {
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

#[derive(QueryableByName)]
struct Entry {
    #[diesel(sql_type = BigInt)]
    id: i64,
    #[diesel(sql_type = Text)]
    db: String,
    #[diesel(sql_type = Text)]
    type_id: String,
    #[diesel(sql_type = Text)]
    done_through: String,
    #[diesel(sql_type = Bool)]
    superseded: bool,
}

/// Re-projects the next batch of the oldest queued type no one else is
/// working on: those of its entities that read only their type in bulk,
/// and the rest (with the entities a write holds just now, and whatever
/// depends on the re-projected ones) through the formula queue, one at a
/// time with what follows each. Answers false when nothing was queued.
pub async fn reproject_next(conn: &mut AsyncPgConnection) -> QueryResult<bool> {
    conn.transaction(|conn| {
        async move {
            // Losing this commit in a crash only repeats the batch.
            diesel::sql_query("SET LOCAL synchronous_commit TO OFF")
                .execute(conn)
                .await?;
            let Some(entry) = Prepared::kept(diesel::sql_query(
                "SELECT q.id, q.db, q.type_id, q.done_through, EXISTS (SELECT 1 FROM type_reprojections n \
                 WHERE n.db = q.db AND n.type_id = q.type_id AND n.id > q.id) AS superseded \
                 FROM type_reprojections q ORDER BY q.id LIMIT 1 FOR UPDATE SKIP LOCKED",
            ))
            .get_result::<Entry>(conn)
            .await
            .optional()?
            else {
                return Ok(false);
            };
            let batch = if entry.superseded {
                // a later change to the type starts from the first entity
                Vec::new()
            } else {
                members_after(conn, &entry.db, &entry.type_id, &entry.done_through, BATCH).await?
            };
            let Some(last) = batch.last() else {
                Prepared::kept(
                    diesel::sql_query("DELETE FROM type_reprojections WHERE id = $1").bind::<BigInt, _>(entry.id),
                )
                .execute(conn)
                .await?;
                return Ok(true);
            };
            // Entities a write holds are left to the formula queue (which
            // waits for them one at a time): the batch is taken without
            // waiting for any writer, so it cannot deadlock with one.
            let locked = lock_free_of(conn, &entry.db, &batch).await?;
            let taken: HashSet<String> = locked.iter().map(|row| row.id.clone()).collect();
            let (mut later, followers) =
                projection::reproject_plain(conn, &mut TypeCache::default(), &entry.db, locked).await?;
            later.extend(batch.iter().filter(|id| !taken.contains(*id)).cloned());
            later.extend(to_reproject_after(conn, &entry.db, followers).await?);
            formula_queue::enqueue(conn, &entry.db, &later, 0).await?;
            Prepared::kept(
                diesel::sql_query("UPDATE type_reprojections SET done_through = $2 WHERE id = $1")
                    .bind::<BigInt, _>(entry.id)
                    .bind::<Text, _>(last),
            )
            .execute(conn)
            .await?;
            Ok(true)
        }
        .scope_boxed()
    })
    .await
}

/// [`reproject_next`] on a connection taken from `pool` for it, the error as
/// text for the worker's log.
pub async fn reproject_next_pooled(pool: Pool) -> Result<bool, String> {
    let mut conn = pool.get().await.map_err(|e| e.to_string())?;
    reproject_next(&mut conn).await.map_err(|e| e.to_string())
}

/// The rows of those of live entities `ids` that no other transaction
/// holds, locked.
async fn lock_free_of(conn: &mut AsyncPgConnection, db: &str, ids: &[String]) -> QueryResult<Vec<EntityRow>> {
    entities::table
        .filter(entities::db.eq(db))
        .filter(entities::id.eq_any(ids))
        .filter(entities::deleted_at.is_null())
        .order(entities::id)
        .select(EntityRow::as_select())
        .for_update()
        .skip_locked()
        .load(conn)
        .await
}

/// What must be re-projected after a bulk re-projection: entities whose
/// formulas read the changed ones (those reading the narrowed ones stripped
/// of their formula values at once), and referrers showing a changed name.
async fn to_reproject_after(conn: &mut AsyncPgConnection, db: &str, followers: Followers) -> QueryResult<Vec<String>> {
    let mut later = formulas::dependents(conn, db, &followers.read_changed, Vec::new()).await?;
    if !followers.narrowed.is_empty() {
        later.extend(formulas::strip(conn, db, followers.narrowed).await?);
    }
    later.extend(projection::referrers(conn, db, &followers.name_changed).await?);
    Ok(later)
}
