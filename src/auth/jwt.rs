//! JWTs: HS256, 12 hours. The header's `kid` names the secret that signed
//! the token (see [`key_id`]), so secrets can be rotated. Claims:
//! - `use`: the kind of token; the REST API accepts only `access`.
//! - `sub`: the login the token stands for, a [`Subject`] (`api_key:<db>:<value id>` for an API key).
//! - `accounts`: database name → the caller's person id in it.
//! - `ip`: the client address the token is bound to; absent on unbound tokens.
//! - `iat`: issue time; `exp`: expiry; `auth_time`: the original login time,
//!   carried unchanged through refreshes (all Unix seconds).
//! - `jti`: a session token's id, by which its single use is recorded.
//! - `email`, `name`: what the identity provider said of the person, carried
//!   from the session token into the access token (a new database's owner).
//! - `invite`: on a session token, the invitation the sign-in began with.
//! - `oauth_client`: on a token the OAuth server issued, the SHA-256 (hex)
//!   of the client id it was issued to (client ids can be kilobytes long).
//! - `scope`: on a token the OAuth server issued, the scopes granted
//!   (`read`, `write`); a token without it has full rights.
//!
//! Kinds (`use`): `access` (the API), `session` (a provider login, 5 minutes,
//! single use, bound to the browser's address, exchanged at `GET /api/auth`),
//! `invite` (an invitation, 24 hours; `sub` = `invite:<db>:<value id>`).

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDate, Utc};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::login::{Login, StoredPasskey};
use super::subject::{Subject, invitation_of};
use crate::error::ApiError;

