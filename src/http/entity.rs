//! `/api/{db}/entity/{_id}`: create, read, add values, delete, aggregate, history.

use actix_web::{HttpResponse, web};

use super::retry::{RetryHeader, RetryKey};
use super::views::responses::{
    InvalidKey, InvalidToken, KeyReused, ReadUnavailable, TokenRequired, TooManyValues, WriteUnavailable,
};
use super::{AppState, Caller};
use crate::error::{ApiError, ErrorBody};
use crate::model::value::parse_body;
use crate::service::bodies::entities::{EntityRead, History, entity_read_example, history_example};
use crate::service::bodies::writes::{Aggregated, Deleted, WriteBody, Written, write_body_example, written_example};
use crate::service::entities;
use crate::service::paging::Paging;

/// `GET /api/{db}/entity/{_id}`: `{"entity":{...}}`.
#[utoipa::path(
    get, path = "/api/{db}/entity/{id}", operation_id = "read_entity", tag = "entities", summary = "Read an entity",
    security((), ("jwt" = [])),
    params(("db" = String, Path, description = "Database name", example = "demo"), ("id" = String, Path, description = "Entity id (24 lowercase hex characters)", example = "6571f3a4c2b9e8d7f6a5b4c3")),
    responses(
        (status = 200, description = "The entity as the caller may see it", body = EntityRead, example = entity_read_example),
        (status = 401, response = inline(InvalidToken)),
        (status = 404, description = "No such database, or the entity is missing, deleted or not visible to the caller", body = ErrorBody),
        (status = 503, response = inline(ReadUnavailable)),
    )
)]
pub async fn read(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (db, id) = path.into_inner();
    Ok(HttpResponse::Ok().json(entities::read(&state, &caller, &db, &id).await?))
}

/// `POST /api/{db}/entity`: creates an entity → 201 `{"_id","properties"}`.
#[utoipa::path(
    post, path = "/api/{db}/entity", operation_id = "create_entity", tag = "entities", summary = "Create an entity",
    description = "The body's values must include `_type`, a reference to an entity type. With `_parent` the caller needs `_expander` on that parent. File values (`filename`, `filesize`, `filetype`) come back with `upload`: PUT the content there within 60 seconds with exactly the given headers. `counter` in place of a value takes the next number of the property name's sequence.",
    security(("jwt" = [])),
    params(("db" = String, Path, description = "Database name", example = "demo"), RetryHeader),
    request_body(content = WriteBody, description = "An array of values (or one value alone)", example = write_body_example),
    responses(
        (status = 201, description = "The new entity's id and its values", body = Written, example = written_example),
        (status = 400, description = "Malformed body, no `_type`, a bad language code, an `_id` that is not a live value of this property, or a malformed `Idempotency-Key`", body = ErrorBody),
        (status = 401, response = inline(TokenRequired)),
        (status = 403, description = "The token is for other databases only, no `_expander` on `_parent`, or a token the OAuth server issued writing `service_api_key` or `service_user`", body = ErrorBody),
        (status = 404, description = "No such database", body = ErrorBody),
        (status = 413, response = inline(TooManyValues)),
        (status = 422, response = inline(KeyReused)),
        (status = 503, response = inline(WriteUnavailable)),
    )
)]
pub async fn create(
    state: web::Data<AppState>,
    caller: Caller,
    db: web::Path<String>,
    body: web::Bytes,
    retry: RetryKey,
) -> Result<HttpResponse, ApiError> {
    let retry = retry.for_body(&body);
    let values = parse_body(&body)?;
    Ok(HttpResponse::Created().json(entities::create(&state, &caller, &db, values, retry).await?))
}

/// `POST /api/{db}/entity/{_id}`: adds (or overwrites) values → `{"_id","properties"}`.
#[utoipa::path(
    post, path = "/api/{db}/entity/{id}", operation_id = "add_values", tag = "entities", summary = "Add or overwrite values",
    description = "Each value is added next to the existing ones; a `string` written to `service_user` is an invitation mailed to the entity's `email` (counted against the mail limits, and at most one per entity per `limits.invitation_cooldown_seconds`); a value with `_id` overwrites that value (soft-deleted, the new one gets a new id). `_sharing` and `_inheritrights` hold one value: a new one replaces the live one, and a write holds at most one of each. Overwriting `_parent` needs `_expander` on the old parent too. File values come back with `upload`.",
    security(("jwt" = [])),
    params(("db" = String, Path, description = "Database name", example = "demo"), ("id" = String, Path, description = "Entity id (24 lowercase hex characters)", example = "6571f3a4c2b9e8d7f6a5b4c3"), RetryHeader),
    request_body(content = WriteBody, description = "An array of values (or one value alone)", example = write_body_example),
    responses(
        (status = 200, description = "The entity's id and the values written", body = Written, example = written_example),
        (status = 400, description = "Malformed body, a bad language code, `No email` (a `service_user` invitation on an entity without `email`), an `_id` that is not a live value of this property, or a malformed `Idempotency-Key`", body = ErrorBody),
        (status = 401, response = inline(TokenRequired)),
        (status = 403, description = "The caller sees the entity but lacks the right, or a token the OAuth server issued writes `service_api_key` or `service_user`", body = ErrorBody),
        (status = 404, description = "No such database, or the entity is missing or not visible to the caller", body = ErrorBody),
        (status = 413, response = inline(TooManyValues)),
        (status = 422, response = inline(KeyReused)),
        (status = 429, description = "An invitation over the mail limits (per recipient, per client address) or within the entity's invitation cooldown: nothing written", body = ErrorBody,
         headers(("Retry-After" = u64, description = "Seconds until it would pass"))),
        (status = 503, description = "Too many writes waiting, the database busy, or (`mail_unavailable`) an invitation's mail not taken by the mail server: the invitation is deleted again", body = ErrorBody),
    )
)]
pub async fn add_values(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
    body: web::Bytes,
    retry: RetryKey,
) -> Result<HttpResponse, ApiError> {
    let (db, entity_id) = path.into_inner();
    let retry = retry.for_body(&body);
    let values = parse_body(&body)?;
    Ok(HttpResponse::Ok().json(entities::add_values(&state, &caller, &db, entity_id, values, retry).await?))
}

