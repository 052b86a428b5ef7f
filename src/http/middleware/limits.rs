//! The rate limits (`crate::service::rate_limits`) charged per request: every
//! request draws from the `requests` bucket, and routes that exchange
//! credentials or sign in also from the stricter `auth` bucket.

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::middleware::Next;
use actix_web::{ResponseError, web};

use crate::error::ApiError;
use crate::http::AppState;
use crate::http::caller::client_ip;
use crate::metrics;
use crate::service::rate_limits::{Bucket, RateLimits, address_key};

/// The stricter bucket a route draws from besides `Requests`, by method and
/// route pattern. Sign-in routes join `Auth` here.
fn route_bucket(method: &Method, pattern: &str) -> Option<Bucket> {
    let signs_in = match pattern {
        "/api/auth" | "/api/new" => true,
        // a refresh only re-signs a token the caller holds
        "/api/auth/refresh" => false,
        _ => pattern.starts_with("/api/auth/") || pattern.starts_with("/auth/"),
    };
    // `PUT /api/new` is the original's way of creating a database
    (signs_in && [Method::GET, Method::POST, Method::PUT].contains(method)).then_some(Bucket::Auth)
}

/// Whether a route that [`route_bucket`] names may match `path`: its
/// pattern's fixed start is the path's.
fn may_sign_in(path: &str) -> bool {
    path.starts_with("/api/auth") || path.starts_with("/auth/") || path == "/api/new"
}

/// Answers 429 once the client address is over a bucket it draws from.
pub async fn middleware(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> actix_web::Result<ServiceResponse<EitherBody<impl MessageBody>>> {
    let (Some(limits), Some(state)) = (
        req.app_data::<web::Data<RateLimits>>(),
        req.app_data::<web::Data<AppState>>(),
    ) else {
        return Ok(next.call(req).await?.map_into_left_body());
    };
    let key = address_key(&client_ip(req.request(), &state.trusted_proxies));
    // Before routing, a pattern is found by trying every route's; only
    // sign-in paths can match a route with a stricter bucket.
    let stricter = may_sign_in(req.path())
        .then(|| req.match_pattern())
        .flatten()
        .and_then(|pattern| route_bucket(req.method(), &pattern));
    for bucket in std::iter::once(Bucket::Requests).chain(stricter) {
        if let Err(wait) = limits.check(bucket, &key) {
            metrics::rate_limited(bucket.name());
            let response = ApiError::rate_limited(wait).error_response();
            return Ok(req.into_response(response).map_into_right_body());
        }
    }
    Ok(next.call(req).await?.map_into_left_body())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_exchange_draws_from_the_auth_bucket() {
        assert_eq!(route_bucket(&Method::GET, "/api/auth"), Some(Bucket::Auth));
        assert_eq!(route_bucket(&Method::GET, "/api/auth/refresh"), None);
        assert_eq!(route_bucket(&Method::POST, "/api/auth/{provider}"), Some(Bucket::Auth));
        assert_eq!(route_bucket(&Method::POST, "/api/new"), Some(Bucket::Auth));
        assert_eq!(route_bucket(&Method::PUT, "/api/new"), Some(Bucket::Auth));
        assert_eq!(route_bucket(&Method::GET, "/api/{db}/entity"), None);
    }

    #[test]
    fn every_route_with_a_stricter_bucket_has_a_path_that_may_sign_in() {
        let endpoints = crate::http::endpoints();
        let stricter: Vec<&str> = endpoints
            .iter()
            .filter(|endpoint| route_bucket(&endpoint.method, endpoint.path).is_some())
            .map(|endpoint| endpoint.path)
            .collect();
        assert!(stricter.contains(&"/api/auth/{provider}"), "{stricter:?}");
        for path in stricter {
            assert!(may_sign_in(path), "{path}");
        }
        assert!(!may_sign_in("/api/demo/entity/6571f3a4c2b9e8d7f6a5b4c3"));
    }
}
