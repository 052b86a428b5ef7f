//! Consent to an OAuth client: after the sign-in, before any person is made
//! or code issued, the person is asked (a single-use token bound to the
//! pending authorization and their address), unless they allowed the same
//! client, redirect URI and scopes in that database within 30 days.

use chrono::{DateTime, Utc};
use diesel_async::AsyncPgConnection;
use serde::{Deserialize, Serialize};

use super::oauth::Authorization;
use super::{SignIn, random_token, state_id};
use crate::auth::login::Login;
use crate::db::consents::{self, ConsentKey};
use crate::db::sign_in::Issued;
use crate::error::{ApiError, ErrorCode};

/// State kind of a consent being asked.
const CONSENT: &str = "oauth_consent";
/// The consent page's answer is taken this long.
const CONSENT_LIFETIME_SECONDS: i64 = 10 * 60;
/// A consent given is remembered this long.
const REMEMBERED_DAYS: i64 = 30;

/// An authorization a signed-in person is asked to allow.
#[derive(Debug, Serialize, Deserialize)]
pub struct PendingConsent {
    pub authorization: Authorization,
    pub login: Login,
}

/// The key a consent to `authorization` by `person` is remembered under.
pub fn consent_key(authorization: &Authorization, person: &str) -> ConsentKey {
    ConsentKey {
        db: authorization.db.clone(),
        person: person.to_owned(),
        client_digest: authorization.client_digest.clone(),
        redirect_uri: authorization.redirect_uri.clone(),
        scope: normalized_scope(&authorization.scope),
    }
}

/// Scopes sorted and without repeats, so the same set is the same key.
fn normalized_scope(scope: &str) -> String {
    let mut scopes: Vec<&str> = scope.split_whitespace().collect();
    scopes.sort_unstable();
    scopes.dedup();
    scopes.join(" ")
}

/// Whether `person` allowed this authorization's client, redirect URI and
/// scopes in its database within the last 30 days.
pub async fn is_remembered(
    conn: &mut AsyncPgConnection,
    authorization: &Authorization,
    person: &str,
    now: DateTime<Utc>,
) -> Result<bool, ApiError> {
    Ok(consents::is_remembered(conn, &consent_key(authorization, person), now).await?)
}

/// Remembers that `person` allowed this authorization, for 30 days.
pub async fn remember(
    conn: &mut AsyncPgConnection,
    authorization: &Authorization,
    person: &str,
    now: DateTime<Utc>,
) -> Result<(), ApiError> {
    let until = now + chrono::Duration::days(REMEMBERED_DAYS);
    Ok(consents::remember(conn, &consent_key(authorization, person), until).await?)
}

impl SignIn {
    /// Records `pending` for the browser at `client_ip`; answers the token
    /// the consent page's form (and its deny link) carries.
    pub async fn ask_consent(
        &self,
        pending: &PendingConsent,
        client_ip: &str,
        now: DateTime<Utc>,
    ) -> Result<String, ApiError> {
        let token = random_token();
        self.sessions
            .issue(Issued {
                id: state_id(&token),
                kind: CONSENT,
                client_ip: client_ip.to_owned(),
                data: serde_json::to_value(pending).map_err(|e| ApiError::internal("cannot record a consent", e))?,
                expires_at: now + chrono::Duration::seconds(CONSENT_LIFETIME_SECONDS),
            })
            .await?;
        Ok(token)
    }

    /// Uses up the consent `token` names, for the browser it was shown to.
    pub async fn take_consent(
        &self,
        token: &str,
        client_ip: &str,
        now: DateTime<Utc>,
    ) -> Result<PendingConsent, ApiError> {
        let expired = || {
            ApiError::new(
                ErrorCode::InvalidRequest,
                "This consent is unknown, used or expired: start again from the app",
            )
        };
        self.take(token, CONSENT, client_ip, now, expired).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn authorization(scope: &str, redirect_uri: &str) -> Authorization {
        Authorization {
            client_digest: "c".repeat(64),
            client_name: None,
            client_host: None,
            redirect_uri: redirect_uri.to_owned(),
            code_challenge: "x".repeat(43),
            state: None,
            db: "demo".to_owned(),
            resource_digest: None,
            scope: scope.to_owned(),
            lang: "en".to_owned(),
        }
    }

    #[test]
    fn the_same_scopes_in_any_order_are_one_key_and_anything_else_another() {
        let cb = "https://app.example/cb";
        let key = consent_key(&authorization("read write", cb), "p1");
        assert_eq!(consent_key(&authorization("write  read read", cb), "p1"), key);
        assert_ne!(consent_key(&authorization("read", cb), "p1"), key);
        assert_ne!(
            consent_key(&authorization("read write", "https://app.example/other"), "p1"),
            key
        );
        assert_ne!(consent_key(&authorization("read write", cb), "p2"), key);
    }
}
