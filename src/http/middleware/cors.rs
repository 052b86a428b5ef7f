//! Cross-origin access for browser clients.

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::http::header::{self, HeaderValue};
use actix_web::middleware::Next;

/// CORS as the original serves it: any origin, credentials travel in the
/// `Authorization` header (never cookies), preflights answered with 204.
/// HTML answers (the sign-in, consent and confirmation pages) carry none:
/// another site has no business reading them.
pub async fn cors(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> actix_web::Result<ServiceResponse<EitherBody<impl MessageBody>>> {
    if req.method() == Method::OPTIONS && req.headers().contains_key(header::ACCESS_CONTROL_REQUEST_METHOD) {
        let mut preflight = actix_web::HttpResponse::NoContent();
        preflight
            .insert_header((header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"))
            .insert_header((header::ACCESS_CONTROL_ALLOW_METHODS, "GET, POST, PUT, DELETE, OPTIONS"))
            .insert_header((header::ACCESS_CONTROL_MAX_AGE, "86400"));
        if let Some(asked) = req.headers().get(header::ACCESS_CONTROL_REQUEST_HEADERS) {
            preflight.insert_header((header::ACCESS_CONTROL_ALLOW_HEADERS, asked.clone()));
        }
        return Ok(req.into_response(preflight.finish()).map_into_right_body());
    }
    let mut response = next.call(req).await?;
    let headers = response.headers_mut();
    let html = headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"text/html"));
    if html {
        return Ok(response.map_into_left_body());
    }
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("Retry-After, WWW-Authenticate, X-Request-Id, Eds-Consistency"),
    );
    Ok(response.map_into_left_body())
}
