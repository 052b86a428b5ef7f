//! Webhook delivery: a worker in every server process takes due events from
//! the outbox (`db::webhooks`, filled at each write's commit), sends those
//! every owner of the webhook may read, signed (`post.rs`), and records each
//! attempt with its retry or the webhook's parking.
//!
//! - `post.rs`: the signature, the secret, and one POST under the target rules.

pub mod post;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::QueryResult;
use diesel_async::AsyncPgConnection;
use rand::Rng;
use serde_json::json;

use crate::config::WebhookSettings;
use crate::db::Pool;
use crate::db::changes;
use crate::db::values::EntityRow;
use crate::db::webhooks::{self as outbox, AfterAttempt, Claimed, NewAttempt};
use crate::net::targets::is_internal;
use crate::rights::can_read;

/// Events one worker sends at once.
const BATCH: i64 = 16;
/// The longest a worker gives way to waiting writes between two batches:
/// deliveries go on, at least a batch this often, under any write load.
const GIVE_WAY: Duration = Duration::from_millis(200);
/// How often a worker giving way looks whether writes still wait.
const GIVE_WAY_STEP: Duration = Duration::from_millis(5);
/// The longest wait between two retries.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(3600);

/// Why a webhook's `url` is refused at write, if it is: not an http(s) URL
/// with a host, or (unless private targets are allowed) a literal address
/// the target rules refuse. Names resolve later, at each delivery.
pub fn url_refusal(url: &str, allow_private: bool) -> Option<&'static str> {
    let Ok(parsed) = url::Url::parse(url) else {
        return Some("url must be an http or https URL");
    };
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
        return Some("url must be an http or https URL");
    }
    let literal = match parsed.host() {
        Some(url::Host::Ipv4(ip)) => Some(std::net::IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Some(std::net::IpAddr::V6(ip)),
        _ => None,
    };
    (!allow_private && literal.is_some_and(is_internal)).then_some("url is a private or local address")
}

/// Delivers due events for as long as the server runs.
pub async fn run(pool: Pool, settings: WebhookSettings) {
    let poll = Duration::from_millis(settings.poll_ms.max(10));
    loop {
        match deliver_due(&pool, &settings).await {
            Ok(0) => tokio::time::sleep(poll).await,
            Ok(_) => give_way(GIVE_WAY, || crate::metrics::writes_waiting() > 0).await,
            Err(error) => {
                tracing::warn!(%error, "delivering webhooks failed; retrying");
                tokio::time::sleep(poll).await;
            }
        }
    }
}

/// Waits while `writes_wait` (writes queued for this process's writers), at
/// most `bound`: deliveries share the cores with the writes they report,
/// and catch up when writes ease rather than slow them down.
async fn give_way(bound: Duration, writes_wait: impl Fn() -> bool) {
    let until = tokio::time::Instant::now() + bound;
    while writes_wait() && tokio::time::Instant::now() < until {
        tokio::time::sleep(GIVE_WAY_STEP).await;
    }
}

/// Takes a batch of due events and sends them; answers how many were taken.
/// The batch costs a few statements whatever its size: the claim, two per
/// database to look up the rights and secrets it needs, and one transaction
/// to record its attempts.
pub async fn deliver_due(pool: &Pool, settings: &WebhookSettings) -> Result<usize, String> {
    let timeout = Duration::from_millis(settings.timeout_ms);
    // a worker that dies mid-delivery leaves its events to others once this lease ends
    let lease = timeout.as_secs_f64() + 30.0;
    let failed = |e: diesel::result::Error| e.to_string();
    let (taken, sendable) = {
        let mut conn = pool.get().await.map_err(|e| e.to_string())?;
        let claimed = outbox::claim(&mut conn, BATCH, lease).await.map_err(failed)?;
        let taken = claimed.len();
        (taken, sendable(&mut conn, claimed).await.map_err(failed)?)
    };
    if sendable.is_empty() {
        return Ok(taken);
    }
    let sends = sendable
        .into_iter()
        .map(|(event, secret)| attempt(settings, event, secret));
    let attempted = futures_util::future::join_all(sends).await;
    let records: Vec<_> = attempted.iter().map(Attempted::record).collect();
    let mut conn = pool.get().await.map_err(|e| e.to_string())?;
    outbox::record(&mut conn, &records).await.map_err(failed)?;
    Ok(taken)
}

/// The events of `claimed` that every owner of their webhook may read, each
/// with its webhook's secret; the others are dropped from the outbox.
async fn sendable(conn: &mut AsyncPgConnection, claimed: Vec<Claimed>) -> QueryResult<Vec<(Claimed, Option<String>)>> {
    let mut rows: HashMap<(String, String), EntityRow> = HashMap::new();
    let mut secrets: HashMap<(String, String), String> = HashMap::new();
    let dbs: HashSet<&str> = claimed.iter().map(|event| event.db.as_str()).collect();
    for db in dbs {
        let of_db = || claimed.iter().filter(move |event| event.db == db);
        let webhooks: Vec<String> = of_db().map(|event| event.webhook_id.clone()).collect();
        let ids: Vec<String> = of_db()
            .map(|event| event.entity_id.clone())
            .chain(webhooks.iter().cloned())
            .collect();
        for row in changes::entities_any(conn, db, &ids).await? {
            rows.insert((db.to_owned(), row.id.clone()), row);
        }
        for (webhook, secret) in outbox::secrets(conn, db, &webhooks).await? {
            secrets.insert((db.to_owned(), webhook), secret);
        }
    }
    let row = |event: &Claimed, id: &str| rows.get(&(event.db.clone(), id.to_owned()));
    let (sendable, unreadable): (Vec<Claimed>, Vec<Claimed>) =
        claimed.into_iter().partition(
            |event| match (row(event, &event.webhook_id), row(event, &event.entity_id)) {
                (Some(webhook), Some(entity)) => {
                    !webhook.owners.is_empty()
                        && webhook
                            .owners
                            .iter()
                            .all(|owner| can_read(entity.sharing(), &entity.lists(), Some(owner)))
                }
                _ => false,
            },
        );
    if !unreadable.is_empty() {
        let ids: Vec<i64> = unreadable.iter().map(|event| event.id).collect();
        outbox::drop_events(conn, &ids).await?;
    }
    Ok(sendable
        .into_iter()
        .map(|event| {
            let secret = secrets.remove(&(event.db.clone(), event.webhook_id.clone()));
            (event, secret)
        })
        .collect())
}

