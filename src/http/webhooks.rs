//! `/api/{db}/entity/{_id}/deliveries`: a webhook's delivery attempts.

use actix_web::{HttpResponse, web};

use super::views::responses::{ReadUnavailable, TokenRequired};
use super::{AppState, Caller};
use crate::error::{ApiError, ErrorBody};
use crate::service::paging::Paging;
use crate::service::webhooks::{self, Deliveries};

/// `GET /api/{db}/entity/{_id}/deliveries`: `{"deliveries":[...],"count":N}`.
#[utoipa::path(
    get, path = "/api/{db}/entity/{id}/deliveries", operation_id = "webhook_deliveries", tag = "entities",
    summary = "A webhook's delivery attempts",
    description = "Each attempt to deliver an event of the webhook, newest first: the event's id (its `Webhook-Id`), \
                   action, attempt number, time, the answer's status if any, duration and the error if it failed \
                   (a webhook parked after failing for `webhooks.retry_hours` says so in its last attempt's error). \
                   For the webhook's `_owner`s only.",
    security(("jwt" = [])),
    params(
        ("db" = String, Path, description = "Database name", example = "demo"),
        ("id" = String, Path, description = "The webhook entity's id (24 lowercase hex characters)", example = "6571f3a4c2b9e8d7f6a5b4c3"),
        ("limit" = Option<String>, Query, description = "Most attempts to return; default 100, at most 1000", example = "100"),
        ("skip" = Option<String>, Query, description = "Attempts to skip; default 0", example = "0"),
    ),
    responses(
        (status = 200, description = "A page of attempts", body = Deliveries),
        (status = 401, response = inline(TokenRequired)),
        (status = 403, description = "The caller sees the entity but is not its `_owner`", body = ErrorBody),
        (status = 404, description = "No such database, or the entity is missing or not visible to the caller", body = ErrorBody),
        (status = 503, response = inline(ReadUnavailable)),
    )
)]
pub async fn deliveries(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
    paging: web::Query<Paging>,
) -> Result<HttpResponse, ApiError> {
    let (db, id) = path.into_inner();
    Ok(HttpResponse::Ok().json(webhooks::deliveries(&state, &caller, &db, &id, &paging).await?))
}
