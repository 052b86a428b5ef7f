//! The service's identity and liveness.

use actix_web::{HttpResponse, web};
use diesel_async::RunQueryDsl;
use serde_json::json;

use super::AppState;

/// `GET /`: name and version.
pub async fn about() -> HttpResponse {
    HttpResponse::Ok().json(json!({"name": "eds", "version": env!("CARGO_PKG_VERSION")}))
}

/// `GET /health`: the process serves requests (for load balancers).
pub async fn health() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

/// `GET /ready`: PostgreSQL and object storage answer (for orchestrators);
/// 503 naming what does not.
pub async fn ready(state: web::Data<AppState>) -> HttpResponse {
    let database = match state.pool.get().await {
        Ok(mut conn) => diesel::sql_query("SELECT 1").execute(&mut conn).await.is_ok(),
        Err(_) => false,
    };
    let storage = state.files.store.check().await.is_ok();
    let body = json!({"database": database, "storage": storage});
    if database && storage {
        HttpResponse::Ok().json(body)
    } else {
        HttpResponse::ServiceUnavailable().json(body)
    }
}
