//! The event logs' retention, swept now and then by every process: the
//! change log's rows older than `changes.retention_hours` (through the
//! `change_log_at` index; a stream resuming from a deleted id gets
//! `event: reset`), and webhook delivery attempts older than
//! `webhooks.attempt_retention_hours`.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::db::{Pool, changes, webhooks};

/// How often the logs are swept.
const SWEEP_EVERY: Duration = Duration::from_secs(300);

/// Sweeps for as long as the server runs.
pub async fn sweep_every(pool: Pool, retention_hours: u64, attempt_retention_hours: u64) {
    let mut every = tokio::time::interval(SWEEP_EVERY);
    loop {
        every.tick().await;
        if let Err(error) = sweep(&pool, retention_hours).await {
            tracing::warn!(%error, "sweeping the change log failed");
        }
        if let Err(error) = sweep_attempts(&pool, attempt_retention_hours).await {
            tracing::warn!(%error, "sweeping the webhook delivery attempts failed");
        }
    }
}

/// Deletes the changes older than `retention_hours`; answers how many.
pub async fn sweep(pool: &Pool, retention_hours: u64) -> Result<usize, String> {
    let mut conn = pool.get().await.map_err(|e| e.to_string())?;
    changes::sweep(&mut conn, hours_ago(retention_hours))
        .await
        .map_err(|e| e.to_string())
}

/// Deletes the webhook delivery attempts older than `retention_hours`;
/// answers how many.
pub async fn sweep_attempts(pool: &Pool, retention_hours: u64) -> Result<usize, String> {
    let mut conn = pool.get().await.map_err(|e| e.to_string())?;
    webhooks::sweep_attempts(&mut conn, hours_ago(retention_hours))
        .await
        .map_err(|e| e.to_string())
}

/// A century at most: longer is forever, and out of the clock's range.
const LONGEST_HOURS: u64 = 876_600;

fn hours_ago(hours: u64) -> DateTime<Utc> {
    let hours = i64::try_from(hours.min(LONGEST_HOURS)).unwrap_or_default();
    Utc::now() - chrono::Duration::hours(hours)
}
