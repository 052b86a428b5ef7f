//! The per-database request count behind `GET /api/{db}/usage`.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::web;

use crate::http::{AppState, database_of_path};

/// Counts every request whose path names a database (flushed every 10 s).
pub async fn count_request(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> actix_web::Result<ServiceResponse<impl MessageBody>> {
    if let (Some(db), Some(state)) = (database_of_path(req.path()), req.app_data::<web::Data<AppState>>()) {
        state.usage.count_request(db);
    }
    next.call(req).await
}
