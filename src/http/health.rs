//! The service's identity and liveness.

use actix_web::{HttpResponse, web};

use super::AppState;
use super::views::service::{About, Health, Ready};
use crate::service::health::{Readiness, readiness};

/// `GET /`: name and version.
#[utoipa::path(
    get, path = "/", operation_id = "about", tag = "service", summary = "Name and version",
    responses((status = 200, description = "The service's name and version", body = About,
               example = json!({"name": "eds", "version": "0.1.0"})))
)]
pub async fn about() -> HttpResponse {
    HttpResponse::Ok().json(About {
        name: "eds",
        version: env!("CARGO_PKG_VERSION"),
    })
}

/// `GET /health`: the process serves requests (for load balancers).
#[utoipa::path(
    get, path = "/health", operation_id = "health", tag = "service", summary = "Liveness",
    description = "The process serves requests (for load balancers).",
    responses((status = 200, description = "Serving", body = Health, example = json!({"status": "ok"})))
)]
pub async fn health() -> HttpResponse {
    HttpResponse::Ok().json(Health { status: "ok" })
}

/// `GET /ready`: PostgreSQL and object storage answer (for orchestrators);
/// 503 naming what does not.
#[utoipa::path(
    get, path = "/ready", operation_id = "ready", tag = "service", summary = "Readiness",
    description = "PostgreSQL and object storage answer (for orchestrators).",
    responses(
        (status = 200, description = "Both answer", body = Ready, example = json!({"database": true, "storage": true})),
        (status = 503, description = "One does not", body = Ready, example = json!({"database": true, "storage": false})),
    )
)]
pub async fn ready(state: web::Data<AppState>) -> HttpResponse {
    let Readiness { database, storage } = readiness(&state).await;
    let body = Ready { database, storage };
    if database && storage {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().json(body)
    }
}
