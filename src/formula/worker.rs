//! Computes queued formulas in the background: woken by this process's
//! writers, and polling for work queued by other processes (and for failed
//! entries whose retry is due).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::db::Pool;
use crate::db::formula_queue::{self, Retry};

/// Drains the formula queue for as long as the server runs.
pub async fn run(pool: Pool, wake: Arc<Notify>, poll: Duration, retry: Retry) {
    loop {
        match compute_next(&pool, retry).await {
            Ok(true) => continue,
            Ok(false) => {}
            Err(error) => tracing::warn!(%error, "computing queued formulas failed; retrying"),
        }
        tokio::select! {
            () = wake.notified() => {}
            () = tokio::time::sleep(poll) => {}
        }
    }
}

async fn compute_next(pool: &Pool, retry: Retry) -> Result<bool, String> {
    let mut conn = pool.get().await.map_err(|e| e.to_string())?;
    formula_queue::compute_next(&mut conn, retry)
        .await
        .map_err(|e| e.to_string())
}
