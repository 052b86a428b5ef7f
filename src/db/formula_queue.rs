//! The durable queue of entities whose formulas must be computed again: a
//! write queues the entities that read what it changed, in its own
//! transaction; a job (`jobs::formulas`) takes one entity off the queue and
//! re-projects it, in one transaction, so a crash loses nothing. Any number of
//! processes may take from it at once (`FOR UPDATE SKIP LOCKED`). An entry
//! whose computation fails is retried later and, after [`Retry::attempts`]
//! failures, parked: kept, but no longer taken, so it never holds up others.

use std::time::Duration;

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Bool, Integer, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::db::schema::formula_queue;

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
    super::queued_work::note();
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

/// The entries of one entity taken off the queue, locked by the caller's
/// transaction: one computation serves them all.
pub struct Claimed {
    pub db: String,
    pub entity_id: String,
    pub ids: Vec<i64>,
    /// The lowest pass of its entries: the computation's own.
    pub pass: i32,
}

/// Takes the oldest due, unparked entity no one else is computing, with
/// every entry of it (parked ones too), all locked by the caller's
/// transaction; `None` when there is nothing to take.
pub async fn take(conn: &mut AsyncPgConnection) -> QueryResult<Option<Claimed>> {
    // Losing this commit in a crash loses its dequeue with it: the entity is
    // simply computed again, so no need to wait for the disk.
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
        return Ok(None);
    };
    let claimed: Vec<(i64, i32)> = formula_queue::table
        .filter(formula_queue::db.eq(&db))
        .filter(formula_queue::entity_id.eq(&entity_id))
        .select((formula_queue::id, formula_queue::hops))
        .for_update()
        .skip_locked()
        .load(conn)
        .await?;
    Ok(Some(Claimed {
        db,
        entity_id,
        ids: claimed.iter().map(|(id, _)| *id).collect(),
        pass: claimed.iter().map(|(_, pass)| *pass).min().unwrap_or(0),
    }))
}

/// Removes the entries `ids`, computed.
pub async fn remove(conn: &mut AsyncPgConnection, ids: &[i64]) -> QueryResult<usize> {
    diesel::delete(formula_queue::table.filter(formula_queue::id.eq_any(ids)))
        .execute(conn)
        .await
}

#[derive(QueryableByName)]
struct Failed {
    #[diesel(sql_type = Integer)]
    attempts: i32,
    #[diesel(sql_type = Bool)]
    parked: bool,
}

/// Counts a failed computation on the unparked entries of one entity:
/// each is due again after its backoff, or parked after its last attempt.
pub async fn record_failure(
    conn: &mut AsyncPgConnection,
    claimed: &Claimed,
    retry: Retry,
    error: &diesel::result::Error,
) -> QueryResult<()> {
    let Claimed { db, entity_id, ids, .. } = claimed;
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
