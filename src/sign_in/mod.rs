//! Signing people in: the flows between the HTTP handlers and the parts they
//! use (tokens, the sign-in state actor, mail, the writer).
//!
//! - `mod.rs`: session tokens, the end of every provider's flow;
//! - `email.rs`: the e-mail provider's single-use links;
//! - `forms.rs`: the pages' forms are posted from those pages only;
//! - `accounts.rs`: the databases and persons a login reaches, and where a sign-in lands;
//! - `invite.rs`: invitations, mailed and accepted;
//! - `confirm_invite.rs`: an invitation a sign-in carries waits for the person's yes;
//! - `oidc.rs`: OpenID Connect providers (Google, Apple, eID brokers);
//! - `passkey.rs`: passkeys (WebAuthn);
//! - `app_passkey.rs`: the JSON passkey ceremony apps run;
//! - `oauth.rs`: the OAuth server's authorization requests and codes;
//! - `authorize.rs`: the checks of an authorization request (pure);
//! - `authorize_request.rs`: an authorization request, checked, to its sign-in;
//! - `client_metadata.rs`: clients described by client ID metadata documents, fetched and kept;
//! - `login_checks.rs`: whether an accepted token's login still stands;
//! - `consent.rs`: the person's consent to an OAuth client, asked and remembered;
//! - `consent_flow.rs`: an authorization after its sign-in, to a code or a refusal.

pub mod accounts;
pub mod app_passkey;
pub mod authorize;
pub mod authorize_request;
pub mod client_metadata;
pub mod confirm_invite;
pub mod consent;
pub mod consent_flow;
pub mod email;
pub mod forms;
pub mod invite;
pub mod login_checks;
pub mod oauth;
pub mod oidc;
pub mod passkey;

use chrono::{DateTime, Utc};
use rand::RngCore;
use sha2::{Digest, Sha256};

use crate::actors::sessions::SessionStore;
use crate::auth::jwt::{Claims, JwtKeys, SESSION_LIFETIME_SECONDS};
use crate::auth::login::{EMAIL_PROVIDER, Login, PASSKEY_PROVIDER};
use crate::db::sign_in::Issued;
use crate::error::{ApiError, ErrorCode};
use crate::mail::Mailer;
use crate::metrics;
use crate::write;

/// State kind of an issued session token.
const SESSION: &str = "session";

/// What the sign-in flows share: the state actor, the mailer, and the
/// address links point back to.
pub struct SignIn {
    pub sessions: SessionStore,
    pub mailer: Mailer,
    pub oidc: oidc::OidcProviders,
    pub passkeys: passkey::Passkeys,
    pub client_documents: client_metadata::ClientDocuments,
    /// `http.public_url`, without a trailing slash.
    pub public_url: String,
    /// `http.api_url` (the OAuth issuer), else `public_url`; no trailing slash.
    pub api_url: String,
    /// `auth.allowed_next_origins`, as origins (`scheme://host[:port]`);
    /// empty: any https origin and the loopback http ones.
    pub allowed_next_origins: Vec<String>,
}

/// A provider's sign-in completed: who signed in, and where to.
pub struct Completed {
    pub login: Login,
    pub next: Option<String>,
    pub invite: Option<String>,
}

impl SignIn {
    /// Whether this server offers sign-in with `provider` (one of
    /// [`PROVIDERS`]): e-mail always; the others when configured.
    pub fn offers(&self, provider: &str) -> bool {
        match provider {
            EMAIL_PROVIDER => true,
            PASSKEY_PROVIDER => self.passkeys.is_configured(),
            provider => self.oidc.is_configured(provider),
        }
    }

