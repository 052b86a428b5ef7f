//! Rate limits per client address (`limits.*`): every request draws from the
//! `requests` bucket, and routes that exchange credentials or sign in also
//! from the stricter `auth` bucket (charged by the HTTP middleware,
//! `src/http/middleware/limits.rs`). Over a limit → 429 with `Retry-After`.
//! Mails are limited per recipient and per client address, by the handlers
//! that send them ([`RateLimits::charge_mail`]); invitation mails also per
//! entity ([`RateLimits::charge_invitation`]).
//!
//! Each bucket is a GCRA (the arithmetic of a token bucket with one timestamp
//! per key): N requests a minute may come in one burst, then one every
//! minute/N. A key whose allowance is whole again holds no state, so idle
//! addresses are dropped and memory follows the addresses active in the
//! last minute, up to a cap.

use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use dashmap::DashMap;

use crate::auth::login::normalized_email;
use crate::config::LimitSettings;
use crate::error::ApiError;
use crate::metrics;

/// Keys one bucket tracks at most; addresses beyond it pass unlimited until
/// idle ones are dropped (better than refusing everyone new).
const MAX_KEYS: usize = 100_000;
/// The table is swept of idle keys when it grows past this (and then past
/// twice what a sweep left).
const FIRST_SWEEP: usize = 1024;

/// A named limit; its name labels the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bucket {
    /// Every request.
    Requests,
    /// Credential exchange and sign-in.
    Auth,
    /// Mails one recipient receives.
    MailRecipient,
    /// Mails one client address has sent.
    MailSender,
    /// Invitation mails for one entity (`limits.invitation_cooldown_seconds`).
    InvitationCooldown,
}

impl Bucket {
    pub fn name(self) -> &'static str {
        match self {
            Bucket::Requests => "requests",
            Bucket::Auth => "auth",
            Bucket::MailRecipient => "mail_recipient",
            Bucket::MailSender => "mail_sender",
            Bucket::InvitationCooldown => "invitation_cooldown",
        }
    }
}

/// The configured buckets; a bucket is absent when its limit is off.
pub struct RateLimits {
    requests: Option<Limiter>,
    auth: Option<Limiter>,
    mail_recipient: Option<Limiter>,
    mail_sender: Option<Limiter>,
    invitation_cooldown: Option<Limiter>,
}

/// What an invitation mail was charged, to give back when it is not sent.
#[must_use]
pub struct Charged(Vec<(Bucket, String)>);

impl RateLimits {
    pub fn from_settings(settings: &LimitSettings) -> RateLimits {
        let per = |count: u32, window: u64| {
            (settings.enabled && count > 0).then(|| Limiter::new(count, Duration::from_secs(window)))
        };
        RateLimits {
            requests: per(settings.requests_per_minute, 60),
            auth: per(settings.auth_per_minute, 60),
            mail_recipient: per(settings.mails_per_hour_per_recipient, 3600),
            mail_sender: per(settings.mails_per_hour_per_address, 3600),
            invitation_cooldown: match settings.invitation_cooldown_seconds {
                0 => None,
                seconds => per(1, seconds),
            },
        }
    }

    /// Charges one request of `key` to `bucket`; `Err(wait)` when over the
    /// limit, `wait` being how long until the next one would pass.
    pub fn check(&self, bucket: Bucket, key: &str) -> Result<(), Duration> {
        match self.limiter(bucket) {
            Some(limiter) => limiter.check(key, Instant::now()),
            None => Ok(()),
        }
    }

    fn limiter(&self, bucket: Bucket) -> Option<&Limiter> {
        match bucket {
            Bucket::Requests => &self.requests,
            Bucket::Auth => &self.auth,
            Bucket::MailRecipient => &self.mail_recipient,
            Bucket::MailSender => &self.mail_sender,
            Bucket::InvitationCooldown => &self.invitation_cooldown,
        }
        .as_ref()
    }

    /// Charges one invitation mail to entity `entity` (named with its
    /// database), to `recipient` (case folded) and to `client_ip`. Over any
    /// of them → 429 `rate_limited` with `Retry-After`, and nothing stays
    /// charged. Give the charge back ([`RateLimits::refund`]) when the mail
    /// is not sent after all.
    pub fn charge_invitation(&self, entity: &str, recipient: &str, client_ip: &str) -> Result<Charged, ApiError> {
        let charges = [
            (Bucket::InvitationCooldown, entity.to_owned()),
            (Bucket::MailSender, address_key(client_ip)),
            (Bucket::MailRecipient, recipient.to_lowercase()),
        ];
        let mut charged = Charged(Vec::with_capacity(charges.len()));
        for (bucket, key) in charges {
            if let Err(wait) = self.check(bucket, &key) {
                metrics::rate_limited(bucket.name());
                self.refund(charged);
                return Err(ApiError::rate_limited(wait));
            }
            charged.0.push((bucket, key));
        }
        Ok(charged)
    }

