//! `GET /metrics`: the process's metrics in the Prometheus text format.

use actix_web::{HttpRequest, HttpResponse, web};
use subtle::ConstantTimeEq;

use super::{AppState, bearer};
use crate::error::{ApiError, ErrorBody};
use crate::service::{health, webhooks};

/// `metrics.token`: the Bearer token a scrape must carry; empty, none.
pub struct MetricsToken(pub String);

#[utoipa::path(
    get, path = "/metrics", operation_id = "metrics", tag = "service",
    summary = "Metrics in the Prometheus text format",
    description = "Requests by route and status, latencies, database pool use, writer queue and group-commit sizes, \
                   thumbnail queue and render times, tokens issued and refused, formula queue entries pending and \
                   parked, webhooks parked. When `metrics.token` is set, only with `Authorization: Bearer <metrics.token>`.",
    security((), ("metricsToken" = [])),
    responses((status = 200, description = "Counters, gauges and histograms of the process", body = String,
               content_type = "text/plain",
               example = json!("# TYPE eds_http_requests_total counter\neds_http_requests_total{method=\"GET\",route=\"/health\",status=\"200\"} 42\n")),
              (status = 401, description = "`metrics.token` is set and the request does not carry it", body = ErrorBody))
)]
pub async fn read(
    state: web::Data<AppState>,
    token: web::Data<MetricsToken>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    if !token.0.is_empty() {
        let given = bearer(&req).unwrap_or_default();
        if !bool::from(given.as_bytes().ct_eq(token.0.as_bytes())) {
            return Err(ApiError::unauthorized("Metrics need the metrics token"));
        }
    }
    // The queue is shared by every process: counted in the database, now.
    match health::queue_counts(&state).await {
        Ok((pending, parked, types)) => crate::metrics::background_queues(pending, parked, types),
        Err(error) => tracing::warn!(%error, "counting the background queues failed"),
    }
    match webhooks::parked(&state).await {
        Ok(parked) => crate::metrics::webhooks_parked(parked),
        Err(error) => tracing::warn!(%error, "counting the parked webhooks failed"),
    }
    Ok(HttpResponse::Ok()
        .content_type(crate::metrics::CONTENT_TYPE)
        .body(crate::metrics::render(&state.pool)))
}
