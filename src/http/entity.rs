//! `/api/{db}/entity`: list, create, read, add values, delete.

use actix_web::http::header::ContentType;
use actix_web::{HttpRequest, HttpResponse, web};
use bytes::Bytes;
use diesel_async::AsyncPgConnection;
use futures_util::StreamExt;
use serde_json::{Value as Json, json};

use super::views::entities::{
    ENTITY_LIST_DESCRIPTION, EntityList, EntityRead, History, entity_list_example, entity_read_example, history_example,
};
use super::views::responses::{InvalidToken, ReadUnavailable, TokenRequired, TooManyValues, WriteUnavailable};
use super::views::writes::{Aggregated, Deleted, WriteBody, Written, write_body_example, written_example};
use super::written::written_json;
use super::{AppState, Caller};
use crate::db::databases;
use crate::db::values::{self, EntityRow};
use crate::error::{ApiError, ErrorBody, ErrorCode};
use crate::model::value::parse_body;
use crate::query::cache::AnswerKey;
use crate::query::sql::{self, ListResult};
use crate::query::{DEFAULT_LIMIT, ListQuery};
use crate::rights::ViewLevel;
use crate::view::{self, access};
use crate::write::validate;
use crate::write::{WriteOp, WriteOutcome};

/// `GET /api/{db}/entity`: `{"entities":[...],"count":N,"limit":L,"skip":S}`.
#[utoipa::path(
    get, path = "/api/{db}/entity", operation_id = "list_entities", tag = "entities", summary = "List and query entities",
    description = ENTITY_LIST_DESCRIPTION,
    security((), ("jwt" = [])),
    params(
        ("db" = String, Path, description = "Database name", example = "demo"),
        ("filters" = Option<HashMap<String, String>>, Query, style = Form, explode, description = "Filters `<property>.<field>[.<operator>]=<value>`, all of which must match; see the operation's description.", example = json!({"_type.string": "book", "price.number.gt": "10"})),
        ("props" = Option<String>, Query, description = "Comma-separated property names to return (`_id` always is)", example = "title,photo"),
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
    let db = db.into_inner();
    state.require_database(&db).await?;
    let params: Vec<(String, String)> = serde_urlencoded::from_str(req.query_string())
        .map_err(|_| ApiError::new(ErrorCode::InvalidQuery, "Malformed query string"))?;
    let query = ListQuery::parse(&params)?;
    let person = caller.person_in(&db);
    if sql::is_streamed(&query) {
        return streamed_list(state.clone(), db, person.map(str::to_owned), query).await;
    }
    let body = match &state.answers {
        Some(answers) => {
            // databases are never removed while serving
            let generation = databases::generation(&mut *state.pool.get().await?, &db)
                .await?
                .unwrap_or_default();
            let key = AnswerKey {
                db: db.clone(),
                generation,
                person: person.map(str::to_owned),
                query: req.query_string().to_owned(),
            };
            // The connection is taken only to compute, not while waiting for
            // another caller's computation of the same answer.
            let compute = async {
                let _permit = state.expensive.admit(&query).await?;
                list_answer(&mut *state.pool.get().await?, &db, person, &query).await
            };
            answers.get_or_compute(key, compute).await?
        }
        None => {
            let _permit = state.expensive.admit(&query).await?;
            list_answer(&mut *state.pool.get().await?, &db, person, &query).await?
        }
    };
    Ok(HttpResponse::Ok().content_type(ContentType::json()).body(body))
}

/// An entity's document as the caller sees it, with only the query's `props`;
/// `None` when the caller does not see it.
fn listed_doc(entity: EntityRow, person: Option<&str>, query: &ListQuery) -> Option<Json> {
    let mut doc = view::visible_doc(entity, person)?;
    if let (Some(props), Some(object)) = (&query.props, doc.as_object_mut()) {
        object.retain(|key, _| key == "_id" || props.iter().any(|p| p == key));
    }
    Some(doc)
}

