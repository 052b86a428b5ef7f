//! `GET /api/{db}`: the database usage object.

use actix_web::{HttpResponse, web};

use super::views::responses::{ReadUnavailable, TokenRequired};
use super::{AppState, Caller};
use crate::error::{ApiError, ErrorBody};
use crate::service;
use crate::usage::{UsageObject, usage_example};

#[utoipa::path(
    get, path = "/api/{db}", operation_id = "database_usage", tag = "usage", summary = "Database usage",
    description = "Entities, values, requests this month, files, size and limits; cached 5 minutes.",
    security(("jwt" = [])),
    params(("db" = String, Path, description = "Database name", example = "demo")),
    responses(
        (status = 200, description = "The usage object", body = UsageObject, example = usage_example),
        (status = 401, response = inline(TokenRequired)),
        (status = 403, description = "The token is for other databases only", body = ErrorBody),
        (status = 404, description = "No such database", body = ErrorBody),
        (status = 503, response = inline(ReadUnavailable)),
    )
)]
pub async fn read(state: web::Data<AppState>, caller: Caller, db: web::Path<String>) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().json(service::usage::of(&state, &caller, &db).await?))
}
