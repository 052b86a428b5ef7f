//! Computing a queued entity's formulas: its projection rebuilt, and what
//! depends on it queued in turn, in the transaction that takes it off the
//! queue, so a crash loses nothing.

use diesel::QueryResult;
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection};

use crate::db::formula_queue::{self, Retry};
use crate::db::projection::{self, TypeCache};
use crate::db::{generation, values};

/// Takes the oldest due, unparked entity no one else is computing,
/// re-projects it and queues what depends on it; answers false when there was
/// nothing to take. A failed computation is undone and recorded on the
/// entries (next attempt, or parked) in the same transaction.
pub async fn compute_next(conn: &mut AsyncPgConnection, retry: Retry) -> QueryResult<bool> {
    conn.transaction(|conn| {
        async move {
            // its entries are locked here, outside the savepoint below, so
            // they stay ours when it is rolled back
            let Some(claimed) = formula_queue::take(conn).await? else {
                return Ok(false);
            };
            let claimed = &claimed;
            let computed = conn
                .transaction(|conn| {
                    async move {
                        formula_queue::remove(conn, &claimed.ids).await?;
                        let (db, entity_id) = (claimed.db.as_str(), claimed.entity_id.as_str());
                        // The queue entries are the only locks held while
                        // waiting for the database's write lock, then the
                        // entity's, which writers take in that order: a write
                        // never waits for a queue entry, so this cannot
                        // deadlock with writers. Under the write lock the
                        // change a recomputation logs takes its id in commit
                        // order.
                        generation::take_write_lock(conn, db).await?;
                        if values::live_entity(conn, db, entity_id, true).await?.is_some() {
                            let types = &mut TypeCache::default();
                            projection::project_after(conn, types, db, entity_id, claimed.pass).await?;
                        }
                        QueryResult::Ok(())
                    }
                    .scope_boxed()
                })
                .await;
            if let Err(error) = computed {
                formula_queue::record_failure(conn, claimed, retry, &error).await?;
            }
            Ok(true)
        }
        .scope_boxed()
    })
    .await
}

/// Computes every due entity of the queue now, on this connection (`eds
/// import`, at its end); one that fails stays queued for the servers'
/// workers to retry.
pub async fn compute_all(conn: &mut AsyncPgConnection) -> QueryResult<()> {
    while compute_next(conn, Retry::default()).await? {}
    Ok(())
}
