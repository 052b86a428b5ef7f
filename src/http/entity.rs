//! `/api/{db}/entity`: list, create, read, add values, delete.

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Map, Value as Json, json};

use super::error::ApiError;
use super::{AppState, Caller};
use crate::db::values;
use crate::model::ids::is_valid_id;
use crate::model::value::parse_body;
use crate::query::{ListQuery, sql};
use crate::rights::can_read;
use crate::view;
use crate::write::{WriteOp, WriteOutcome, WriteRequest};

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
    let mut conn = state.pool.get().await?;
    let (mut docs, count) = sql::run(&mut conn, &db, caller.person_in(&db), &query).await?;
    if let Some(props) = &query.props {
        for doc in &mut docs {
            if let Some(object) = doc.as_object_mut() {
                object.retain(|key, _| key == "_id" || props.iter().any(|p| p == key));
            }
        }
    }
    view::resolve_references(&mut conn, &db, &mut docs).await?;
    Ok(HttpResponse::Ok().json(json!({
        "entities": docs,
        "count": count,
        "limit": query.limit,
        "skip": query.skip,
    })))
}

/// `GET /api/{db}/entity/{_id}`: `{"entity":{...}}`.
pub async fn read(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (db, id) = path.into_inner();
    state.require_database(&db).await?;
    if !is_valid_id(&id) {
        return Err(ApiError::entity_not_found());
    }
    let mut conn = state.pool.get().await?;
    let entity = values::live_entity(&mut conn, &db, &id, false)
        .await?
        .filter(|entity| can_read(entity.sharing(), &entity.lists(), caller.person_in(&db)))
        .ok_or_else(ApiError::entity_not_found)?;
    let mut docs = [entity.doc];
    view::resolve_references(&mut conn, &db, &mut docs).await?;
    let [doc] = docs;
    Ok(HttpResponse::Ok().json(json!({ "entity": doc })))
}

/// `POST /api/{db}/entity`: creates an entity → 201 `{"_id","properties"}`.
pub async fn create(
    state: web::Data<AppState>,
    caller: Caller,
    db: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    let db = db.into_inner();
    let actor = caller.require_person(&db)?.to_owned();
    state.require_database(&db).await?;
    let values = parse_body(&body)?;
    let outcome = state
        .writers
        .write(WriteRequest {
            db: db.clone(),
            actor,
            op: WriteOp::CreateEntity { values },
        })
        .await?;
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
    let actor = caller.require_person(&db)?.to_owned();
    state.require_database(&db).await?;
    if !is_valid_id(&entity_id) {
        return Err(ApiError::entity_not_found());
    }
    let values = parse_body(&body)?;
    let outcome = state
        .writers
        .write(WriteRequest {
            db: db.clone(),
            actor,
            op: WriteOp::AddValues { entity_id, values },
        })
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
    let actor = caller.require_person(&db)?.to_owned();
    state.require_database(&db).await?;
    if !is_valid_id(&entity_id) {
        return Err(ApiError::entity_not_found());
    }
    state
        .writers
        .write(WriteRequest {
            db,
            actor,
            op: WriteOp::DeleteEntity { entity_id },
        })
        .await?;
    Ok(HttpResponse::Ok().json(json!({"deleted": true})))
}

fn written(outcome: WriteOutcome) -> Json {
    match outcome {
        WriteOutcome::Written { entity_id, values } => json!({"_id": entity_id, "properties": values}),
        WriteOutcome::Deleted => Json::Object(Map::new()),
    }
}
