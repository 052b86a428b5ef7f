//! Request counts and latencies for `/metrics`.

use std::time::Instant;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;

use crate::metrics;

/// Observes every request under its route's pattern.
pub async fn observe(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> actix_web::Result<ServiceResponse<impl MessageBody>> {
    let started = Instant::now();
    let method = req.method().clone();
    let result = next.call(req).await;
    // Once routed, the request names its resource's pattern at once; asked
    // before routing, it searched every route's pattern on every request.
    let (route, status) = match &result {
        Ok(response) => (response.request().match_pattern(), response.status()),
        Err(error) => (None, error.as_response_error().status_code()),
    };
    let route = route.unwrap_or_else(|| "unmatched".to_owned());
    metrics::observe_request(&method, &route, status, started.elapsed().as_secs_f64());
    result
}