    /// Gives back what a mail that was not sent was charged.
    pub fn refund(&self, charged: Charged) {
        for (bucket, key) in charged.0 {
            if let Some(limiter) = self.limiter(bucket) {
                limiter.refund(&key);
            }
        }
    }
}

impl RateLimits {
    /// Charges one mail to `recipient` (case folded) sent for `client_ip`;
    /// 429 `rate_limited` with `Retry-After` when either is over its hourly
    /// limit.
    pub fn charge_mail(&self, recipient: &str, client_ip: &str) -> Result<(), ApiError> {
        let charges = [
            (Bucket::MailSender, address_key(client_ip)),
            (Bucket::MailRecipient, normalized_email(recipient)),
        ];
        for (bucket, key) in charges {
            if let Err(wait) = self.check(bucket, &key) {
                metrics::rate_limited(bucket.name());
                return Err(ApiError::rate_limited(wait));
            }
        }
        Ok(())
    }
}

/// One bucket: the theoretical arrival time of each key's next request.
pub struct Limiter {
    /// Time one request's share of the allowance takes to come back.
    interval: Duration,
    /// How far ahead of now a key's arrival time may run: the burst.
    tolerance: Duration,
    arrivals: DashMap<String, Instant>,
    sweep_above: AtomicUsize,
}

impl Limiter {
    /// `count` requests per `window`, all of them allowed at once.
    pub fn new(count: u32, window: Duration) -> Limiter {
        let interval = window / count.max(1);
        Limiter {
            interval,
            tolerance: window.saturating_sub(interval),
            arrivals: DashMap::new(),
            sweep_above: AtomicUsize::new(FIRST_SWEEP),
        }
    }

    pub fn check(&self, key: &str, now: Instant) -> Result<(), Duration> {
        if !self.arrivals.contains_key(key) {
            if self.arrivals.len() >= self.sweep_above.load(Ordering::Relaxed) {
                self.sweep(now);
            }
            if self.arrivals.len() >= MAX_KEYS {
                return Ok(());
            }
        }
        // the entry's lock makes concurrent requests of one key count one after the other
        let mut arrival = self.arrivals.entry(key.to_owned()).or_insert(now);
        let at = (*arrival).max(now);
        let ahead = at - now;
        if ahead > self.tolerance {
            return Err(ahead - self.tolerance);
        }
        *arrival = at + self.interval;
        Ok(())
    }

    /// Gives back one request of `key`'s allowance.
    pub fn refund(&self, key: &str) {
        if let Some(mut arrival) = self.arrivals.get_mut(key) {
            *arrival = arrival.checked_sub(self.interval).unwrap_or(*arrival);
        }
    }

    /// Drops the keys whose allowance is whole again.
    fn sweep(&self, now: Instant) {
        self.arrivals.retain(|_, arrival| *arrival > now);
        self.sweep_above
            .store((self.arrivals.len() * 2).max(FIRST_SWEEP), Ordering::Relaxed);
    }

    #[cfg(test)]
    fn keys(&self) -> usize {
        self.arrivals.len()
    }
}

