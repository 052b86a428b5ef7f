//! `POST /api/{db}/batch`: several writes in one transaction, all or nothing.

use actix_web::{HttpResponse, web};

use super::retry::{RetryHeader, RetryKey};
use super::views::responses::{KeyReused, TokenRequired, WriteUnavailable};
use super::{AppState, Caller};
use crate::error::{ApiError, ErrorBody, ErrorCode};
use crate::service::batch;
use crate::service::bodies::batch::{BatchBody, Batched, batch_body_example, batched_example};

/// `POST /api/{db}/batch` → `{"results":[...],"refs":{...}}`.
#[utoipa::path(
    post, path = "/api/{db}/batch", operation_id = "batch", tag = "entities", summary = "Several writes, all or nothing",
    description = "Applies the operations in order in one transaction, each under the rules of its single route (`create` as `POST /api/{db}/entity`, `add` as `POST /api/{db}/entity/{id}`, `delete_property` as `DELETE /api/{db}/property/{id}`, `delete_entity` as `DELETE /api/{db}/entity/{id}`), rights judged on the state the earlier operations left. A create's `ref` (`$` and 1 to 64 letters, digits or `_`) stands for its new entity's id in a later operation's `entity` and in any later `reference` value. The first failing operation answers its own error with `operation` (its index, from 0) added, and nothing is written. `dry_run: true` checks everything and answers what would be written (`\"dry_run\": true`, ids not kept, API keys as `***`, no `upload`), sending no mail and recording no `Idempotency-Key`. Invitations are mailed after the commit.",
    security(("jwt" = [])),
    params(("db" = String, Path, description = "Database name", example = "demo"), RetryHeader),
    request_body(content = BatchBody, example = batch_body_example),
    responses(
        (status = 200, description = "One result per operation, as its single route answers, and the id each `ref` took", body = Batched, example = batched_example),
        (status = 400, description = "`operations` not a non-empty array, an unknown `op`, a malformed or repeated `ref`, a `$name` no earlier create defines (`invalid_body`), or an operation's own 400; with `operation`", body = ErrorBody,
         example = json!({"status": 400, "error": "invalid_body", "message": "$author is not defined by an earlier create", "operation": 1})),
        (status = 401, response = inline(TokenRequired)),
        (status = 403, description = "A read-only token (`insufficient_scope`), a token for other databases only, or an operation the caller lacks the rights for (with `operation`)", body = ErrorBody),
        (status = 404, description = "No such database, or an operation's entity or value is missing or not visible to the caller (with `operation`)", body = ErrorBody),
        (status = 413, description = "More than `limits.max_batch_operations` operations, more than 10 × `limits.max_values_per_write` values in all or `limits.max_values_per_write` in one operation, more than 10 `service_api_key` values, or a body over `http.json_body_limit_bytes` (`too_many_values`): nothing done", body = ErrorBody),
        (status = 422, response = inline(KeyReused)),
        (status = 429, description = "An invitation over the mail limits or within its entity's cooldown (with `operation`): nothing written", body = ErrorBody,
         headers(("Retry-After" = u64, description = "Seconds until it would pass"))),
        (status = 503, response = inline(WriteUnavailable)),
    )
)]
pub async fn batch(
    state: web::Data<AppState>,
    caller: Caller,
    db: web::Path<String>,
    body: web::Bytes,
    retry: RetryKey,
) -> Result<HttpResponse, ApiError> {
    let retry = retry.for_body(&body);
    let body = serde_json::from_slice(&body)
        .map_err(|e| ApiError::new(ErrorCode::InvalidJson, format!("Malformed JSON body: {e}")))?;
    Ok(HttpResponse::Ok().json(batch::batch(&state, &caller, &db, &body, retry).await?))
}
