//! `POST /api/{db}/entity/{_id}/restore`: an entity's values as they were at
//! a moment of its history (`crate::service::restore`).

use actix_web::{HttpResponse, web};

use super::retry::{RetryHeader, RetryKey};
use super::views::responses::{KeyReused, TokenRequired, WriteUnavailable};
use super::{AppState, Caller};
use crate::error::{ApiError, ErrorBody};
use crate::service::bodies::writes::Written;
use crate::service::restore::{self, RestoreBody, restore_body_example, restored_example};

/// `POST /api/{db}/entity/{_id}/restore` → `{"_id","properties"}`.
#[utoipa::path(
    post, path = "/api/{db}/entity/{id}/restore", operation_id = "restore_entity", tag = "entities", summary = "Restore an entity from its history",
    description = "The entity's values become those live at `at`: values live then but not now are written again (new ids, created by the caller; a file value keeps its stored content and gets no `upload`), values live now but not then are deleted; the history keeps both. Without `at`, a deleted entity is undeleted with its values as they were the moment before its deletion. `service_api_key`, `service_user`, a webhook's `secret`, `billing_*` and `_created` are never touched; a counter value comes back only while no other live value holds its number. Needs `_owner` for a deleted entity or a change of rights, `_parent`, `_sharing` or `_inheritrights` (`_expander` on each restored `_parent`), `_editor` otherwise; the entity keeps an `_owner`. Anything refused refuses the whole restore.",
    security(("jwt" = [])),
    params(("db" = String, Path, description = "Database name", example = "demo"), ("id" = String, Path, description = "Entity id (24 lowercase hex characters)", example = "6571f3a4c2b9e8d7f6a5b4c3"), RetryHeader),
    request_body(content = RestoreBody, description = "The moment to restore (or an empty body for a deleted entity)", example = restore_body_example),
    responses(
        (status = 200, description = "The entity's id and the values written again (none when nothing changed)", body = Written, example = restored_example),
        (status = 400, description = "`at` malformed, in the future or before the entity's creation, no `at` for a live entity, or a malformed `Idempotency-Key`", body = ErrorBody),
        (status = 401, response = inline(TokenRequired)),
        (status = 403, description = "A read-only token, or the caller lacks a right the restore needs: nothing written", body = ErrorBody),
        (status = 404, description = "No such database, or the entity is missing or not visible to the caller (now, or as it was deleted)", body = ErrorBody),
        (status = 409, description = "`counter_taken`: a counter number restored is held by another live value", body = ErrorBody),
        (status = 422, response = inline(KeyReused)),
        (status = 503, response = inline(WriteUnavailable)),
    )
)]
pub async fn restore(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
    body: web::Bytes,
    retry: RetryKey,
) -> Result<HttpResponse, ApiError> {
    let (db, entity_id) = path.into_inner();
    let retry = retry.for_body(&body);
    let at = RestoreBody::parse(&body)?.at;
    let restored: Written = restore::restore(&state, &caller, &db, entity_id, at.as_deref(), retry).await?;
    Ok(HttpResponse::Ok().json(restored))
}
