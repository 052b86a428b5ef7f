//! `GET /api/{db}/entity`: list, filter, sort, group and page entities; large
//! pages stream (`crate::service::list`).

use actix_web::http::header::ContentType;
use actix_web::{HttpRequest, HttpResponse, web};

use super::views::responses::{InvalidToken, ReadUnavailable};
use super::{AppState, Caller};
use crate::error::{ApiError, ErrorBody};
use crate::service;
use crate::service::bodies::entities::{ENTITY_LIST_DESCRIPTION, EntityList, entity_list_example};
use crate::service::list::ListAnswer;

/// `GET /api/{db}/entity`: `{"entities":[...],"count":N,"limit":L,"skip":S}`.
#[utoipa::path(
    get, path = "/api/{db}/entity", operation_id = "list_entities", tag = "entities", summary = "List and query entities",
    description = ENTITY_LIST_DESCRIPTION,
    security((), ("jwt" = [])),
    params(
        ("db" = String, Path, description = "Database name", example = "demo"),
        ("filters" = Option<HashMap<String, String>>, Query, style = Form, explode, description = "Filters `<property>.<field>[.<operator>]=<value>`, all of which must match; see the operation's description.", example = json!({"_type.string": "book", "price.number.gt": "10"})),
        ("props" = Option<String>, Query, description = "Comma-separated property names to return (`_id` always is); `title.string` names `title`", example = "title,photo"),
        ("sort" = Option<String>, Query, description = "Comma-separated `<property>.<field>`; a leading `-` sorts descending. Default: `_id` ascending (creation order)", example = "-title.string"),
        ("limit" = Option<String>, Query, description = "Most entities to return; default 100 (also for `0` or a non-number), no upper bound", example = "20"),
        ("skip" = Option<String>, Query, description = "Entities to skip; default 0", example = "0"),
        ("q" = Option<String>, Query, description = "Full-text search in properties whose definition has `search`: every space-separated word (its first 20 characters) must match part of a word, case-insensitively", example = "dune"),
        ("group" = Option<String>, Query, description = "Comma-separated `<property>.<field>`: one row per distinct combination, with the `props` values of its first entity and `_count`; `limit` and `skip` are ignored", example = "author.reference"),
    ),
    responses(
        (status = 200, description = "A page of entities; `count` counts every match", body = EntityList, example = entity_list_example),
        (status = 400, description = "`Invalid regex`, `Invalid ID`, or a malformed query string", body = ErrorBody),
        (status = 401, response = inline(InvalidToken)),
        (status = 404, description = "No such database", body = ErrorBody),
        (status = 503, response = inline(ReadUnavailable)),
    )
)]
pub async fn list(
    state: web::Data<AppState>,
    caller: Caller,
    db: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let answer = service::list::list(&state.service, &caller, &db, req.query_string()).await?;
    let mut response = HttpResponse::Ok();
    response.content_type(ContentType::json());
    Ok(match answer {
        ListAnswer::Whole(body) => response.body(body),
        ListAnswer::Streamed(parts) => response.streaming(parts),
    })
}
