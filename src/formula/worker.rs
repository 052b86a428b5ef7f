//! Computes queued formulas in the background: woken by this process's
//! writers, and polling for work queued by other processes (and for failed
//! entries whose retry is due). The queue itself is `db::formula_queue`;
//! the server hands its step in, so this loop needs no database of its own.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

/// Drains the formula queue for as long as the server runs: `compute_next`
/// computes one queued entity and answers whether there was one.
pub async fn run<Step, Computed>(compute_next: Step, wake: Arc<Notify>, poll: Duration)
where
    Step: Fn() -> Computed,
    Computed: Future<Output = Result<bool, String>>,
{
    loop {
        match compute_next().await {
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
