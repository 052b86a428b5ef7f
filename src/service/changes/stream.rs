//! One stream's body: its events as they come, a comment line every
//! [`HEARTBEAT`], and its end — at its token's expiry, at revocation, when
//! the server stops, or when the hub drops it (a slow reader).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use futures_util::stream::LocalBoxStream;
use tokio::sync::watch;
use tokio::time::{Interval, Sleep};

use super::hub::StreamSlot;
use super::queue;
use crate::auth::jwt::Claims;
use crate::error::ApiError;
use crate::service::Service;

/// A comment line this often keeps proxies from closing a quiet stream.
const HEARTBEAT: Duration = Duration::from_secs(15);
/// How often a stream asks whether its token's login still stands (the
/// answer itself is kept for `auth.revocation_check_seconds`).
const REVOCATION_CHECK: Duration = Duration::from_secs(1);

/// What woke a stream up.
enum Next {
    /// An event, or `None` when the hub dropped the stream.
    Event(Option<Bytes>),
    Heartbeat,
    End,
    /// Time to ask whether the token still stands.
    Check,
}

/// A stream's clocks: its heartbeat, its revocation check, its token's expiry.
struct Timers {
    heartbeat: Interval,
    revocation: Interval,
    expired: std::pin::Pin<Box<Sleep>>,
}

/// What a stream's body needs between its parts.
pub(super) struct Body {
    pub(super) service: Arc<Service>,
    pub(super) db: String,
    /// The caller's token, checked again now and then; `None`: anonymous.
    pub(super) claims: Option<Claims>,
    pub(super) events: queue::Receiver,
    pub(super) closing: watch::Receiver<bool>,
    /// Held for as long as the stream is open.
    pub(super) _slot: StreamSlot,
}

impl Body {
    /// The body: `first` (a comment, or a reset), then the stream's events.
    pub(super) fn into_stream(self, first: Bytes) -> LocalBoxStream<'static, Result<Bytes, ApiError>> {
        let until_expiry = self.claims.as_ref().map(|claims| {
            let left = claims.exp - self.service.clock.now().timestamp();
            Duration::from_secs(u64::try_from(left).unwrap_or_default())
        });
        let start = tokio::time::Instant::now();
        // the timers live as long as the stream: set once, not per event
        let timers = Timers {
            heartbeat: tokio::time::interval_at(start + HEARTBEAT, HEARTBEAT),
            revocation: tokio::time::interval_at(start + REVOCATION_CHECK, REVOCATION_CHECK),
            expired: Box::pin(tokio::time::sleep(until_expiry.unwrap_or(Duration::MAX / 4))),
        };
        let rest = futures_util::stream::unfold((self, timers), |(mut body, mut timers)| async move {
            loop {
                let next = tokio::select! {
                    event = body.events.recv() => Next::Event(event),
                    _ = timers.heartbeat.tick() => Next::Heartbeat,
                    () = &mut timers.expired => Next::End,
                    _ = body.closing.wait_for(|closing| *closing) => Next::End,
                    _ = timers.revocation.tick() => Next::Check,
                };
                match next {
                    Next::Event(Some(event)) => return Some((Ok(event), (body, timers))),
                    Next::Heartbeat => return Some((Ok(Bytes::from_static(b": keep-alive\n\n")), (body, timers))),
                    Next::Event(None) | Next::End => return None,
                    Next::Check if !body.still_allowed().await => return None,
                    Next::Check => {}
                }
            }
        });
        futures_util::stream::once(async move { Ok(first) })
            .chain(rest)
            .boxed_local()
    }

    /// Whether the token's login still stands and still names its person in
    /// the database (an anonymous stream always is).
    async fn still_allowed(&self) -> bool {
        let Some(claims) = &self.claims else {
            return true;
        };
        let person = claims.person_in(&self.db);
        let service = &self.service;
        let live = service
            .logins
            .live_claims(&service.clusters, service.clock.now(), claims.clone(), "changes")
            .await;
        match live {
            Ok(live) => live.person_in(&self.db) == person,
            // a failed look-up is not a revocation: the next check decides
            Err(error) => error.status().is_server_error(),
        }
    }
}
