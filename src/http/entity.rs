//! `/api/{db}/entity`: list, create, read, add values, delete.

use actix_web::{HttpRequest, HttpResponse, web};
use diesel_async::AsyncPgConnection;
use serde_json::{Map, Value as Json, json};

use super::error::ApiError;
use super::{AppState, Caller};
use crate::db::values::{self, EntityRow};
use crate::model::ids::is_valid_id;
use crate::model::value::parse_body;
use crate::query::sql::{self, ListResult};
use crate::query::{DEFAULT_LIMIT, ListQuery};
use crate::rights::{ViewLevel, view_level};
use crate::view;
use crate::write::{WriteOp, WriteOutcome};

/// `GET /api/{db}/entity`: `{"entities":[...],"count":N,"limit":L,"skip":S}`.
pub async fn list(
    state: web::Data<AppState>,
    caller: Caller,
    db: web::Path<String>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let db = db.into_inner();
    state.require_database(&db).await?;
    let params: Vec<(String, String)> = serde_urlencoded::from_str(req.query_string())
        .map_err(|_| ApiError::bad_request("invalid_query", "Malformed query string"))?;
    let query = ListQuery::parse(&params)?;
    let person = caller.person_in(&db);
    let mut conn = state.pool.get().await?;
    let visible = |entity: EntityRow| {
        let level = view_level(entity.sharing(), &entity.lists(), person)?;
        let mut doc = view::visible_doc(entity, level);
        if let (Some(props), Some(object)) = (&query.props, doc.as_object_mut()) {
            object.retain(|key, _| key == "_id" || props.iter().any(|p| p == key));
        }
        Some(doc)
    };
    match sql::run(&mut conn, &db, person, &query).await? {
        ListResult::Page { entities, count } => {
            let mut docs: Vec<Json> = entities.into_iter().filter_map(visible).collect();
            view::resolve_references(&mut conn, &db, &mut docs).await?;
            Ok(HttpResponse::Ok().json(json!({
                "entities": docs,
                "count": count,
                "limit": query.limit,
                "skip": query.skip,
            })))
        }
        ListResult::Groups { groups } => {
            // Rows carry only the `props` values of the group's first entity.
            let mut rows = Vec::with_capacity(groups.len());
            for (entity, size) in groups {
                let Some(mut doc) = visible(entity) else { continue };
                if let Some(object) = doc.as_object_mut() {
                    object.remove("_id");
                    if query.props.is_none() {
                        object.clear();
                    }
                    object.insert("_count".into(), Json::from(size));
                }
                rows.push(doc);
            }
            view::resolve_references(&mut conn, &db, &mut rows).await?;
            Ok(HttpResponse::Ok().json(json!({
                "entities": rows,
                "count": rows.len(),
                "limit": query.limit,
                "skip": query.skip,
            })))
        }
    }
}

/// `GET /api/{db}/entity/{_id}`: `{"entity":{...}}`.
pub async fn read(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (db, id) = path.into_inner();
    state.require_database(&db).await?;
    let mut conn = state.pool.get().await?;
    let mut docs = [visible_entity(&mut conn, &db, &id, caller.person_in(&db)).await?];
    view::resolve_references(&mut conn, &db, &mut docs).await?;
    let [doc] = docs;
    Ok(HttpResponse::Ok().json(json!({ "entity": doc })))
}

/// A live entity's document as the caller's view shows it; 404 for anything
/// else (missing, deleted, or not visible to the caller alike).
pub async fn visible_entity(
    conn: &mut AsyncPgConnection,
    db: &str,
    id: &str,
    person: Option<&str>,
) -> Result<Json, ApiError> {
    if !is_valid_id(id) {
        return Err(ApiError::entity_not_found());
    }
    let entity = values::live_entity(conn, db, id, false)
        .await?
        .ok_or_else(ApiError::entity_not_found)?;
    let level = view_level(entity.sharing(), &entity.lists(), person).ok_or_else(ApiError::entity_not_found)?;
    Ok(view::visible_doc(entity, level))
}

/// `POST /api/{db}/entity`: creates an entity → 201 `{"_id","properties"}`.
pub async fn create(
    state: web::Data<AppState>,
    caller: Caller,
    db: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let db = db.into_inner();
    let values = parse_body(&body)?;
    let outcome = state.write_as(&caller, &db, WriteOp::CreateEntity { values }).await?;
    let outcome = state.files.with_uploads(&db, outcome).await?;
    Ok(HttpResponse::Created().json(written(outcome)))
}

/// `POST /api/{db}/entity/{_id}`: adds (or overwrites) values → `{"_id","properties"}`.
pub async fn add_values(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let (db, entity_id) = path.into_inner();
    let values = parse_body(&body)?;
    let outcome = state
        .write_as(&caller, &db, WriteOp::AddValues { entity_id, values })
        .await?;
    let outcome = state.files.with_uploads(&db, outcome).await?;
    Ok(HttpResponse::Ok().json(written(outcome)))
}

/// `DELETE /api/{db}/entity/{_id}`: soft-deletes the entity → `{"deleted":true}`.
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

fn written(outcome: WriteOutcome) -> Json {
    match outcome {
        WriteOutcome::Written { entity_id, values } => json!({"_id": entity_id, "properties": values}),
        WriteOutcome::Deleted | WriteOutcome::Aggregated { .. } => Json::Object(Map::new()),
    }
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
pub async fn history(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
    paging: web::Query<Paging>,
) -> Result<HttpResponse, ApiError> {
    let (db, id) = path.into_inner();
    let person = caller.require_person(&db)?;
    state.require_database(&db).await?;
    if !is_valid_id(&id) {
        return Err(ApiError::entity_not_found());
    }
    let mut conn = state.pool.get().await?;
    let entity = values::live_entity(&mut conn, &db, &id, false)
        .await?
        .ok_or_else(ApiError::entity_not_found)?;
    match view_level(entity.sharing(), &entity.lists(), Some(person)) {
        None => return Err(ApiError::entity_not_found()),
        Some(ViewLevel::Full) => {}
        Some(_) => return Err(ApiError::forbidden("History needs _viewer or higher")),
    }
    let changes = view::history::changes(&values::all_values(&mut conn, &db, &id).await?);
    let number = |text: &Option<String>| text.as_deref().and_then(|t| t.trim().parse::<usize>().ok());
    let limit = number(&paging.limit)
        .filter(|limit| *limit > 0)
        .unwrap_or(DEFAULT_LIMIT as usize)
        .min(MAX_HISTORY_PAGE);
    let skip = number(&paging.skip).unwrap_or(0);
    let count = changes.len();
    let page: Vec<Json> = changes.into_iter().skip(skip).take(limit).collect();
    Ok(HttpResponse::Ok().json(json!({"changes": page, "count": count})))
}
