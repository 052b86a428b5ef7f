//! Who is calling: the caller extractor, the bearer credential, the client address.

use std::net::IpAddr;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest, web};
use futures_util::future::LocalBoxFuture;

use super::AppState;
use crate::auth::jwt::Claims;
use crate::auth::scope;
use crate::error::ApiError;

/// Who is calling: anonymous, or the holder of an acceptable access token.
/// A token that is present but unacceptable fails the request with 401.
pub struct Caller {
    pub claims: Option<Claims>,
    /// The client address the request came from.
    pub ip: String,
}

impl Caller {
    /// The caller's person in `db`; anonymous and other databases' callers have none.
    pub fn person_in(&self, db: &str) -> Option<&str> {
        self.claims.as_ref()?.person_in(db)
    }

    /// The caller's person in `db`, for routes that need one: 401 without a
    /// token, 403 with a token for other databases only.
    pub fn require_person(&self, db: &str) -> Result<&str, ApiError> {
        match &self.claims {
            None => Err(ApiError::token_required()),
            Some(claims) => claims
                .person_in(db)
                .ok_or_else(|| ApiError::forbidden("The token gives no access to this database")),
        }
    }

    /// 403 `insufficient_scope` for a token granted `read` only: every
    /// write asks this first, before it looks anything up.
    pub fn require_write(&self) -> Result<(), ApiError> {
        if self.claims.as_ref().is_some_and(|claims| !claims.may_write()) {
            return Err(scope::write_refused());
        }
        Ok(())
    }

    /// 403 for a token the OAuth server issued: a credential it added (an
    /// API key, a login, a passkey) would outlive the token and its grant.
    pub fn refuse_oauth_credentials(&self) -> Result<(), ApiError> {
        self.require_write()?;
        if self.claims.as_ref().is_some_and(Claims::issued_by_oauth) {
            return Err(ApiError::forbidden(
                "OAuth tokens cannot add credentials (API keys, logins, passkeys)",
            ));
        }
        Ok(())
    }
}

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Caller, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { caller(&req).await })
    }
}

/// The caller of `req`: the token checked, then its login (see [`LoginChecks`](crate::sign_in::login_checks::LoginChecks)).
async fn caller(req: &HttpRequest) -> Result<Caller, ApiError> {
    let state = state(req)?;
    let ip = client_ip(req, &state.trusted_proxies);
    let Some(token) = bearer(req) else {
        return Ok(Caller { claims: None, ip });
    };
    let claims = state
        .jwt
        .verify_access(token, &ip, state.clock.now())
        .map_err(|refusal| {
            crate::metrics::token_refused("request", refusal.reason());
            ApiError::from(refusal)
        })?;
    let claims = state
        .logins
        .live_claims(&state.pool, state.clock.now(), claims, "request")
        .await?;
    Ok(Caller {
        claims: Some(claims),
        ip,
    })
}

fn state(req: &HttpRequest) -> Result<&AppState, ApiError> {
    req.app_data::<web::Data<AppState>>()
        .map(|data| data.get_ref())
        .ok_or_else(|| ApiError::internal("request without app state", "missing AppState"))
}

/// The credential of an `Authorization: Bearer` header.
pub fn bearer(req: &HttpRequest) -> Option<&str> {
    let value = req.headers().get("Authorization")?.to_str().ok()?;
    let (scheme, credential) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credential.trim())
        .filter(|c| !c.is_empty())
}

/// The client address: the socket peer, or the last `X-Forwarded-For` entry
/// when the peer is a trusted proxy. Every header line counts, in order: a
/// proxy may append its own line after the client's, and only the entry it
/// added last is its own.
pub fn client_ip(req: &HttpRequest, trusted_proxies: &[IpAddr]) -> String {
    let peer = req.peer_addr().map(|addr| addr.ip());
    if let Some(peer) = peer.filter(|peer| trusted_proxies.contains(peer)) {
        let forwarded = req
            .headers()
            .get_all("X-Forwarded-For")
            .last()
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.rsplit(',').next())
            .and_then(|last| last.trim().parse::<IpAddr>().ok());
        return forwarded.unwrap_or(peer).to_string();
    }
    peer.map(|ip| ip.to_string()).unwrap_or_default()
}
