//! The service's identity and liveness.

use actix_web::HttpResponse;
use serde_json::json;

/// `GET /`: name and version.
pub async fn about() -> HttpResponse {
    HttpResponse::Ok().json(json!({"name": "eds", "version": env!("CARGO_PKG_VERSION")}))
}

/// `GET /health`: the process serves requests (for load balancers).
pub async fn health() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}
