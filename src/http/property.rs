//! `/api/{db}/property/{_id}`: read and delete one value.

use actix_web::{HttpResponse, web};
use serde::Deserialize;

use super::retry::{RetryHeader, RetryKey};
use super::views::responses::{InvalidKey, InvalidToken, KeyReused, ReadUnavailable, TokenRequired, WriteUnavailable};
use super::{AppState, Caller};
use crate::error::{ApiError, ErrorBody};
use crate::service::bodies::values::{PropertyValue, property_example};
use crate::service::bodies::writes::Deleted;
use crate::service::values;

#[derive(Debug, Deserialize)]
pub struct ReadQuery {
    download: Option<String>,
}

/// `GET /api/{db}/property/{_id}`: the value with `type` and `created`; a
/// file value with `url` (or, with `download=true`, a redirect to it).
#[utoipa::path(
    get, path = "/api/{db}/property/{id}", operation_id = "read_property", tag = "properties", summary = "Read one value",
    description = "The value with `type` and `created`; a file value also with `url`, a download URL valid 60 seconds.",
    security((), ("jwt" = [])),
    params(
        ("db" = String, Path, description = "Database name", example = "demo"), ("id" = String, Path, description = "Property value id (24 lowercase hex characters)", example = "6571f3a4c2b9e8d7f6a5b4c6"),
        ("download" = Option<String>, Query, description = "`true`: redirect to the file's download URL", example = "true"),
    ),
    responses(
        (status = 200, description = "The value", body = PropertyValue, example = property_example),
        (status = 302, description = "With `download=true` on a file value: the signed download URL",
         headers(("Location" = String, description = "The download URL, valid 60 seconds"))),
        (status = 401, response = inline(InvalidToken)),
        (status = 404, description = "No such database, or the value is missing, deleted or not visible to the caller", body = ErrorBody),
        (status = 503, response = inline(ReadUnavailable)),
    )
)]
pub async fn read(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
    query: web::Query<ReadQuery>,
) -> Result<HttpResponse, ApiError> {
    let (db, id) = path.into_inner();
    let shown = values::read(&state, &caller, &db, &id).await?;
    match shown.url {
        Some(url) if query.download.as_deref() == Some("true") => {
            Ok(HttpResponse::Found().insert_header(("Location", url)).finish())
        }
        _ => Ok(HttpResponse::Ok().json(shown.value)),
    }
}

/// `DELETE /api/{db}/property/{_id}`: soft-deletes the value → `{"deleted":true}`.
#[utoipa::path(
    delete, path = "/api/{db}/property/{id}", operation_id = "delete_property", tag = "properties", summary = "Delete one value",
    description = "Soft-deletes the value (editors and up; owners for rights values and `_parent`, which also needs `_expander` on the parent it names, unless that parent is deleted). `_type`, `_created`, `billing_*` values and the last `_owner` cannot be deleted.",
    security(("jwt" = [])),
    params(("db" = String, Path, description = "Database name", example = "demo"), ("id" = String, Path, description = "Property value id (24 lowercase hex characters)", example = "6571f3a4c2b9e8d7f6a5b4c6"), RetryHeader),
    responses(
        (status = 200, description = "Deleted", body = Deleted, example = json!({"deleted": true})),
        (status = 400, response = inline(InvalidKey)),
        (status = 401, response = inline(TokenRequired)),
        (status = 403, description = "Missing rights, or a value that cannot be deleted", body = ErrorBody),
        (status = 404, description = "No such database, or the value is missing or not visible to the caller", body = ErrorBody),
        (status = 422, response = inline(KeyReused)),
        (status = 503, response = inline(WriteUnavailable)),
    )
)]
pub async fn delete(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
    retry: RetryKey,
) -> Result<HttpResponse, ApiError> {
    let (db, value_id) = path.into_inner();
    let retry = retry.for_body(&[]);
    Ok(HttpResponse::Ok().json(values::delete(&state, &caller, &db, value_id, retry).await?))
}
