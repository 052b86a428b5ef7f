//! One property value as the REST routes (`src/http/property.rs`) and the
//! MCP tools answer it.

use serde_json::{Value as Json, json};

use crate::error::ApiError;
use crate::service::bodies::writes::Deleted;
use crate::service::{Caller, Service};
use crate::view::{self, access};
use crate::write::{IdempotencyKey, WriteOp};

/// A value as its reader sees it, and a file value's signed download URL.
pub struct ShownValue {
    /// The value with `type` and `created`, references resolved; a file value with `url`.
    pub value: Json,
    pub url: Option<String>,
}

/// Value `id` as `caller` may see it.
pub async fn read(service: &Service, caller: &Caller, db: &str, id: &str) -> Result<ShownValue, ApiError> {
    service.require_database(db).await?;
    let person = caller.person_in(db);
    let (value, [mut doc]) = service
        .read_route(db, caller)?
        .run(|pool| async move {
            let mut conn = pool.get().await?;
            let value = access::shown_value(&mut conn, db, id, person).await?;
            // References resolve inside an entity document; wrap the value in one.
            let mut docs = [json!({ value.prop.clone(): [value.property_json()] })];
            view::resolve_references(&mut conn, db, person, &mut docs).await?;
            Ok((value, docs))
        })
        .await?;
    let mut resolved = doc[&value.prop][0].take();
    let url = service.files.download_url(db, &value).await?;
    if let Some(url) = &url {
        resolved["url"] = Json::String(url.clone());
    }
    Ok(ShownValue { value: resolved, url })
}

/// Soft-deletes value `value_id` through the database's writer (with
/// `retry`, a repeat answers the same).
pub async fn delete(
    service: &Service,
    caller: &Caller,
    db: &str,
    value_id: String,
    retry: Option<IdempotencyKey>,
) -> Result<Deleted, ApiError> {
    service
        .write_as(caller, db, WriteOp::DeleteValue { value_id }, retry)
        .await?;
    Ok(Deleted { deleted: true })
}
