//! `/api/{db}/property/{_id}`: read and delete one value.

use actix_web::{HttpResponse, web};
use serde::Deserialize;
use serde_json::{Value as Json, json};

use super::views::responses::{InvalidToken, ReadUnavailable, TokenRequired, WriteUnavailable};
use super::views::values::{PropertyValue, property_example};
use super::views::writes::Deleted;
use super::{AppState, Caller};
use crate::error::{ApiError, ErrorBody};
use crate::view::{self, access};
use crate::write::WriteOp;

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
    state.require_database(&db).await?;
    let mut conn = state.pool.get().await?;
    let person = caller.person_in(&db);
    let value = access::shown_value(&mut conn, &db, &id, person).await?;
    // References resolve inside an entity document; wrap the value in one.
    let mut docs = [json!({ value.prop.clone(): [value.property_json()] })];
    view::resolve_references(&mut conn, &db, person, &mut docs).await?;
    let [mut doc] = docs;
    let mut resolved = doc[&value.prop][0].take();
    if let Some(url) = state.files.download_url(&db, &value).await? {
        if query.download.as_deref() == Some("true") {
            return Ok(HttpResponse::Found().insert_header(("Location", url)).finish());
        }
        resolved["url"] = Json::String(url);
    }
    Ok(HttpResponse::Ok().json(resolved))
}

/// `DELETE /api/{db}/property/{_id}`: soft-deletes the value → `{"deleted":true}`.
#[utoipa::path(
    delete, path = "/api/{db}/property/{id}", operation_id = "delete_property", tag = "properties", summary = "Delete one value",
    description = "Soft-deletes the value (editors and up; owners for rights values and `_parent`, which also needs `_expander` on the parent it names, unless that parent is deleted). `_type`, `_created`, `billing_*` values and the last `_owner` cannot be deleted.",
    security(("jwt" = [])),
    params(("db" = String, Path, description = "Database name", example = "demo"), ("id" = String, Path, description = "Property value id (24 lowercase hex characters)", example = "6571f3a4c2b9e8d7f6a5b4c6")),
    responses(
        (status = 200, description = "Deleted", body = Deleted, example = json!({"deleted": true})),
        (status = 401, response = inline(TokenRequired)),
        (status = 403, description = "Missing rights, or a value that cannot be deleted", body = ErrorBody),
        (status = 404, description = "No such database, or the value is missing or not visible to the caller", body = ErrorBody),
        (status = 503, response = inline(WriteUnavailable)),
    )
)]
pub async fn delete(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (db, value_id) = path.into_inner();
    state.write_as(&caller, &db, WriteOp::DeleteValue { value_id }).await?;
    Ok(HttpResponse::Ok().json(Deleted { deleted: true }))
}
