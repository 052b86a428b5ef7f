//! The durable queue of entities whose formulas must be computed again: a
//! write queues the entities that read what it changed, in its own
//! transaction; [`compute_next`] takes one entity off the queue and
//! re-projects it, in one transaction, so a crash loses nothing. Any number of
//! processes may drain it at once (`FOR UPDATE SKIP LOCKED`). An entry whose
//! computation fails is retried later and, after [`Retry::attempts`]
//! failures, parked: kept, but no longer taken, so it never holds up others.

use std::time::Duration;

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Bool, Integer, Text};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

use crate::db::Pool;
use crate::db::projection::{self, TypeCache};
use crate::db::schema::formula_queue;
use crate::db::values;

/// Formula recomputation passes along a chain of dependents after one write
/// (the queue's `hops` column counts them): a cycle of formulas that never
/// settles (each pass changing the next) is cut here.
pub const MAX_FORMULA_PASSES: i32 = 16;

/// How an entry whose computation fails is retried.
#[derive(Debug, Clone, Copy)]
pub struct Retry {
    /// Computations tried in all before the entry is parked.
    pub attempts: u32,
    /// Wait after the first failure, doubled after each further one.
    pub backoff: Duration,
}

impl Default for Retry {
    /// The defaults of `actors.formula_attempts` and `actors.formula_retry_ms`.
    fn default() -> Retry {
        Retry {
            attempts: 5,
            backoff: Duration::from_secs(1),
        }
    }
}

/// Queues `entities` of database `db` for recomputation pass `pass` after a write.
/// One statement with one array, whatever their number: a row per bind
/// parameter would fail past PostgreSQL's 65,535.
pub async fn enqueue(conn: &mut AsyncPgConnection, db: &str, entities: &[String], pass: i32) -> QueryResult<()> {
    if entities.is_empty() {
        return Ok(());
    }
    if pass > MAX_FORMULA_PASSES {
        tracing::warn!(
            db,
            entities = entities.len(),
            "formulas still changing after {MAX_FORMULA_PASSES} passes: stopped"
        );
        return Ok(());
    }
    diesel::sql_query("INSERT INTO formula_queue (db, entity_id, hops) SELECT $1, unnest($2::text[]), $3")
        .bind::<Text, _>(db)
        .bind::<Array<Text>, _>(entities)
        .bind::<Integer, _>(pass)
        .execute(conn)
        .await
        .map(|_| ())
}

/// Entries waiting to be computed (parked ones left out), all databases together.
pub async fn pending(conn: &mut AsyncPgConnection) -> QueryResult<i64> {
    formula_queue::table
        .filter(formula_queue::parked_at.is_null())
        .count()
        .get_result(conn)
        .await
}

/// Entries parked after failing every attempt, all databases together.
pub async fn parked(conn: &mut AsyncPgConnection) -> QueryResult<i64> {
    formula_queue::table
        .filter(formula_queue::parked_at.is_not_null())
        .count()
        .get_result(conn)
        .await
}

/// Removes the parked entries of entity `id`, just re-computed by its
/// caller's transaction. Entries another transaction holds are left to it
/// (it computes them), so this never waits.
pub async fn forget_parked(conn: &mut AsyncPgConnection, db: &str, id: &str) -> QueryResult<usize> {
    diesel::sql_query(
        "DELETE FROM formula_queue WHERE id IN (SELECT id FROM formula_queue \
         WHERE db = $1 AND entity_id = $2 AND parked_at IS NOT NULL FOR UPDATE SKIP LOCKED)",
    )
    .bind::<Text, _>(db)
    .bind::<Text, _>(id)
    .execute(conn)
    .await
}

