//! The challenge of every 401 under `/api/` (RFC 9110 §15.5.2, RFC 6750 §3):
//! a strict OAuth client learns from `WWW-Authenticate` how to authenticate,
//! and from a write refused for its scope (403 `insufficient_scope`) which
//! scope to ask for (step-up authorization).

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::http::header::{HeaderValue, WWW_AUTHENTICATE};
use actix_web::middleware::Next;

use crate::auth::scope::WRITE_CHALLENGE;
use crate::error::{ApiError, ErrorCode};
use crate::http::bearer;

/// Adds `WWW-Authenticate: Bearer` to an API's 401, or completes the
/// route's own challenge (the MCP route names its resource metadata); and
/// the `write` scope's challenge to a write refused for its scope.
pub async fn challenge(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> actix_web::Result<ServiceResponse<impl MessageBody>> {
    let api = req.path().starts_with("/api/");
    let token_sent = bearer(req.request()).is_some();
    let mut response = next.call(req).await?;
    if api && response.status() == StatusCode::UNAUTHORIZED {
        let headers = response.headers_mut();
        let given = headers.get(WWW_AUTHENTICATE).and_then(|value| value.to_str().ok());
        if let Ok(value) = HeaderValue::from_str(&bearer_challenge(given, token_sent)) {
            headers.insert(WWW_AUTHENTICATE, value);
        }
    }
    let refused_scope = response
        .response()
        .error()
        .and_then(|error| error.as_error::<ApiError>())
        .is_some_and(|error| error.code == ErrorCode::InsufficientScope);
    if refused_scope {
        let value = HeaderValue::from_static(WRITE_CHALLENGE);
        response.headers_mut().insert(WWW_AUTHENTICATE, value);
    }
    Ok(response)
}

/// `Bearer` (or the route's challenge), with `error="invalid_token"` when a
/// token was sent and refused.
fn bearer_challenge(given: Option<&str>, token_sent: bool) -> String {
    let given = given.unwrap_or("Bearer");
    match (token_sent, given.contains("error=")) {
        (true, false) if given == "Bearer" => r#"Bearer error="invalid_token""#.to_owned(),
        (true, false) => format!(r#"{given}, error="invalid_token""#),
        _ => given.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sent_token_is_named_invalid_and_a_route_s_challenge_is_kept() {
        assert_eq!(bearer_challenge(None, false), "Bearer");
        assert_eq!(bearer_challenge(None, true), r#"Bearer error="invalid_token""#);
        let mcp = r#"Bearer resource_metadata="https://x/.well-known/oauth-protected-resource/api/demo/mcp""#;
        assert_eq!(bearer_challenge(Some(mcp), false), mcp);
        assert_eq!(
            bearer_challenge(Some(mcp), true),
            format!(r#"{mcp}, error="invalid_token""#)
        );
    }
}
