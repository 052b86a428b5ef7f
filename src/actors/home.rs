//! The thread the long-lived actors run on.
//!
//! An actor started from a request runs on that request's HTTP worker, and a
//! graceful stop ends the workers one by one: a writer living on the first
//! to end would refuse the writes still in flight on the others. Actors live
//! on an arbiter of their own instead, which outlives every worker.

use std::sync::OnceLock;

use actix::{Arbiter, ArbiterHandle};

/// An arbiter started on first use (inside the actix system), stopped when
/// dropped.
#[derive(Default)]
pub struct ActorHome(OnceLock<Arbiter>);

impl ActorHome {
    pub fn handle(&self) -> ArbiterHandle {
        self.0.get_or_init(Arbiter::new).handle()
    }
}

impl Drop for ActorHome {
    fn drop(&mut self) {
        if let Some(arbiter) = self.0.get() {
            arbiter.stop();
        }
    }
}