    /// `next` as given, if a sign-in may send the browser there: an
    /// absolute https URL (or a loopback http one), on one of
    /// `auth.allowed_next_origins` when that is set, or this server's own
    /// OAuth completion (whatever its scheme); 400 `invalid_next` otherwise.
    pub fn check_next<'a>(&self, next: &'a str) -> Result<&'a str, ApiError> {
        let completion = format!("{}/auth/authorize/complete?", self.api_url);
        if next.starts_with(&completion) && !next.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Ok(next);
        }
        check_next(next, &self.allowed_next_origins)
    }

    /// A session token for `login`, bound to `client_ip`: 5 minutes, single
    /// use; it carries the invitation the sign-in began with, if any.
    /// Recorded in PostgreSQL before it is handed out.
    pub async fn issue_session(
        &self,
        jwt: &JwtKeys,
        login: &Login,
        invite: Option<&str>,
        client_ip: &str,
        now: DateTime<Utc>,
    ) -> Result<String, ApiError> {
        let jti = random_token();
        let mut claims = Claims::session(login.sub(), client_ip.to_owned(), jti.clone(), now);
        claims.set_profile(login);
        claims.invite = invite.map(str::to_owned);
        self.sessions
            .issue(Issued {
                id: jti,
                kind: SESSION,
                client_ip: client_ip.to_owned(),
                data: serde_json::Value::Null,
                expires_at: now + chrono::Duration::seconds(SESSION_LIFETIME_SECONDS),
            })
            .await?;
        jwt.sign(&claims)
    }

    /// The login of a session token presented from `client_ip`, and the
    /// invitation it carries, using it up: 401 `Invalid token` when it is
    /// malformed, expired, from another address, or used before (by any process).
    pub async fn exchange_session(
        &self,
        jwt: &JwtKeys,
        token: &str,
        client_ip: &str,
        now: DateTime<Utc>,
    ) -> Result<(Login, Option<String>), ApiError> {
        let refused = |reason: &'static str| {
            metrics::token_refused("login", reason);
            ApiError::unauthorized("Invalid token")
        };
        let claims = jwt
            .verify_session(token, client_ip, now)
            .map_err(|refusal| refused(refusal.reason()))?;
        let jti = claims.jti.as_deref().unwrap_or_default();
        if self.sessions.consume(jti, SESSION, client_ip, now).await?.is_none() {
            return Err(refused("used"));
        }
        let login = claims.login().ok_or_else(|| refused("invalid"))?;
        Ok((login, claims.invite))
    }
}

impl SignIn {
    /// Uses up the state `token` names (its SHA-256) of `kind`, issued to
    /// `client_ip`, and reads it back as what was recorded; `unknown` when
    /// it is unknown, used, expired, from another address or unreadable.
    async fn take<T: serde::de::DeserializeOwned>(
        &self,
        token: &str,
        kind: &'static str,
        client_ip: &str,
        now: DateTime<Utc>,
        unknown: impl Fn() -> ApiError,
    ) -> Result<T, ApiError> {
        let data = self
            .sessions
            .consume(&state_id(token), kind, client_ip, now)
            .await?
            .ok_or_else(&unknown)?;
        serde_json::from_value(data).map_err(|_| unknown())
    }
}

/// 503 `provider_unavailable`: this server does not offer `provider`.
fn unavailable(provider: &str) -> ApiError {
    ApiError::new(
        ErrorCode::ProviderUnavailable,
        format!("Sign-in with {provider} is not configured on this server"),
    )
}

/// 400 `invalid_sign_in`: a provider's answer that signs in nobody.
fn refused(detail: &str) -> ApiError {
    ApiError::new(
        ErrorCode::InvalidSignIn,
        format!("The sign-in did not complete: {detail}"),
    )
}

/// The language of sign-in pages and mails (`lang`: `en`, the default, or `et`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lang {
    #[default]
    En,
    Et,
}

impl Lang {
    /// `lang` as given; anything but `et` is English.
    pub fn from_query(lang: Option<&str>) -> Lang {
        match lang {
            Some("et") => Lang::Et,
            _ => Lang::En,
        }
    }

    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Et => "et",
        }
    }
}