/// The serialized answer to a list query.
async fn list_answer(
    conn: &mut AsyncPgConnection,
    db: &str,
    person: Option<&str>,
    query: &ListQuery,
) -> Result<Bytes, ApiError> {
    let visible = |entity: EntityRow| listed_doc(entity, person, query);
    let answer = match sql::run(conn, db, person, query).await? {
        ListResult::Page { entities, count } => {
            let mut docs: Vec<Json> = entities.into_iter().filter_map(visible).collect();
            view::resolve_references(conn, db, person, &mut docs).await?;
            EntityList {
                entities: docs,
                count: count.try_into().unwrap_or_default(),
                limit: query.limit,
                skip: query.skip,
            }
        }
        ListResult::Groups { groups } => {
            // Rows carry only the `props` values of the group's first entity:
            // first entities are read a chunk at a time and only those kept.
            let mut rows = Vec::with_capacity(groups.len());
            for chunk in groups.chunks(sql::CHUNK as usize) {
                let firsts: Vec<String> = chunk.iter().map(|(first, _)| first.clone()).collect();
                let mut entities = sql::entities_by_id(conn, db, &firsts).await?;
                let mut chunk_rows = Vec::with_capacity(chunk.len());
                for (first, size) in chunk {
                    let Some(mut doc) = entities.remove(first).and_then(visible) else {
                        continue;
                    };
                    if let Some(object) = doc.as_object_mut() {
                        object.remove("_id");
                        if query.props.is_none() {
                            object.clear();
                        }
                        object.insert("_count".into(), Json::from(*size));
                    }
                    chunk_rows.push(doc);
                }
                view::resolve_references(conn, db, person, &mut chunk_rows).await?;
                rows.append(&mut chunk_rows);
            }
            EntityList {
                count: rows.len() as u64,
                entities: rows,
                limit: query.limit,
                skip: query.skip,
            }
        }
    };
    Ok(Bytes::from(serde_json::to_vec(&answer).expect("JSON values serialize")))
}

/// A page longer than a chunk, answered as it is read: each chunk takes a
/// connection (and an expensive query's permit) for itself and is written to
/// the body as soon as it is read, so memory holds one chunk whatever the
/// limit, and slow readers hold no connection. The answer is the same as
/// [`list_answer`]'s, but not cached. The first chunk is read before
/// answering, so a query failing at once answers its error; a later failure
/// aborts the body (never a 200 whose JSON looks whole).
async fn streamed_list(
    state: web::Data<AppState>,
    db: String,
    person: Option<String>,
    query: ListQuery,
) -> Result<HttpResponse, ApiError> {
    let chunks = {
        let _permit = state.expensive.admit(&query).await?;
        sql::Chunks::start(&mut *state.pool.get().await?, &db, person.as_deref(), &query).await?
    };
    let mut page = StreamedPage {
        state,
        db,
        person,
        query,
        chunks,
        written: 0,
        finished: false,
    };
    let mut first = b"{\"entities\":[".to_vec();
    first.extend_from_slice(&page.next_part().await?.unwrap_or_default());
    let rest = futures_util::stream::unfold(page, |mut page| async move {
        match page.next_part().await {
            Ok(part) => part.map(|part| (Ok(part), page)),
            Err(error) => {
                tracing::warn!(%error, "list answer aborted after its first chunk");
                page.finished = true;
                Some((Err(error), page))
            }
        }
    });
    let body = futures_util::stream::once(async { Ok::<_, ApiError>(Bytes::from(first)) }).chain(rest);
    Ok(HttpResponse::Ok().content_type(ContentType::json()).streaming(body))
}

/// The state of a streamed answer between its parts.
struct StreamedPage {
    state: web::Data<AppState>,
    db: String,
    person: Option<String>,
    query: ListQuery,
    chunks: sql::Chunks,
    /// Entities written so far.
    written: usize,
    finished: bool,
}

