//! Who is calling: the extractor of the [`Caller`] (its token checked, then
//! its login), the bearer credential, the client address.

use std::net::IpAddr;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpMessage, HttpRequest, web};
use futures_util::future::LocalBoxFuture;

use super::AppState;
use super::middleware::consistency::WrittenPosition;
use crate::error::ApiError;
use crate::service::Caller;
use crate::service::consistency::{self, Consistency};

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
    let consistency = consistency(req, state);
    let Some(token) = bearer(req) else {
        return Ok(Caller {
            claims: None,
            ip,
            consistency,
        });
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
        .live_claims(&state.clusters, state.clock.now(), claims, "request")
        .await?;
    Ok(Caller {
        claims: Some(claims),
        ip,
        consistency,
    })
}

/// The position `req`'s `Eds-Consistency` header vouches for (a missing,
/// malformed or foreign one counts as none), and the slot its write fills
/// for the answer's header.
fn consistency(req: &HttpRequest, state: &AppState) -> Consistency {
    let seen = req
        .headers()
        .get(consistency::HEADER)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| state.replicas.signer.verify(consistency::HOME_CLUSTER, value))
        .unwrap_or(0);
    let consistency = Consistency {
        seen,
        ..Default::default()
    };
    req.extensions_mut()
        .insert(WrittenPosition(consistency.written.clone()));
    consistency
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
