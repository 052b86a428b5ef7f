//! Tokens and API keys: `JwtKeys::verify_*` (built as the unit tests build
//! them, with a rotated previous secret) and `api_key::{looks_like_key,
//! lookup}`. Input: a token as text; or, after a leading 0xFF byte, an edit
//! of a genuine token (which token, where, how many bytes cut, what put in).
//! Property: no panic; arbitrary text never verifies, and neither does any
//! edited token that differs from the genuine one; every refusal is a 401.

#![no_main]

use std::collections::BTreeMap;
use std::sync::LazyLock;

use chrono::{DateTime, NaiveDate, TimeZone, Utc};
use eds::auth::api_key::{KEY_LENGTH, looks_like_key, lookup};
use eds::auth::jwt::{Claims, JwtKeys};
use eds::error::ApiError;
use libfuzzer_sys::fuzz_target;

const IP: &str = "203.0.113.7";

struct Fixture {
    keys: JwtKeys,
    now: DateTime<Utc>,
    /// Genuine tokens: access (current and previous secret), session, invite.
    tokens: Vec<String>,
}

static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
    let cutoff = NaiveDate::from_ymd_opt(2026, 11, 6).unwrap();
    let keys = JwtKeys::new(b"secret", cutoff).with_previous_secrets(&["old secret"]);
    let previous = JwtKeys::new(b"old secret", cutoff);
    let now = Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap();
    let accounts = BTreeMap::from([("db".to_owned(), "5f1a2b3c4d5e6f7a8b9c0d1e".to_owned())]);
    let access = Claims::access("api_key:db:v".into(), accounts, Some(IP.into()), now);
    let tokens = vec![
        keys.sign(&access).unwrap(),
        previous.sign(&access).unwrap(),
        keys.sign(&Claims::session("email:a@b.c".into(), IP.into(), "j1".into(), now))
            .unwrap(),
        keys.sign(&Claims::invite("db", "5f1a2b3c4d5e6f7a8b9c0d1e", now))
            .unwrap(),
    ];
    // the genuine tokens do verify, so a refusal below means something
    assert!(keys.verify_access(&tokens[0], IP, now).is_ok());
    assert!(keys.verify_access(&tokens[1], IP, now).is_ok());
    assert!(keys.verify_session(&tokens[2], IP, now).is_ok());
    assert!(keys.verify_invite(&tokens[3], now).is_ok());
    Fixture { keys, now, tokens }
});

fn refused(fixture: &Fixture, token: &str) {
    let Fixture { keys, now, .. } = fixture;
    let results = [
        keys.verify_access(token, IP, *now),
        keys.verify_refresh(token, IP, *now),
        keys.verify_session(token, IP, *now),
        keys.verify_invite(token, *now),
    ];
    for result in results {
        match result {
            Ok(claims) => panic!("{token:?} verified: {claims:?}"),
            Err(refusal) => {
                let error = ApiError::from(refusal);
                assert_eq!(error.status().as_u16(), 401, "{error}");
                assert!(!refusal.reason().is_empty());
            }
        }
    }
    if let Ok(claims) = keys.verify_signed::<serde_json::Value>(token) {
        panic!("{token:?} verified as a signed document: {claims}");
    }
}

fuzz_target!(|data: &[u8]| {
    let fixture = &*FIXTURE;
    if let [0xFF, which, at_low, at_high, cut, insert @ ..] = data {
        let genuine = &fixture.tokens[usize::from(*which) % fixture.tokens.len()];
        let at = usize::from(u16::from_le_bytes([*at_low, *at_high])) % (genuine.len() + 1);
        let end = (at + usize::from(*cut % 16)).min(genuine.len());
        let mut edited = genuine.as_bytes().to_vec();
        edited.splice(at..end, insert.iter().copied());
        let edited = String::from_utf8_lossy(&edited);
        if edited != genuine.as_str() {
            refused(fixture, &edited);
        }
        return;
    }
    let text = String::from_utf8_lossy(data);
    refused(fixture, &text);
    assert_eq!(
        looks_like_key(&text),
        text.len() == KEY_LENGTH && text.bytes().all(|b| b.is_ascii_alphanumeric())
    );
    let digest = lookup(&text);
    assert!(
        digest.len() == 12 && digest.bytes().all(|b| b.is_ascii_hexdigit()),
        "{digest:?}"
    );
});
