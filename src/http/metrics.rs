//! `GET /metrics`: the process's metrics in the Prometheus text format.

use actix_web::{HttpResponse, web};

use super::AppState;

#[utoipa::path(
    get, path = "/metrics", operation_id = "metrics", tag = "service",
    summary = "Metrics in the Prometheus text format",
    description = "Requests by route and status, latencies, database pool use, writer queue and group-commit sizes, \
                   thumbnail queue and render times, tokens issued and refused.",
    responses((status = 200, description = "Counters, gauges and histograms of the process", body = String,
               content_type = "text/plain",
               example = json!("# TYPE eds_http_requests_total counter\neds_http_requests_total{method=\"GET\",route=\"/health\",status=\"200\"} 42\n")))
)]
pub async fn read(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(crate::metrics::CONTENT_TYPE)
        .body(crate::metrics::render(&state.pool))
}