/// Takes the oldest due, unparked entity no one else is computing,
/// re-projects it and queues what depends on it; answers false when there was
/// nothing to take. A failed computation is undone and recorded on the
/// entries (next attempt, or parked) in the same transaction.
pub async fn compute_next(conn: &mut AsyncPgConnection, retry: Retry) -> QueryResult<bool> {
    conn.transaction(|conn| {
        async move {
            // Losing this commit in a crash loses its dequeue with it: the
            // entity is simply computed again, so no need to wait for the disk.
            diesel::sql_query("SET LOCAL synchronous_commit TO OFF")
                .execute(conn)
                .await?;
            let Some((db, entity_id)) = formula_queue::table
                .filter(formula_queue::parked_at.is_null())
                .filter(
                    formula_queue::not_before
                        .is_null()
                        .or(formula_queue::not_before.le(diesel::dsl::now)),
                )
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
            // every entry of that entity at once: one computation serves them
            // all, parked ones too; locked here, outside the savepoint below,
            // so they stay ours when it is rolled back
            let claimed: Vec<(i64, i32)> = formula_queue::table
                .filter(formula_queue::db.eq(&db))
                .filter(formula_queue::entity_id.eq(&entity_id))
                .select((formula_queue::id, formula_queue::hops))
                .for_update()
                .skip_locked()
                .load(conn)
                .await?;
            let ids: Vec<i64> = claimed.iter().map(|(id, _)| *id).collect();
            let pass = claimed.iter().map(|(_, pass)| *pass).min().unwrap_or(0);
            let (ids, db, entity_id) = (&ids, db.as_str(), entity_id.as_str());
            let computed = conn
                .transaction(|conn| {
                    async move {
                        diesel::delete(formula_queue::table.filter(formula_queue::id.eq_any(ids)))
                            .execute(conn)
                            .await?;
                        // The only lock held while waiting for the entity's: a
                        // write never waits for a queue entry, so this cannot
                        // deadlock with writers.
                        if values::live_entity(conn, db, entity_id, true).await?.is_some() {
                            projection::project_after(conn, &mut TypeCache::default(), db, entity_id, pass).await?;
                        }
                        QueryResult::Ok(())
                    }
                    .scope_boxed()
                })
                .await;
            if let Err(error) = computed {
                record_failure(conn, db, entity_id, ids, retry, &error).await?;
            }
            Ok(true)
        }
        .scope_boxed()
    })
    .await
}

/// [`compute_next`] on a connection taken from `pool` for it, the error as
/// text for the worker's log.
pub async fn compute_next_pooled(pool: Pool, retry: Retry) -> Result<bool, String> {
    let mut conn = pool.get().await.map_err(|e| e.to_string())?;
    compute_next(&mut conn, retry).await.map_err(|e| e.to_string())
}

#[derive(QueryableByName)]
struct Failed {
    #[diesel(sql_type = Integer)]
    attempts: i32,
    #[diesel(sql_type = Bool)]
    parked: bool,
}

/// Counts a failed computation on the unparked entries `ids` of one entity:
/// each is due again after its backoff, or parked after its last attempt.
async fn record_failure(
    conn: &mut AsyncPgConnection,
    db: &str,
    entity_id: &str,
    ids: &[i64],
    retry: Retry,
    error: &diesel::result::Error,
) -> QueryResult<()> {
    // the doubling stops at 2^20 backoffs: an interval cannot grow without end
    let failed: Vec<Failed> = diesel::sql_query(
        "UPDATE formula_queue SET attempts = attempts + 1, \
         not_before = now() + $2 * interval '1 millisecond' * power(2, least(attempts, 20)), \
         parked_at = CASE WHEN attempts + 1 >= $3 THEN now() END \
         WHERE id = ANY($1) AND parked_at IS NULL RETURNING attempts, parked_at IS NOT NULL AS parked",
    )
    .bind::<Array<BigInt>, _>(ids)
    .bind::<BigInt, _>(i64::try_from(retry.backoff.as_millis()).unwrap_or(i64::MAX))
    .bind::<Integer, _>(i32::try_from(retry.attempts.max(1)).unwrap_or(i32::MAX))
    .load(conn)
    .await?;
    let attempts = failed.iter().map(|entry| entry.attempts).max().unwrap_or(0);
    if failed.iter().any(|entry| entry.parked) {
        tracing::warn!(
            db,
            entity = entity_id,
            attempts,
            %error,
            "computing an entity's formulas failed every attempt: parked (GET /api/{{db}}/entity/{{id}}/aggregate recomputes it)"
        );
    } else {
        tracing::warn!(db, entity = entity_id, attempts, %error, "computing an entity's formulas failed; retrying later");
    }
    Ok(())
}
