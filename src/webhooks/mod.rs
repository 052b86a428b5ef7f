//! Webhook delivery: a worker in every server process takes due events from
//! the outbox (`db::webhooks`, filled at each write's commit), sends those
//! every owner of the webhook may read, signed (`post.rs`), and records each
//! attempt with its retry or the webhook's parking.
//!
//! - `post.rs`: the signature, the secret, and one POST under the target rules.

pub mod post;

use std::time::Duration;

use chrono::{DateTime, Utc};
use rand::Rng;
use serde_json::json;

use crate::config::WebhookSettings;
use crate::db::Pool;
use crate::db::webhooks::{self as outbox, AfterAttempt, Claimed, NewAttempt};
use crate::net::targets::is_internal;
use crate::rights::can_read;

/// Events one worker sends at once.
const BATCH: i64 = 16;
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
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(%error, "delivering webhooks failed; retrying");
                tokio::time::sleep(poll).await;
            }
        }
    }
}

/// Takes a batch of due events and sends them; answers how many were taken.
pub async fn deliver_due(pool: &Pool, settings: &WebhookSettings) -> Result<usize, String> {
    let timeout = Duration::from_millis(settings.timeout_ms);
    // a worker that dies mid-delivery leaves its events to others once this lease ends
    let lease = timeout.as_secs_f64() + 30.0;
    let claimed = {
        let mut conn = pool.get().await.map_err(|e| e.to_string())?;
        outbox::claim(&mut conn, BATCH, lease)
            .await
            .map_err(|e| e.to_string())?
    };
    let taken = claimed.len();
    let sends = claimed.into_iter().map(|event| deliver(pool, settings, event));
    for result in futures_util::future::join_all(sends).await {
        result?;
    }
    Ok(taken)
}

/// Sends one event, or drops it when an owner of its webhook may not read
/// its entity, and records the attempt.
async fn deliver(pool: &Pool, settings: &WebhookSettings, event: Claimed) -> Result<(), String> {
    let failed = |e: diesel::result::Error| e.to_string();
    let (readable, secret) = {
        let mut conn = pool.get().await.map_err(|e| e.to_string())?;
        let webhook = outbox::entity_row(&mut conn, &event.db, &event.webhook_id)
            .await
            .map_err(failed)?;
        let entity = outbox::entity_row(&mut conn, &event.db, &event.entity_id)
            .await
            .map_err(failed)?;
        let readable = match (webhook, entity) {
            (Some(webhook), Some(entity)) => {
                !webhook.owners.is_empty()
                    && webhook
                        .owners
                        .iter()
                        .all(|owner| can_read(entity.sharing(), &entity.lists(), Some(owner)))
            }
            _ => false,
        };
        let secret = outbox::secret(&mut conn, &event.db, &event.webhook_id)
            .await
            .map_err(failed)?;
        if !readable {
            outbox::drop_event(&mut conn, event.id).await.map_err(failed)?;
        }
        (readable, secret)
    };
    if !readable {
        return Ok(());
    }
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
    let mut error = outcome.error.clone();
    if after == AfterAttempt::Park {
        error = error.map(|e| format!("{e}; failing for the whole retry period, the webhook is parked"));
    }
    let attempt = NewAttempt {
        db: &event.db,
        webhook_id: &event.webhook_id,
        message_id,
        event: &event.event,
        attempt: event.attempts,
        at: now,
        status: outcome.status.map(i32::from),
        duration_ms: i32::try_from(outcome.duration.as_millis()).unwrap_or(i32::MAX),
        error,
    };
    let mut conn = pool.get().await.map_err(|e| e.to_string())?;
    outbox::record(&mut conn, event.id, attempt, after)
        .await
        .map_err(failed)
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