/// 32 random bytes, hex: a link's or a token's secret part.
pub fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// What state issued for a random token is stored under: its SHA-256, so
/// the table never holds a usable token.
pub fn state_id(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The longest `next` or `invite` a sign-in carries: each is stored with
/// its state until the person signs in.
const MAX_CARRIED_BYTES: usize = 2048;

/// `next` as given, if a sign-in may send the browser there: an absolute
/// https URL, or an http URL on the loopback host (local development, as
/// RFC 8252 allows); with `allowed_origins`, only on one of those origins.
/// 400 `invalid_next` otherwise.
fn check_next<'a>(next: &'a str, allowed_origins: &[String]) -> Result<&'a str, ApiError> {
    let invalid = |why: &'static str| Err(ApiError::new(ErrorCode::InvalidNext, why));
    if next.len() > MAX_CARRIED_BYTES {
        return invalid("next is longer than 2,048 bytes");
    }
    let (scheme, rest) = next.split_once("://").unwrap_or_default();
    let well_formed = !rest.is_empty()
        && !rest.starts_with(['/', '?', '#', '@', '\\'])
        && !next.chars().any(|c| c.is_whitespace() || c.is_control());
    let Some(url) = url::Url::parse(next).ok().filter(|_| well_formed) else {
        return invalid("next must be an absolute https URL");
    };
    let loopback = matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
    if !(scheme == "https" || scheme == "http" && loopback) {
        return invalid("next must be an absolute https URL");
    }
    let origin = url.origin().ascii_serialization();
    if !allowed_origins.is_empty() && !allowed_origins.contains(&origin) {
        return invalid("next is not on an origin this server sends sign-ins to");
    }
    Ok(next)
}

/// `invite` as given, if it is short enough to carry through a sign-in:
/// 400 `invalid_invite` otherwise.
pub fn check_invite(invite: &str) -> Result<&str, ApiError> {
    if invite.len() > MAX_CARRIED_BYTES {
        return Err(write::login::invalid_invite());
    }
    Ok(invite)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_must_be_an_absolute_https_url_or_a_loopback_http_one() {
        for good in [
            "https://app.example.com/done?key=",
            "http://localhost:3000/auth?key=",
            "http://127.0.0.1/",
            "http://[::1]:8080/x#key=",
        ] {
            assert_eq!(check_next(good, &[]).unwrap(), good);
        }
        for bad in [
            "http://app.example.com/",
            "http://localhost@evil.example/",
            "http://localhost.evil.example/",
            "https://",
            "https:///path",
            "https://\\evil.example",
            "//app.example.com",
            "javascript:alert(1)",
            "https://app.example.com/\r\nSet-Cookie: x",
        ] {
            assert_eq!(check_next(bad, &[]).unwrap_err().code, ErrorCode::InvalidNext, "{bad}");
        }
    }

    #[test]
    fn next_and_invite_are_at_most_2048_bytes() {
        let long_next = format!("https://app.example.com/{}", "a".repeat(2048));
        assert_eq!(check_next(&long_next[..2048], &[]).unwrap().len(), 2048);
        assert_eq!(check_next(&long_next, &[]).unwrap_err().code, ErrorCode::InvalidNext);
        assert!(check_invite(&"i".repeat(2048)).is_ok());
        assert_eq!(
            check_invite(&"i".repeat(2049)).unwrap_err().code,
            ErrorCode::InvalidInvite
        );
    }

    #[test]
    fn allowed_next_origins_narrow_next_to_those_origins() {
        let allowed = ["https://app.example.com".to_owned(), "http://localhost:3000".to_owned()];
        assert!(check_next("https://app.example.com/signed-in?key=", &allowed).is_ok());
        assert!(check_next("http://localhost:3000/?key=", &allowed).is_ok());
        for refused in [
            "https://other.example.com/",
            "http://localhost:3001/",
            "https://app.example.com.evil.example/",
        ] {
            assert_eq!(
                check_next(refused, &allowed).unwrap_err().code,
                ErrorCode::InvalidNext,
                "{refused}"
            );
        }
    }

    #[test]
    fn state_is_stored_under_a_digest_of_its_token() {
        let token = random_token();
        assert_eq!(token.len(), 64);
        assert_ne!(random_token(), token);
        assert_eq!(state_id(&token).len(), 64);
        assert_ne!(state_id(&token), token);
    }
}
