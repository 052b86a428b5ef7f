//! `GET /api/{db}`: the database usage object.

use actix_web::{HttpResponse, web};

use super::error::ApiError;
use super::{AppState, Caller};

pub async fn read(state: web::Data<AppState>, caller: Caller, db: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let db = db.into_inner();
    caller.require_person(&db)?;
    state.require_database(&db).await?;
    Ok(HttpResponse::Ok().json(state.usage.of(&state.pool, &db).await?))
}