pub const TOKEN_LIFETIME_SECONDS: i64 = 12 * 60 * 60;
pub const USE_ACCESS: &str = "access";
pub const USE_SESSION: &str = "session";
pub const USE_INVITE: &str = "invite";
pub const SESSION_LIFETIME_SECONDS: i64 = 5 * 60;
pub const INVITE_LIFETIME_SECONDS: i64 = 24 * 60 * 60;
/// A token can be refreshed until this long after its own issue.
pub const REFRESH_IDLE_SECONDS: i64 = 14 * 24 * 60 * 60;
/// ... and until this long after the original login.
pub const REFRESH_ABSOLUTE_SECONDS: i64 = 30 * 24 * 60 * 60;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Claims {
    #[serde(rename = "use", default, skip_serializing_if = "Option::is_none")]
    pub token_use: Option<String>,
    pub sub: String,
    #[serde(default)]
    pub accounts: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
    pub iat: i64,
    pub exp: i64,
    pub auth_time: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jti: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// On a session token: the invitation the sign-in began with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invite: Option<String>,
    /// On a passkey login's tokens: its credential, stored where the login is linked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passkey: Option<StoredPasskey>,
    /// On a token the OAuth server issued: the SHA-256 (hex) of its client's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth_client: Option<String>,
    /// On a token the OAuth server issued: the scopes granted, space-separated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl Claims {
    /// Claims of a new access token for a login made at `now`.
    pub fn access(sub: String, accounts: BTreeMap<String, String>, ip: Option<String>, now: DateTime<Utc>) -> Claims {
        let issued = now.timestamp();
        Claims {
            token_use: Some(USE_ACCESS.to_owned()),
            sub,
            accounts,
            ip,
            iat: issued,
            exp: issued + TOKEN_LIFETIME_SECONDS,
            auth_time: issued,
            jti: None,
            email: None,
            name: None,
            invite: None,
            passkey: None,
            oauth_client: None,
            scope: None,
        }
    }

    /// An access token the OAuth server issues to the client whose id has
    /// the SHA-256 `client_digest`, granted `scope`: bound to no address
    /// (the client's server may use it).
    pub fn for_oauth_client(
        sub: String,
        accounts: BTreeMap<String, String>,
        client_digest: &str,
        scope: &str,
        now: DateTime<Utc>,
    ) -> Claims {
        Claims {
            oauth_client: Some(client_digest.to_owned()),
            scope: Some(scope.to_owned()),
            ..Claims::access(sub, accounts, None, now)
        }
    }

    /// Whether the OAuth server issued the token. Sign-ins and key exchanges
    /// always bind theirs to an address, so an unbound token from before
    /// `oauth_client` was carried counts as one too.
    pub fn issued_by_oauth(&self) -> bool {
        self.oauth_client.is_some() || self.ip.is_none()
    }

    /// Whether the token may write: it has no `scope` claim, or one holding `write`.
    pub fn may_write(&self) -> bool {
        self.scope.as_deref().is_none_or(super::scope::allows_write)
    }

    /// A session token for the login `sub`, bound to `ip`, with the id `jti`
    /// its single use is recorded by.
    pub fn session(sub: String, ip: String, jti: String, now: DateTime<Utc>) -> Claims {
        Claims {
            token_use: Some(USE_SESSION.to_owned()),
            ip: Some(ip),
            exp: now.timestamp() + SESSION_LIFETIME_SECONDS,
            jti: Some(jti),
            ..Claims::access(sub, BTreeMap::new(), None, now)
        }
    }

    /// An invitation to the person holding value `value_id` in `db`.
    pub fn invite(db: &str, value_id: &str, now: DateTime<Utc>) -> Claims {
        Claims {
            token_use: Some(USE_INVITE.to_owned()),
            exp: now.timestamp() + INVITE_LIFETIME_SECONDS,
            ..Claims::access(
                Subject::Invite {
                    db: db.to_owned(),
                    value_id: value_id.to_owned(),
                }
                .to_string(),
                BTreeMap::new(),
                None,
                now,
            )
        }
    }

    /// The provider login these claims name, with the profile they carry;
    /// `None` for an API key's token.
    pub fn login(&self) -> Option<Login> {
        let Ok(Subject::Login { provider, uid }) = self.sub.parse() else {
            return None;
        };
        Some(Login {
            provider,
            uid,
            email: self.email.clone(),
            name: self.name.clone(),
            passkey: self.passkey.clone(),
        })
    }

    /// Carries `login`'s profile (what its provider told of it).
    pub fn set_profile(&mut self, login: &Login) {
        self.email.clone_from(&login.email);
        self.name.clone_from(&login.name);
        self.passkey.clone_from(&login.passkey);
    }

    /// The database and value id an invitation's `sub` names.
    pub fn invitation(&self) -> Option<(&str, &str)> {
        invitation_of(&self.sub)
    }

    /// A refreshed token: issued now, the original login time kept, bound to `ip`.
    pub fn refreshed(&self, accounts: BTreeMap<String, String>, ip: String, now: DateTime<Utc>) -> Claims {
        Claims {
            accounts,
            ip: Some(ip),
            iat: now.timestamp(),
            exp: now.timestamp() + TOKEN_LIFETIME_SECONDS,
            token_use: Some(USE_ACCESS.to_owned()),
            ..self.clone()
        }
    }

    /// What `sub` names; `None` when it is none of the [`Subject`] formats.
    pub fn subject(&self) -> Option<Subject> {
        self.sub.parse().ok()
    }

    /// The caller's person in database `db`, if the token grants it.
    pub fn person_in(&self, db: &str) -> Option<&str> {
        self.accounts.get(db).map(String::as_str)
    }
}

/// The `kid` of tokens signed with `secret`: the first 8 hex characters of
/// its SHA-256, which tells secrets apart without revealing them.
pub fn key_id(secret: &[u8]) -> String {
    hex::encode(Sha256::digest(secret))[..8].to_owned()
}

/// Signs tokens with the current secret; checks them with the secret their
/// `kid` names, the current one or a previous one still accepted.
pub struct JwtKeys {
    encoding: EncodingKey,
    kid: String,
    /// `(kid, key)` of the current secret first, then of the previous ones.
    decoding: Vec<(String, DecodingKey)>,
    untyped_until: DateTime<Utc>,
}

