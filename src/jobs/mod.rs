//! The background jobs that drain the durable queues of `src/db/`, one home
//! per job: computing queued formulas (`formulas.rs`) and re-projecting the
//! entities of queued types (`reprojection.rs`). Each takes from its queue,
//! does its work through the projection, and records the outcome, in one
//! transaction; the server's worker (`formula::worker`) runs [`next`] in its
//! loop, and `eds import` drains the formula queue at its end.

pub mod change_log;
pub mod formulas;
pub mod reprojection;

use crate::db::Pool;
use crate::db::formula_queue::Retry;

/// One step of background work on a connection taken from `pool` for it:
/// a queued formula first (short, and a type's re-projection queues some),
/// else a batch of a queued type. Answers whether there was any work; the
/// error as text for the worker's log.
pub async fn next(pool: Pool, retry: Retry) -> Result<bool, String> {
    let mut conn = pool.get().await.map_err(|e| e.to_string())?;
    if formulas::compute_next(&mut conn, retry)
        .await
        .map_err(|e| e.to_string())?
    {
        return Ok(true);
    }
    reprojection::reproject_next(&mut conn).await.map_err(|e| e.to_string())
}