/// `DELETE /api/{db}/entity/{_id}`: soft-deletes the entity → `{"deleted":true}`.
#[utoipa::path(
    delete, path = "/api/{db}/entity/{id}", operation_id = "delete_entity", tag = "entities", summary = "Delete an entity",
    description = "Soft-deletes the entity and its values (owner only); children and referrers are untouched.",
    security(("jwt" = [])),
    params(("db" = String, Path, description = "Database name", example = "demo"), ("id" = String, Path, description = "Entity id (24 lowercase hex characters)", example = "6571f3a4c2b9e8d7f6a5b4c3"), RetryHeader),
    responses(
        (status = 200, description = "Deleted", body = Deleted, example = json!({"deleted": true})),
        (status = 400, response = inline(InvalidKey)),
        (status = 401, response = inline(TokenRequired)),
        (status = 403, description = "The caller is not an owner", body = ErrorBody),
        (status = 404, description = "No such database, or the entity is missing or not visible to the caller", body = ErrorBody),
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
    let (db, entity_id) = path.into_inner();
    Ok(HttpResponse::Ok().json(entities::delete(&state, &caller, &db, entity_id, retry.for_body(&[])).await?))
}

/// `GET /api/{db}/entity/{_id}/aggregate`: re-computes the entity's formulas
/// now (after external changes) and those of its dependents → `{"_id","queued"}`.
#[utoipa::path(
    get, path = "/api/{db}/entity/{id}/aggregate", operation_id = "aggregate_entity", tag = "entities", summary = "Re-compute formulas",
    description = "Re-computes the entity's formula values and its dependents' now, after external changes (editors and up).",
    security(("jwt" = [])),
    params(("db" = String, Path, description = "Database name", example = "demo"), ("id" = String, Path, description = "Entity id (24 lowercase hex characters)", example = "6571f3a4c2b9e8d7f6a5b4c3")),
    responses(
        (status = 200, description = "How many entities were re-computed", body = Aggregated, example = json!({"_id": "6571f3a4c2b9e8d7f6a5b4c3", "queued": 2})),
        (status = 401, response = inline(TokenRequired)),
        (status = 403, description = "The caller is not an editor", body = ErrorBody),
        (status = 404, description = "No such database, or the entity is missing or not visible to the caller", body = ErrorBody),
        (status = 503, response = inline(WriteUnavailable)),
    )
)]
pub async fn aggregate(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (db, entity_id) = path.into_inner();
    Ok(HttpResponse::Ok().json(entities::aggregate(&state, &caller, &db, entity_id).await?))
}

/// `GET /api/{db}/entity/{_id}/history`: `{"changes":[...],"count":N}`, for
/// viewers and up (not for public or domain visibility alone).
#[utoipa::path(
    get, path = "/api/{db}/entity/{id}/history", operation_id = "entity_history", tag = "entities", summary = "An entity's changes",
    description = "Every value added or removed, newest first, credentials masked; needs `_viewer` or higher.",
    security(("jwt" = [])),
    params(
        ("db" = String, Path, description = "Database name", example = "demo"), ("id" = String, Path, description = "Entity id (24 lowercase hex characters)", example = "6571f3a4c2b9e8d7f6a5b4c3"),
        ("limit" = Option<String>, Query, description = "Most changes to return; default 100, at most 1000", example = "100"),
        ("skip" = Option<String>, Query, description = "Changes to skip; default 0", example = "0"),
    ),
    responses(
        (status = 200, description = "A page of changes", body = History, example = history_example),
        (status = 401, response = inline(TokenRequired)),
        (status = 403, description = "The caller sees the entity only through its sharing", body = ErrorBody),
        (status = 404, description = "No such database, or the entity is missing or not visible to the caller", body = ErrorBody),
        (status = 503, response = inline(ReadUnavailable)),
    )
)]
pub async fn history(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
    paging: web::Query<Paging>,
) -> Result<HttpResponse, ApiError> {
    let (db, id) = path.into_inner();
    Ok(HttpResponse::Ok().json(entities::history(&state, &caller, &db, &id, &paging).await?))
}