impl JwtKeys {
    pub fn new(secret: &[u8], untyped_tokens_until: NaiveDate) -> JwtKeys {
        JwtKeys {
            encoding: EncodingKey::from_secret(secret),
            kid: key_id(secret),
            decoding: vec![(key_id(secret), DecodingKey::from_secret(secret))],
            untyped_until: untyped_tokens_until
                .and_hms_opt(0, 0, 0)
                .expect("midnight exists")
                .and_utc(),
        }
    }

    /// Also accepts tokens signed with `previous` secrets (rotation).
    pub fn with_previous_secrets<S: AsRef<[u8]>>(mut self, previous: &[S]) -> JwtKeys {
        self.decoding.extend(
            previous
                .iter()
                .map(|secret| (key_id(secret.as_ref()), DecodingKey::from_secret(secret.as_ref()))),
        );
        self
    }

    /// Signs `claims` (a token's, or any other signed document's, such as an
    /// OAuth client id) with the current secret, naming it in `kid`.
    pub fn sign<T: Serialize>(&self, claims: &T) -> Result<String, ApiError> {
        let header = Header {
            kid: Some(self.kid.clone()),
            ..Header::new(Algorithm::HS256)
        };
        jsonwebtoken::encode(&header, claims, &self.encoding).map_err(|e| ApiError::internal("cannot sign a token", e))
    }

    /// Checks a token presented to the REST API: signature, expiry, `use`, and
    /// the address binding.
    pub fn verify_access(&self, token: &str, client_ip: &str, now: DateTime<Utc>) -> Result<Claims, Refusal> {
        let claims = self.verify_signature(token)?;
        if claims.exp <= now.timestamp() {
            return Err(Refusal::Expired);
        }
        self.check_use_and_address(claims, client_ip, now)
    }

    /// Checks a token presented for refresh: as for the API, but an expired
    /// token passes within the idle (14 days from its issue) and absolute
    /// (30 days from the login) limits, and an unbound token never does.
    pub fn verify_refresh(&self, token: &str, client_ip: &str, now: DateTime<Utc>) -> Result<Claims, Refusal> {
        let claims = self.verify_signature(token)?;
        if claims.ip.is_none() {
            return Err(Refusal::Unbound);
        }
        let claims = self.check_use_and_address(claims, client_ip, now)?;
        let now = now.timestamp();
        if now - claims.iat > REFRESH_IDLE_SECONDS {
            return Err(Refusal::IdleLimit);
        }
        if now - claims.auth_time > REFRESH_ABSOLUTE_SECONDS {
            return Err(Refusal::SessionLimit);
        }
        Ok(claims)
    }

    /// Checks a session token: signature, kind, expiry, and that it is bound
    /// to `client_ip`. Its single use is for the caller to record.
    pub fn verify_session(&self, token: &str, client_ip: &str, now: DateTime<Utc>) -> Result<Claims, Refusal> {
        let claims = self.verify_kind(token, USE_SESSION, now)?;
        if claims.ip.as_deref() != Some(client_ip) || claims.jti.is_none() {
            return Err(Refusal::IpMismatch);
        }
        Ok(claims)
    }

    /// Checks an invitation token: signature, kind and expiry.
    pub fn verify_invite(&self, token: &str, now: DateTime<Utc>) -> Result<Claims, Refusal> {
        self.verify_kind(token, USE_INVITE, now)
    }

    fn verify_kind(&self, token: &str, kind: &str, now: DateTime<Utc>) -> Result<Claims, Refusal> {
        let claims = self.verify_signature(token)?;
        if claims.token_use.as_deref() != Some(kind) {
            return Err(Refusal::WrongUse);
        }
        if claims.exp <= now.timestamp() {
            return Err(Refusal::Expired);
        }
        Ok(claims)
    }

    fn verify_signature(&self, token: &str) -> Result<Claims, Refusal> {
        self.verify_signed(token)
    }

