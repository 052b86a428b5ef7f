//! The OAuth 2.1 server's flow: an authorization request is recorded (bound
//! to the browser), the person signs in through a provider whose `next` is
//! this server's completion URL, and the completion issues a code (5
//! minutes, single use, not bound to an address: the client's server may
//! redeem it) that the token endpoint exchanges for an access token bound to
//! the one database and to no address.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{SignIn, random_token, state_id};
use crate::auth::jwt::{Claims, JwtKeys};
use crate::auth::login::Login;
use crate::auth::oauth::verifier_matches;
use crate::db::sign_in::Issued;
use crate::error::{ApiError, ErrorCode};

/// State kinds: a pending authorization, and an issued code.
const REQUEST: &str = "oauth_request";
const CODE: &str = "oauth_code";
/// A person has this long to sign in once the client sent them.
const REQUEST_LIFETIME_SECONDS: i64 = 10 * 60;
const CODE_LIFETIME_SECONDS: i64 = 5 * 60;
/// Codes are redeemed from anywhere: their state is bound to no address.
const UNBOUND: &str = "";

/// An authorization the client asked for, checked. It keeps digests of the
/// client id and the resource (both compared only, and unbounded in size).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Authorization {
    pub client_digest: String,
    pub client_name: Option<String>,
    /// The host of the `client_id` URL of a client a metadata document describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_host: Option<String>,
    pub redirect_uri: String,
    pub code_challenge: String,
    pub state: Option<String>,
    pub db: String,
    pub resource_digest: Option<String>,
    /// The scopes asked, space-separated.
    pub scope: String,
    /// The language of the pages the person sees (`en` or `et`).
    pub lang: String,
}

/// What a code stands for.
#[derive(Serialize, Deserialize)]
struct Granted {
    authorization: Authorization,
    sub: String,
    person: String,
}

/// What the client sends to redeem a code.
pub struct Redemption<'a> {
    pub code: &'a str,
    pub redirect_uri: &'a str,
    pub code_verifier: &'a str,
    pub client_id: Option<&'a str>,
    pub resource: Option<&'a str>,
}

/// The SHA-256 of `text`, hex: what a pending authorization keeps of the
/// client id and the resource, which are compared, never shown.
pub fn digest(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// A code redeemed: the access token and the scope it grants.
pub struct Redeemed {
    pub access_token: String,
    pub scope: String,
}

fn invalid_grant(why: &'static str) -> ApiError {
    ApiError::new(ErrorCode::InvalidGrant, why)
}

impl SignIn {
    /// Records `authorization` for the browser at `client_ip`; answers the
    /// URL the sign-in returns to (its `next`, the session token appended).
    pub async fn begin_authorization(
        &self,
        authorization: &Authorization,
        client_ip: &str,
        now: DateTime<Utc>,
    ) -> Result<String, ApiError> {
        let token = random_token();
        self.sessions
            .issue(Issued {
                id: state_id(&token),
                kind: REQUEST,
                client_ip: client_ip.to_owned(),
                data: serde_json::to_value(authorization)
                    .map_err(|e| ApiError::internal("cannot record an authorization", e))?,
                expires_at: now + chrono::Duration::seconds(REQUEST_LIFETIME_SECONDS),
            })
            .await?;
        Ok(format!("{}/auth/authorize/complete?request={token}&key=", self.api_url))
    }

    /// Uses up the authorization `request` names, for the browser that began it.
    pub async fn take_authorization(
        &self,
        request: &str,
        client_ip: &str,
        now: DateTime<Utc>,
    ) -> Result<Authorization, ApiError> {
        let expired = || {
            ApiError::new(
                ErrorCode::InvalidRequest,
                "This authorization is unknown, used or expired: start again from the app",
            )
        };
        self.take(request, REQUEST, client_ip, now, expired).await
    }

    /// A code for `login`, signed in as `person` in the authorization's database.
    pub async fn issue_code(
        &self,
        authorization: Authorization,
        login: &Login,
        person: String,
        now: DateTime<Utc>,
    ) -> Result<String, ApiError> {
        let code = random_token();
        let granted = Granted {
            authorization,
            sub: login.sub(),
            person,
        };
        self.sessions
            .issue(Issued {
                id: state_id(&code),
                kind: CODE,
                client_ip: UNBOUND.to_owned(),
                data: serde_json::to_value(&granted).map_err(|e| ApiError::internal("cannot record a code", e))?,
                expires_at: now + chrono::Duration::seconds(CODE_LIFETIME_SECONDS),
            })
            .await?;
        Ok(code)
    }

    /// Redeems a code, once: the access token it grants, bound to its
    /// database and to no address, carrying the authorization's scope. The code is used up by the first
    /// attempt, right or wrong, so a guessed verifier gets one try.
    pub async fn redeem_code(
        &self,
        jwt: &JwtKeys,
        redemption: Redemption<'_>,
        now: DateTime<Utc>,
    ) -> Result<Redeemed, ApiError> {
        let unknown = || invalid_grant("The code is unknown, used or expired");
        let granted: Granted = self.take(redemption.code, CODE, UNBOUND, now, unknown).await?;
        let authorization = &granted.authorization;
        if redemption.redirect_uri != authorization.redirect_uri {
            return Err(invalid_grant("redirect_uri differs from the authorization's"));
        }
        if redemption
            .client_id
            .is_some_and(|client| digest(client) != authorization.client_digest)
        {
            return Err(invalid_grant("The code was issued to another client"));
        }
        if !verifier_matches(redemption.code_verifier, &authorization.code_challenge) {
            return Err(invalid_grant("code_verifier does not match the code_challenge"));
        }
        if redemption
            .resource
            .is_some_and(|resource| Some(digest(resource)) != authorization.resource_digest)
        {
            return Err(ApiError::new(
                ErrorCode::InvalidTarget,
                "resource differs from the authorization's",
            ));
        }
        let accounts = BTreeMap::from([(authorization.db.clone(), granted.person)]);
        let Authorization {
            client_digest, scope, ..
        } = granted.authorization;
        let claims = Claims::for_oauth_client(granted.sub, accounts, &client_digest, &scope, now);
        Ok(Redeemed {
            access_token: jwt.sign(&claims)?,
            scope,
        })
    }
}
