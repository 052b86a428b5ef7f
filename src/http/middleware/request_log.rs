//! The request id and the one log line per request.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::middleware::Next;
use tracing::Instrument;

/// Gives every request an id (its `X-Request-Id`, or a new one), echoed in the
/// response and carried by every log line written while serving it, and logs
/// the request once done. The path is logged without its query string:
/// signed storage URLs carry their signature there, and logs hold no credential.
pub async fn request_log(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> actix_web::Result<ServiceResponse<impl MessageBody>> {
    let given = req
        .headers()
        .get(REQUEST_ID)
        .and_then(|value| value.to_str().ok())
        .filter(|id| !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_owned);
    let id = given.unwrap_or_else(crate::model::ids::new_id);
    let span = tracing::info_span!("request", request_id = %id);
    let (method, path) = (req.method().clone(), req.path().to_owned());
    let started = std::time::Instant::now();
    let mut response = next.call(req).instrument(span.clone()).await?;
    span.in_scope(|| {
        tracing::info!(
            %method,
            %path,
            status = response.status().as_u16(),
            ms = started.elapsed().as_secs_f64() * 1000.0,
            "served"
        )
    });
    if let Ok(value) = HeaderValue::from_str(&id) {
        response
            .headers_mut()
            .insert(header::HeaderName::from_static(REQUEST_ID), value);
    }
    Ok(response)
}

const REQUEST_ID: &str = "x-request-id";