    /// The claims of a document this service signed (with the secret its
    /// `kid` names), whatever their shape; expiry is the caller's to check.
    pub fn verify_signed<T: DeserializeOwned>(&self, token: &str) -> Result<T, Refusal> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| Refusal::Invalid)?;
        // Tokens from before `kid` existed were signed with the current secret.
        let kid = header.kid.as_deref().unwrap_or(&self.kid);
        let (_, key) = self.decoding.iter().find(|(id, _)| id == kid).ok_or(Refusal::Invalid)?;
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = 0;
        validation.validate_exp = false; // checked by the callers against the injected clock
        validation.required_spec_claims.clear();
        jsonwebtoken::decode::<T>(token, key, &validation)
            .map(|data| data.claims)
            .map_err(|_| Refusal::Invalid)
    }

    fn check_use_and_address(&self, claims: Claims, client_ip: &str, now: DateTime<Utc>) -> Result<Claims, Refusal> {
        match claims.token_use.as_deref() {
            Some(USE_ACCESS) => {}
            None if now < self.untyped_until => {}
            _ => return Err(Refusal::WrongUse),
        }
        if claims.ip.as_deref().is_some_and(|bound| bound != client_ip) {
            return Err(Refusal::IpMismatch);
        }
        Ok(claims)
    }
}

/// Why a token was refused; each answers 401 with the spec's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Malformed, or not signed with a secret the service accepts.
    Invalid,
    Expired,
    /// Not an access token (or an untyped one past the cutoff).
    WrongUse,
    /// Bound to another client address.
    IpMismatch,
    /// An unbound (OAuth) token presented for refresh.
    Unbound,
    /// Refresh past 14 days from the token's issue.
    IdleLimit,
    /// Refresh past 30 days from the login.
    SessionLimit,
    /// The login it stands for, or every person it names, is deleted.
    Revoked,
}

impl Refusal {
    /// A stable name for metrics.
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::Invalid => "invalid",
            Refusal::Expired => "expired",
            Refusal::WrongUse => "wrong_use",
            Refusal::IpMismatch => "ip_mismatch",
            Refusal::Unbound => "unbound",
            Refusal::IdleLimit => "idle_limit",
            Refusal::SessionLimit => "session_limit",
            Refusal::Revoked => "revoked",
        }
    }
}

