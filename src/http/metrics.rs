//! `GET /metrics`: the process's metrics in the Prometheus text format.

use actix_web::{HttpResponse, web};

use super::AppState;

pub async fn read(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(crate::metrics::CONTENT_TYPE)
        .body(crate::metrics::render(&state.pool))
}
