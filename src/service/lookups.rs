//! Reads the GraphQL front end needs beside the REST ones: many entities by
//! id at once (references' entities, one query for a whole page), and the
//! database's generation its schema cache is keyed by.

use std::collections::HashMap;

use serde_json::Value as Json;

use crate::db::generation;
use crate::error::ApiError;
use crate::model::ids::is_valid_id;
use crate::query::sql;
use crate::service::{Caller, Service};
use crate::view;

/// The entities of `ids` that `caller` sees, as the list answers show them
/// (references named), by id; the others are absent.
pub async fn read_many(
    service: &Service,
    caller: &Caller,
    db: &str,
    ids: &[String],
) -> Result<HashMap<String, Json>, ApiError> {
    let ids: Vec<String> = ids.iter().filter(|id| is_valid_id(id)).cloned().collect();
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    service.require_database(db).await?;
    let person = caller.person_in(db);
    let ids = &ids;
    let docs = service
        .read_route(db, caller)?
        .run(|pool| async move {
            let mut conn = pool.get().await?;
            let mut docs: Vec<Json> = sql::entities_by_id(&mut conn, db, ids)
                .await?
                .into_values()
                .filter_map(|entity| view::visible_doc(entity, person))
                .collect();
            view::resolve_references(&mut conn, db, person, &mut docs).await?;
            Ok::<_, ApiError>(docs)
        })
        .await?;
    Ok(docs
        .into_iter()
        .filter_map(|doc| Some((doc["_id"].as_str()?.to_owned(), doc)))
        .collect())
}

/// Database `db`'s generation, changed by every committed change of its
/// entities; 404 for an unknown database.
pub async fn generation(service: &Service, db: &str) -> Result<i64, ApiError> {
    let mut conn = service.pool_for(db)?.get().await?;
    generation::generation(&mut conn, db)
        .await?
        .ok_or_else(|| ApiError::not_found("Database not found"))
}