/// One event's attempt: when, how it went, what follows.
struct Attempted {
    event: Claimed,
    at: DateTime<Utc>,
    outcome: post::Outcome,
    after: AfterAttempt,
}

impl Attempted {
    /// The attempt as recorded, with its event's outbox id and what follows.
    fn record(&self) -> (i64, NewAttempt<'_>, AfterAttempt) {
        let mut error = self.outcome.error.clone();
        if self.after == AfterAttempt::Park {
            error = error.map(|e| format!("{e}; failing for the whole retry period, the webhook is parked"));
        }
        let attempt = NewAttempt {
            db: &self.event.db,
            webhook_id: &self.event.webhook_id,
            message_id: &self.event.message_id,
            event: &self.event.event,
            attempt: self.event.attempts,
            at: self.at,
            status: self.outcome.status.map(i32::from),
            duration_ms: i32::try_from(self.outcome.duration.as_millis()).unwrap_or(i32::MAX),
            error,
        };
        (self.event.id, attempt, self.after)
    }
}

/// Sends one event, signed with its webhook's `secret`.
async fn attempt(settings: &WebhookSettings, event: Claimed, secret: Option<String>) -> Attempted {
    let message_id = &event.message_id;
    let body = json!({
        "id": message_id,
        "db": event.db,
        "event": event.event,
        "entity": {"_id": event.entity_id},
        "at": crate::model::json::format_datetime(event.at),
    })
    .to_string();
    let now = Utc::now();
    let outcome = match (
        secret
            .as_deref()
            .and_then(|s| post::sign(s, message_id, now.timestamp(), body)),
        &event.url,
    ) {
        (Some(signed), Some(url)) => {
            post::post(
                url,
                &signed,
                settings.allow_private_targets,
                Duration::from_millis(settings.timeout_ms),
            )
            .await
        }
        (None, _) => post::Outcome {
            status: None,
            error: Some("the webhook has no secret to sign with".to_owned()),
            duration: Duration::ZERO,
        },
        (_, None) => post::Outcome {
            status: None,
            error: Some("the webhook has no url".to_owned()),
            duration: Duration::ZERO,
        },
    };
    let after = if outcome.delivered() {
        AfterAttempt::Delivered
    } else {
        next_step(settings, &event, now)
    };
    Attempted {
        event,
        at: now,
        outcome,
        after,
    }
}

/// After a failed attempt: the next one after a doubling, jittered delay
/// (the first within `retry_base_ms`), or parking once the event has
/// failed for `retry_hours`.
fn next_step(settings: &WebhookSettings, event: &Claimed, now: DateTime<Utc>) -> AfterAttempt {
    let failing_for = (now - event.since).to_std().unwrap_or_default();
    if failing_for.as_secs_f64() >= settings.retry_hours * 3600.0 {
        return AfterAttempt::Park;
    }
    let doublings = u32::try_from(event.attempts.saturating_sub(1)).unwrap_or(0).min(20);
    let delay = Duration::from_millis(settings.retry_base_ms)
        .saturating_mul(1 << doublings)
        .min(MAX_RETRY_DELAY)
        .mul_f64(rand::thread_rng().gen_range(0.5..=1.0));
    AfterAttempt::RetryAt(now + chrono::Duration::from_std(delay).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn deliveries_give_way_to_waiting_writes_for_a_bounded_time() {
        let started = tokio::time::Instant::now();
        give_way(GIVE_WAY, || false).await;
        assert_eq!(started.elapsed(), Duration::ZERO, "no write waits: at once");
        give_way(GIVE_WAY, || true).await;
        assert_eq!(started.elapsed(), GIVE_WAY, "writes wait throughout: the bound");
        let waiting = std::cell::Cell::new(3);
        let started = tokio::time::Instant::now();
        give_way(GIVE_WAY, || {
            waiting.set(waiting.get() - 1);
            waiting.get() >= 0
        })
        .await;
        assert_eq!(started.elapsed(), GIVE_WAY_STEP * 3, "until the writes are taken up");
    }

    #[test]
    fn a_url_is_http_or_https_with_a_host() {
        assert_eq!(url_refusal("https://example.com/hook", false), None);
        assert_eq!(url_refusal("http://example.com:8080/", false), None);
        for refused in ["ftp://example.com/", "example.com", "file:///etc/passwd", "https://"] {
            assert!(url_refusal(refused, true).is_some(), "{refused}");
        }
    }

    #[test]
    fn a_literal_internal_address_is_refused_unless_private_targets_are_allowed() {
        for literal in [
            "http://127.0.0.1/",
            "http://[::1]/",
            "http://10.1.2.3/",
            "http://[::ffff:169.254.169.254]/",
        ] {
            assert!(url_refusal(literal, false).is_some(), "{literal}");
            assert_eq!(url_refusal(literal, true), None, "{literal}");
        }
    }
}
