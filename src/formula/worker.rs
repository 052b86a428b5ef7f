//! Computes queued formulas, and re-projects the entities of types queued
//! for it, in the background: woken by this process's writers, and polling
//! for work queued by other processes (and for failed entries whose retry is
//! due). The queues themselves are `db::formula_queue` and
//! `db::reprojection_queue`, their jobs `jobs::next`; the server hands that
//! step in, so this loop needs no database of its own.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

/// Drains the queues for as long as the server runs: `compute_next` does one
/// step of work and answers whether there was any.
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
