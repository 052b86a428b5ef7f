//! `POST /api/{db}/entity/{_id}/duplicate` and `GET /api/{db}/entity/{_id}/activity`:
//! the original service's routes its web app calls, beyond the spec.

use actix_web::{HttpResponse, web};

use super::views::responses::{ReadUnavailable, TokenRequired, TooManyValues, WriteUnavailable};
use super::{AppState, Caller};
use crate::error::{ApiError, ErrorBody};
use crate::service::bodies::duplicate_activity::{
    Activity, DuplicateBody, activity_example, duplicate_body_example, duplicated_example,
};
use crate::service::bodies::writes::Written;
use crate::service::duplicate_activity;
use crate::service::paging::Paging;

/// `POST /api/{db}/entity/{_id}/duplicate`: copies of the entity → `[{"_id","properties"}]`.
#[utoipa::path(
    post, path = "/api/{db}/entity/{id}/duplicate", operation_id = "duplicate_entity", tag = "entities", summary = "Duplicate an entity",
    description = "Creates `count` copies of the entity (its `_owner`s only), all in one transaction. Each copy gets every live value but files, credentials (`service_api_key`, `service_user`), `billing_*`, `_created` and the `ignoredProperties`; counter properties take the next number, formulas are computed afresh, the rights values are kept and the caller is added as `_owner` when not among them. `_parent` needs `_expander` on the parent, as in a create.",
    security(("jwt" = [])),
    params(("db" = String, Path, description = "Database name", example = "demo"), ("id" = String, Path, description = "Entity id (24 lowercase hex characters)", example = "6571f3a4c2b9e8d7f6a5b4c3")),
    request_body(content = DuplicateBody, description = "Optional; none is `{}` (one copy)", example = duplicate_body_example),
    responses(
        (status = 200, description = "One item per copy, as a create answers", body = Vec<Written>, example = duplicated_example),
        (status = 400, description = "`count` not an integer from 1 to 100, `ignoredProperties` not an array of strings, or a copied value a create refuses", body = ErrorBody),
        (status = 401, response = inline(TokenRequired)),
        (status = 403, description = "The caller sees the entity but is not its `_owner`, lacks `_expander` on its `_parent`, or holds a token for other databases only", body = ErrorBody),
        (status = 404, description = "No such database, or the entity is missing or not visible to the caller", body = ErrorBody),
        (status = 413, response = inline(TooManyValues)),
        (status = 503, response = inline(WriteUnavailable)),
    )
)]
pub async fn duplicate(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let (db, id) = path.into_inner();
    Ok(HttpResponse::Ok().json(duplicate_activity::duplicate(&state, &caller, &db, id, &body).await?))
}

/// `GET /api/{db}/entity/{_id}/activity`: `{"changes":[...]}`, what that person wrote and deleted.
#[utoipa::path(
    get, path = "/api/{db}/entity/{id}/activity", operation_id = "person_activity", tag = "entities", summary = "A person's changes",
    description = "The values the person wrote or deleted, newest first (`_created` left out), on the entities the caller may see in full (`_viewer` or higher), masked as in history.",
    security(("jwt" = [])),
    params(
        ("db" = String, Path, description = "Database name", example = "demo"), ("id" = String, Path, description = "The person's entity id", example = "6571f3a4c2b9e8d7f6a5b402"),
        ("limit" = Option<String>, Query, description = "Most changes to return; default 100, at most 1000", example = "100"),
        ("skip" = Option<String>, Query, description = "Changes to skip; default 0, at most 10000", example = "0"),
    ),
    responses(
        (status = 200, description = "A page of changes", body = Activity, example = activity_example),
        (status = 400, description = "`limit` or `skip` not a whole number, or over its maximum", body = ErrorBody),
        (status = 401, response = inline(TokenRequired)),
        (status = 403, description = "A token for other databases only", body = ErrorBody),
        (status = 404, description = "No such database, or the person is missing or not visible to the caller", body = ErrorBody),
        (status = 503, response = inline(ReadUnavailable)),
    )
)]
pub async fn activity(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
    paging: web::Query<Paging>,
) -> Result<HttpResponse, ApiError> {
    let (db, id) = path.into_inner();
    Ok(HttpResponse::Ok().json(duplicate_activity::activity(&state, &caller, &db, &id, &paging).await?))
}