impl StreamedPage {
    /// The next part of the body: a chunk of entities, then the rest of the
    /// envelope; `None` after it.
    async fn next_part(&mut self) -> Result<Option<Bytes>, ApiError> {
        if self.finished {
            return Ok(None);
        }
        let _permit = self.state.expensive.admit(&self.query).await?;
        let mut conn = self.state.pool.get().await?;
        let mut part = Vec::new();
        match self.chunks.next(&mut conn).await? {
            Some(entities) => {
                let person = self.person.as_deref();
                let mut docs: Vec<Json> = entities
                    .into_iter()
                    .filter_map(|entity| listed_doc(entity, person, &self.query))
                    .collect();
                view::resolve_references(&mut conn, &self.db, person, &mut docs).await?;
                for doc in docs {
                    if self.written > 0 {
                        part.push(b',');
                    }
                    serde_json::to_writer(&mut part, &doc).expect("JSON values serialize");
                    self.written += 1;
                }
            }
            None => {
                let count = self.chunks.count(&mut conn).await?;
                let (limit, skip) = (self.query.limit, self.query.skip);
                part.extend_from_slice(format!("],\"count\":{count},\"limit\":{limit},\"skip\":{skip}}}").as_bytes());
                self.finished = true;
            }
        }
        Ok(Some(Bytes::from(part)))
    }
}

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
    state.require_database(&db).await?;
    let mut conn = state.pool.get().await?;
    let person = caller.person_in(&db);
    let mut docs = [access::entity_doc(&mut conn, &db, &id, person).await?];
    view::resolve_references(&mut conn, &db, person, &mut docs).await?;
    let [doc] = docs;
    Ok(HttpResponse::Ok().json(EntityRead { entity: doc }))
}

/// `POST /api/{db}/entity`: creates an entity → 201 `{"_id","properties"}`.
#[utoipa::path(
    post, path = "/api/{db}/entity", operation_id = "create_entity", tag = "entities", summary = "Create an entity",
    description = "The body's values must include `_type`, a reference to an entity type. With `_parent` the caller needs `_expander` on that parent. File values (`filename`, `filesize`, `filetype`) come back with `upload`: PUT the content there within 60 seconds with exactly the given headers. `counter` in place of a value takes the next number of the property name's sequence.",
    security(("jwt" = [])),
    params(("db" = String, Path, description = "Database name", example = "demo")),
    request_body(content = WriteBody, description = "An array of values (or one value alone)", example = write_body_example),
    responses(
        (status = 201, description = "The new entity's id and its values", body = Written, example = written_example),
        (status = 400, description = "Malformed body, no `_type`, a bad language code, or an `_id` that is not a live value of this property", body = ErrorBody),
        (status = 401, response = inline(TokenRequired)),
        (status = 403, description = "The token is for other databases only, or no `_expander` on `_parent`", body = ErrorBody),
        (status = 404, description = "No such database", body = ErrorBody),
        (status = 413, response = inline(TooManyValues)),
        (status = 503, response = inline(WriteUnavailable)),
    )
)]
pub async fn create(
    state: web::Data<AppState>,
    caller: Caller,
    db: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let db = db.into_inner();
    let values = parse_body(&body)?;
    validate::check_size(&values, state.max_values_per_write)?;
    let outcome = state.write_as(&caller, &db, WriteOp::CreateEntity { values }).await?;
    Ok(HttpResponse::Created().json(written_json(&state.files, &db, outcome).await?))
}