impl From<Refusal> for ApiError {
    fn from(refusal: Refusal) -> ApiError {
        ApiError::unauthorized(match refusal {
            Refusal::Expired => "Token expired",
            Refusal::IdleLimit => "Token too old, re-authenticate",
            Refusal::SessionLimit => "Session expired, re-authenticate",
            Refusal::Invalid | Refusal::WrongUse | Refusal::IpMismatch | Refusal::Unbound | Refusal::Revoked => {
                "Invalid token"
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> JwtKeys {
        JwtKeys::new(b"secret", NaiveDate::from_ymd_opt(2026, 11, 6).unwrap())
    }

    fn claims(now: DateTime<Utc>) -> Claims {
        let accounts = BTreeMap::from([("db".to_owned(), "p".to_owned())]);
        Claims::access("api_key:db:v".into(), accounts, Some("127.0.0.1".into()), now)
    }

    #[test]
    fn access_tokens_round_trip() {
        let now = Utc::now();
        let token = keys().sign(&claims(now)).unwrap();
        let back = keys().verify_access(&token, "127.0.0.1", now).unwrap();
        assert_eq!(back, claims(now));
        assert_eq!(back.person_in("db"), Some("p"));
        assert_eq!(back.exp - back.iat, TOKEN_LIFETIME_SECONDS);
    }

    #[test]
    fn another_address_is_refused() {
        let now = Utc::now();
        let token = keys().sign(&claims(now)).unwrap();
        let error = keys().verify_access(&token, "127.0.0.2", now).unwrap_err();
        assert_eq!(error, Refusal::IpMismatch);
        assert_eq!(ApiError::from(error).message, "Invalid token");
    }

    #[test]
    fn expired_and_foreign_tokens_are_refused() {
        let now = Utc::now();
        let token = keys().sign(&claims(now)).unwrap();
        let later = now + chrono::Duration::seconds(TOKEN_LIFETIME_SECONDS);
        assert_eq!(
            keys().verify_access(&token, "127.0.0.1", later).unwrap_err(),
            Refusal::Expired
        );
        let other = JwtKeys::new(b"other", NaiveDate::from_ymd_opt(2026, 11, 6).unwrap());
        assert_eq!(
            other.verify_access(&token, "127.0.0.1", now).unwrap_err(),
            Refusal::Invalid
        );
    }

    #[test]
    fn only_access_tokens_and_untyped_ones_before_the_cutoff_pass() {
        let keys = keys();
        let before = NaiveDate::from_ymd_opt(2026, 11, 1)
            .unwrap()
            .and_hms_opt(0, 0, 0)
            .unwrap()
            .and_utc();
        let after = NaiveDate::from_ymd_opt(2026, 11, 7)
            .unwrap()
            .and_hms_opt(0, 0, 0)
            .unwrap()
            .and_utc();
        for (kind, at, accepted) in [
            (None, before, true),
            (None, after, false),
            (Some("session"), before, false),
        ] {
            let mut claims = claims(at);
            claims.token_use = kind.map(str::to_owned);
            let token = keys.sign(&claims).unwrap();
            assert_eq!(
                keys.verify_access(&token, "127.0.0.1", at).is_ok(),
                accepted,
                "{kind:?}"
            );
        }
    }

    #[test]
    fn a_session_token_lives_five_minutes_at_its_own_address_and_is_no_access_token() {
        let now = Utc::now();
        let claims = Claims::session(
            "login:e-mail:ann@example.com".into(),
            "127.0.0.1".into(),
            "j1".into(),
            now,
        );
        let token = keys().sign(&claims).unwrap();
        assert_eq!(keys().verify_session(&token, "127.0.0.1", now).unwrap(), claims);
        assert_eq!(
            keys().verify_session(&token, "127.0.0.2", now).unwrap_err(),
            Refusal::IpMismatch
        );
        let later = now + chrono::Duration::seconds(SESSION_LIFETIME_SECONDS);
        assert_eq!(
            keys().verify_session(&token, "127.0.0.1", later).unwrap_err(),
            Refusal::Expired
        );
        assert_eq!(
            keys().verify_access(&token, "127.0.0.1", now).unwrap_err(),
            Refusal::WrongUse
        );
        let access = keys().sign(&self::claims(now)).unwrap();
        assert_eq!(
            keys().verify_session(&access, "127.0.0.1", now).unwrap_err(),
            Refusal::WrongUse
        );
    }

    #[test]
    fn a_login_and_its_passkey_round_trip_through_signed_claims() {
        let now = Utc::now();
        let login = Login {
            provider: "passkey".into(),
            uid: "Y3JlZA".into(),
            email: None,
            name: None,
            passkey: Some(StoredPasskey {
                device: "Laptop".into(),
                credential: serde_json::json!({"cred": {"counter": 1}}),
            }),
        };
        let mut claims = Claims::access(login.sub(), BTreeMap::new(), None, now);
        claims.set_profile(&login);
        let keys = keys();
        let verified = keys.verify_access(&keys.sign(&claims).unwrap(), "", now).unwrap();
        assert_eq!(verified.login(), Some(login));
        let key_token = Claims::access("api_key:demo:v1".into(), BTreeMap::new(), None, now);
        assert_eq!(key_token.login(), None, "an API key's token names no login");
    }

    #[test]
    fn a_token_of_the_oauth_server_names_its_client_and_is_told_apart() {
        let now = Utc::now();
        let accounts = BTreeMap::from([("db".to_owned(), "p".to_owned())]);
        let oauth = Claims::for_oauth_client("login:e-mail:a@example.com".into(), accounts, "c1-digest", "read", now);
        let keys = keys();
        let verified = keys
            .verify_access(&keys.sign(&oauth).unwrap(), "127.0.0.9", now)
            .unwrap();
        assert_eq!(verified.oauth_client.as_deref(), Some("c1-digest"));
        assert!(verified.issued_by_oauth());
        assert!(
            !claims(now).issued_by_oauth(),
            "a sign-in's token is bound to its address"
        );
        let mut before_the_claim = claims(now);
        before_the_claim.ip = None;
        assert!(before_the_claim.issued_by_oauth());
    }

    #[test]
    fn a_read_scoped_token_carries_its_scope_and_may_not_write_while_one_without_the_claim_may() {
        let now = Utc::now();
        let accounts = BTreeMap::from([("db".to_owned(), "p".to_owned())]);
        let sub = "login:e-mail:a@example.com";
        let keys = keys();
        let read = Claims::for_oauth_client(sub.into(), accounts.clone(), "c1", "read", now);
        let verified = keys.verify_access(&keys.sign(&read).unwrap(), "", now).unwrap();
        assert_eq!(verified.scope.as_deref(), Some("read"));
        assert!(!verified.may_write());
        assert!(Claims::for_oauth_client(sub.into(), accounts, "c1", "read write", now).may_write());
        assert!(claims(now).may_write(), "a sign-in's token has full rights");
    }

    #[test]
    fn an_invitation_names_its_value_and_lives_a_day() {
        let now = Utc::now();
        let token = keys().sign(&Claims::invite("demo", "v1", now)).unwrap();
        let claims = keys().verify_invite(&token, now).unwrap();
        assert_eq!(claims.invitation(), Some(("demo", "v1")));
        let later = now + chrono::Duration::seconds(INVITE_LIFETIME_SECONDS);
        assert_eq!(keys().verify_invite(&token, later).unwrap_err(), Refusal::Expired);
        assert_eq!(
            keys().verify_access(&token, "127.0.0.1", now).unwrap_err(),
            Refusal::WrongUse
        );
    }

    #[test]
    fn tokens_name_their_secret_and_previous_secrets_still_verify() {
        let now = Utc::now();
        let old = keys().sign(&claims(now)).unwrap();
        let cutoff = NaiveDate::from_ymd_opt(2026, 11, 6).unwrap();
        let rotated = JwtKeys::new(b"new secret", cutoff).with_previous_secrets(&["secret"]);
        assert_eq!(rotated.verify_access(&old, "127.0.0.1", now).unwrap(), claims(now));
        let fresh = rotated.sign(&claims(now)).unwrap();
        let kid = jsonwebtoken::decode_header(&fresh).unwrap().kid.unwrap();
        assert_eq!(kid, key_id(b"new secret"));
        assert_eq!(kid.len(), 8);
        assert_eq!(
            keys().verify_access(&fresh, "127.0.0.1", now).unwrap_err(),
            Refusal::Invalid
        );
        // the old secret dropped from the list: its tokens are refused
        let dropped = JwtKeys::new(b"new secret", cutoff);
        assert_eq!(
            dropped.verify_access(&old, "127.0.0.1", now).unwrap_err(),
            Refusal::Invalid
        );
    }

    #[test]
    fn tokens_without_kid_verify_against_the_current_secret_only() {
        let now = Utc::now();
        let unnamed = |secret: &[u8]| {
            jsonwebtoken::encode(
                &Header::new(Algorithm::HS256),
                &claims(now),
                &EncodingKey::from_secret(secret),
            )
            .unwrap()
        };
        let cutoff = NaiveDate::from_ymd_opt(2026, 11, 6).unwrap();
        let rotated = JwtKeys::new(b"new secret", cutoff).with_previous_secrets(&["secret"]);
        assert!(rotated.verify_access(&unnamed(b"new secret"), "127.0.0.1", now).is_ok());
        assert_eq!(
            rotated
                .verify_access(&unnamed(b"secret"), "127.0.0.1", now)
                .unwrap_err(),
            Refusal::Invalid
        );
    }
}
