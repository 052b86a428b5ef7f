//! The change log's retention: rows older than `changes.retention_hours`
//! are deleted now and then (through the `change_log_at` index), by every
//! process; a stream resuming from a deleted id gets `event: reset`.

use std::time::Duration;

use crate::db::{Pool, changes};

/// How often the log is swept.
const SWEEP_EVERY: Duration = Duration::from_secs(300);

/// Sweeps for as long as the server runs.
pub async fn sweep_every(pool: Pool, retention_hours: u64) {
    let mut every = tokio::time::interval(SWEEP_EVERY);
    loop {
        every.tick().await;
        if let Err(error) = sweep(&pool, retention_hours).await {
            tracing::warn!(%error, "sweeping the change log failed");
        }
    }
}

/// Deletes the changes older than `retention_hours`; answers how many.
pub async fn sweep(pool: &Pool, retention_hours: u64) -> Result<usize, String> {
    let hours = i64::try_from(retention_hours).unwrap_or(i64::MAX / 3600);
    let before = chrono::Utc::now() - chrono::Duration::hours(hours);
    let mut conn = pool.get().await.map_err(|e| e.to_string())?;
    changes::sweep(&mut conn, before).await.map_err(|e| e.to_string())
}