/// `POST /api/{db}/entity/{_id}`: adds (or overwrites) values → `{"_id","properties"}`.
#[utoipa::path(
    post, path = "/api/{db}/entity/{id}", operation_id = "add_values", tag = "entities", summary = "Add or overwrite values",
    description = "Each value is added next to the existing ones; a value with `_id` overwrites that value (soft-deleted, the new one gets a new id). `_sharing` and `_inheritrights` hold one value: a new one replaces the live one, and a write holds at most one of each. Overwriting `_parent` needs `_expander` on the old parent too. File values come back with `upload`.",
    security(("jwt" = [])),
    params(("db" = String, Path, description = "Database name", example = "demo"), ("id" = String, Path, description = "Entity id (24 lowercase hex characters)", example = "6571f3a4c2b9e8d7f6a5b4c3")),
    request_body(content = WriteBody, description = "An array of values (or one value alone)", example = write_body_example),
    responses(
        (status = 200, description = "The entity's id and the values written", body = Written, example = written_example),
        (status = 400, description = "Malformed body, a bad language code, `No email`, or an `_id` that is not a live value of this property", body = ErrorBody),
        (status = 401, response = inline(TokenRequired)),
        (status = 403, description = "The caller sees the entity but lacks the right", body = ErrorBody),
        (status = 404, description = "No such database, or the entity is missing or not visible to the caller", body = ErrorBody),
        (status = 413, response = inline(TooManyValues)),
        (status = 503, response = inline(WriteUnavailable)),
    )
)]
pub async fn add_values(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let (db, entity_id) = path.into_inner();
    let values = parse_body(&body)?;
    validate::check_size(&values, state.max_values_per_write)?;
    let outcome = state
        .write_as(&caller, &db, WriteOp::AddValues { entity_id, values })
        .await?;
    Ok(HttpResponse::Ok().json(written_json(&state.files, &db, outcome).await?))
}

/// `DELETE /api/{db}/entity/{_id}`: soft-deletes the entity → `{"deleted":true}`.
#[utoipa::path(
    delete, path = "/api/{db}/entity/{id}", operation_id = "delete_entity", tag = "entities", summary = "Delete an entity",
    description = "Soft-deletes the entity and its values (owner only); children and referrers are untouched.",
    security(("jwt" = [])),
    params(("db" = String, Path, description = "Database name", example = "demo"), ("id" = String, Path, description = "Entity id (24 lowercase hex characters)", example = "6571f3a4c2b9e8d7f6a5b4c3")),
    responses(
        (status = 200, description = "Deleted", body = Deleted, example = json!({"deleted": true})),
        (status = 401, response = inline(TokenRequired)),
        (status = 403, description = "The caller is not an owner", body = ErrorBody),
        (status = 404, description = "No such database, or the entity is missing or not visible to the caller", body = ErrorBody),
        (status = 503, response = inline(WriteUnavailable)),
    )
)]
pub async fn delete(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (db, entity_id) = path.into_inner();
    state
        .write_as(&caller, &db, WriteOp::DeleteEntity { entity_id })
        .await?;
    Ok(HttpResponse::Ok().json(json!({"deleted": true})))
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
    let op = WriteOp::Aggregate {
        entity_id: entity_id.clone(),
    };
    let outcome = state.write_as(&caller, &db, op).await?;
    let queued = match outcome {
        WriteOutcome::Aggregated { queued } => queued,
        _ => 0,
    };
    Ok(HttpResponse::Ok().json(json!({"_id": entity_id, "queued": queued})))
}

#[derive(Debug, serde::Deserialize)]
pub struct Paging {
    limit: Option<String>,
    skip: Option<String>,
}

/// Most changes one history page returns.
const MAX_HISTORY_PAGE: usize = 1000;

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
    let person = caller.require_person(&db)?;
    state.require_database(&db).await?;
    let mut conn = state.pool.get().await?;
    if access::entity_level(&mut conn, &db, &id, Some(person)).await? != ViewLevel::Full {
        return Err(ApiError::forbidden("History needs _viewer or higher"));
    }
    let changes = view::history::changes(&values::all_values(&mut conn, &db, &id).await?);
    let number = |text: &Option<String>| text.as_deref().and_then(|t| t.trim().parse::<usize>().ok());
    let limit = number(&paging.limit)
        .filter(|limit| *limit > 0)
        .unwrap_or(DEFAULT_LIMIT as usize)
        .min(MAX_HISTORY_PAGE);
    let skip = number(&paging.skip).unwrap_or(0);
    let count = changes.len();
    Ok(HttpResponse::Ok().json(History {
        changes: changes.into_iter().skip(skip).take(limit).collect(),
        count: count as u64,
    }))
}