/// The key of a client address: an IPv6 client is one /64 network (what one
/// host is usually given), so it cannot dodge the limit by changing addresses.
pub fn address_key(address: &str) -> String {
    match address.parse::<IpAddr>() {
        Ok(IpAddr::V6(v6)) if v6.to_ipv4_mapped().is_none() => {
            let segments = v6.segments();
            format!(
                "{:x}:{:x}:{:x}:{:x}::/64",
                segments[0], segments[1], segments[2], segments[3]
            )
        }
        Ok(IpAddr::V6(v6)) => v6.to_ipv4_mapped().map(|v4| v4.to_string()).unwrap_or_default(),
        _ => address.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn n_requests_pass_at_once_and_the_next_waits_one_interval() {
        let limiter = Limiter::new(3, Duration::from_secs(60));
        let now = Instant::now();
        for _ in 0..3 {
            assert_eq!(limiter.check("a", now), Ok(()));
        }
        assert_eq!(limiter.check("a", now), Err(Duration::from_secs(20)));
        assert_eq!(
            limiter.check("a", now + Duration::from_secs(19)),
            Err(Duration::from_secs(1))
        );
        assert_eq!(limiter.check("a", now + Duration::from_secs(20)), Ok(()));
        assert!(limiter.check("a", now + Duration::from_secs(20)).is_err());
    }

    #[test]
    fn an_invitation_charges_its_entity_once_per_cooldown_and_a_refusal_keeps_nothing_charged() {
        let settings = LimitSettings {
            enabled: true,
            requests_per_minute: 0,
            auth_per_minute: 0,
            max_values_per_write: 1000,
            max_batch_operations: 10_000,
            mails_per_hour_per_recipient: 2,
            mails_per_hour_per_address: 60,
            new_databases_per_day: 5,
            invitation_cooldown_seconds: 300,
            pending_sign_ins_per_address: 100,
        };
        let limits = RateLimits::from_settings(&settings);
        let charged = limits
            .charge_invitation("demo/e1", "Bob@example.com", "10.0.0.1")
            .unwrap();
        let refused = limits
            .charge_invitation("demo/e1", "bob@example.com", "10.0.0.1")
            .err()
            .unwrap();
        assert_eq!((refused.code, refused.retry_after), (ErrorCode::RateLimited, Some(300)));
        // the mail was not sent: its entity may be invited again at once
        limits.refund(charged);
        let _sent = limits
            .charge_invitation("demo/e1", "bob@example.com", "10.0.0.1")
            .unwrap();
        let _sent = limits
            .charge_invitation("demo/e2", "bob@example.com", "10.0.0.1")
            .unwrap();
        // the recipient's third mail in the hour is refused, and e3's cooldown stays unused
        assert!(
            limits
                .charge_invitation("demo/e3", "BOB@example.com", "10.0.0.1")
                .is_err()
        );
        let _sent = limits
            .charge_invitation("demo/e3", "carol@example.com", "10.0.0.1")
            .unwrap();
        let off = RateLimits::from_settings(&LimitSettings {
            enabled: false,
            ..settings
        });
        for _ in 0..3 {
            let _sent = off.charge_invitation("demo/e1", "bob@example.com", "10.0.0.1").unwrap();
        }
    }

    #[test]
    fn keys_are_limited_apart() {
        let limiter = Limiter::new(1, Duration::from_secs(60));
        let now = Instant::now();
        assert!(limiter.check("a", now).is_ok());
        assert!(limiter.check("a", now).is_err());
        assert!(limiter.check("b", now).is_ok());
    }

    #[test]
    fn idle_keys_are_evicted() {
        let limiter = Limiter::new(10, Duration::from_secs(60));
        let now = Instant::now();
        for index in 0..FIRST_SWEEP {
            limiter.check(&index.to_string(), now).unwrap();
        }
        assert_eq!(limiter.keys(), FIRST_SWEEP);
        // six seconds later every key has its allowance back: a new key sweeps them
        limiter.check("new", now + Duration::from_secs(6)).unwrap();
        assert_eq!(limiter.keys(), 1);
    }

    #[test]
    fn past_the_key_cap_new_addresses_pass_untracked() {
        let limiter = Limiter::new(1, Duration::from_secs(60));
        let now = Instant::now();
        for index in 0..MAX_KEYS {
            limiter.check(&index.to_string(), now).unwrap();
        }
        assert_eq!(limiter.keys(), MAX_KEYS);
        for _ in 0..3 {
            assert!(limiter.check("late", now).is_ok());
        }
        assert_eq!(limiter.keys(), MAX_KEYS);
        // tracked keys stay limited
        assert!(limiter.check("0", now).is_err());
    }

    #[test]
    fn a_limit_of_zero_or_enabled_false_turns_a_bucket_off() {
        let settings = |enabled, auth_per_minute| LimitSettings {
            enabled,
            requests_per_minute: 1,
            auth_per_minute,
            max_values_per_write: 1000,
            max_batch_operations: 10_000,
            mails_per_hour_per_recipient: 60,
            mails_per_hour_per_address: 60,
            new_databases_per_day: 5,
            invitation_cooldown_seconds: 300,
            pending_sign_ins_per_address: 100,
        };
        let limits = RateLimits::from_settings(&settings(true, 0));
        assert!(limits.check(Bucket::Requests, "a").is_ok());
        assert!(limits.check(Bucket::Requests, "a").is_err());
        for _ in 0..3 {
            assert!(limits.check(Bucket::Auth, "a").is_ok());
        }
        let off = RateLimits::from_settings(&settings(false, 1));
        for _ in 0..3 {
            assert!(off.check(Bucket::Requests, "a").is_ok());
            assert!(off.check(Bucket::Auth, "a").is_ok());
        }
        assert_eq!(settings(true, 1).pending_sign_ins(), Some(100));
        assert_eq!(settings(false, 1).pending_sign_ins(), None);
    }

    #[test]
    fn an_ipv6_client_is_limited_by_its_64_network() {
        assert_eq!(address_key("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
        assert_eq!(address_key("2001:db8:1:2:bbbb::9"), "2001:db8:1:2::/64");
        assert_eq!(address_key("::ffff:10.0.0.1"), "10.0.0.1");
        assert_eq!(address_key("10.0.0.1"), "10.0.0.1");
    }
}
