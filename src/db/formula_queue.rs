//! The durable queue of entities whose formulas must be computed again: a
//! write queues the entities that read what it changed, in its own
//! transaction; [`compute_next`] takes one entity off the queue and
//! re-projects it, in one transaction, so a crash loses nothing. Any number of
//! processes may drain it at once (`FOR UPDATE SKIP LOCKED`).

use diesel::prelude::*;
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

use crate::db::projection::{self, TypeCache};
use crate::db::schema::formula_queue;
use crate::db::values;

/// Re-computations in a row after one write: a cycle of formulas that never
/// settles (each pass changing the next) is cut here.
pub const MAX_HOPS: i32 = 16;

/// Queues `entities` of database `db`, `hops` re-computations after a write.
pub async fn enqueue(conn: &mut AsyncPgConnection, db: &str, entities: &[String], hops: i32) -> QueryResult<()> {
    if entities.is_empty() {
        return Ok(());
    }
    if hops > MAX_HOPS {
        tracing::warn!(
            db,
            entities = entities.len(),
            "formulas still changing after {MAX_HOPS} passes: stopped"
        );
        return Ok(());
    }
    let rows: Vec<_> = entities
        .iter()
        .map(|entity| {
            (
                formula_queue::db.eq(db),
                formula_queue::entity_id.eq(entity),
                formula_queue::hops.eq(hops),
            )
        })
        .collect();
    diesel::insert_into(formula_queue::table)
        .values(rows)
        .execute(conn)
        .await
        .map(|_| ())
}

/// Entries waiting, all databases together.
pub async fn pending(conn: &mut AsyncPgConnection) -> QueryResult<i64> {
    formula_queue::table.count().get_result(conn).await
}

/// Takes the oldest queued entity no one else is computing, re-projects it and
/// queues what depends on it; answers false when there was nothing to take.
pub async fn compute_next(conn: &mut AsyncPgConnection) -> QueryResult<bool> {
    conn.transaction(|conn| {
        async move {
            // Losing this commit in a crash loses its dequeue with it: the
            // entity is simply computed again, so no need to wait for the disk.
            diesel::sql_query("SET LOCAL synchronous_commit TO OFF")
                .execute(conn)
                .await?;
            let Some((db, entity_id)) = formula_queue::table
                .order(formula_queue::id)
                .select((formula_queue::db, formula_queue::entity_id))
                .for_update()
                .skip_locked()
                .first::<(String, String)>(conn)
                .await
                .optional()?
            else {
                return Ok(false);
            };
            // every entry of that entity at once: one computation serves them all
            #[derive(QueryableByName)]
            struct Claimed {
                #[diesel(sql_type = diesel::sql_types::Integer)]
                hops: i32,
            }
            let hops: Vec<Claimed> = diesel::sql_query(
                "DELETE FROM formula_queue WHERE id IN (SELECT id FROM formula_queue \
                 WHERE db = $1 AND entity_id = $2 FOR UPDATE SKIP LOCKED) RETURNING hops",
            )
            .bind::<diesel::sql_types::Text, _>(&db)
            .bind::<diesel::sql_types::Text, _>(&entity_id)
            .load(conn)
            .await?;
            let hops = hops.into_iter().map(|claimed| claimed.hops).min().unwrap_or(0);
            // The only lock held while waiting for the entity's: a write never
            // waits for a queue entry, so this cannot deadlock with writers.
            if values::live_entity(conn, &db, &entity_id, true).await?.is_some() {
                projection::project_after(conn, &mut TypeCache::default(), &db, &entity_id, hops).await?;
            }
            Ok(true)
        }
        .scope_boxed()
    })
    .await
}
