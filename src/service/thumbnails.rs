//! Thumbnails' access: the signed URL of a thumbnail of an entity's photo or
//! of a file value, for a caller who may see it.

use serde_json::Value as Json;

use crate::db::values;
use crate::error::ApiError;
use crate::service::{Caller, Service};
use crate::storage::thumbnail::{self, ThumbnailError};
use crate::view::access;

/// Where the `size` thumbnail of entity `id`'s first `photo` file is: 404
/// when the caller does not see the entity or it has no photo, 400 for an
/// SVG photo or a size not offered.
pub async fn of_entity(service: &Service, caller: &Caller, db: &str, id: &str, size: &str) -> Result<String, ApiError> {
    service.require_database(db).await?;
    let size = thumbnail::parse_size(size)?;
    let mut conn = service.pool_for(db)?.get().await?;
    let entity = access::entity_doc(&mut conn, db, id, caller.person_in(db)).await?;
    let photo = entity
        .get("photo")
        .and_then(Json::as_array)
        .and_then(|photos| photos.iter().find(|photo| photo.get("filename").is_some()))
        .ok_or_else(|| ApiError::not_found("The entity has no photo"))?;
    if photo
        .get("filetype")
        .and_then(Json::as_str)
        .is_some_and(|filetype| filetype.to_ascii_lowercase().starts_with("image/svg"))
    {
        return Err(ThumbnailError::Unsupported.into());
    }
    let value_id = photo.get("_id").and_then(Json::as_str).unwrap_or_default();
    // a restored photo keeps its content in the object of the value it restores
    let object = values::find_value(&mut conn, db, value_id)
        .await?
        .and_then(|value| value.object_id)
        .unwrap_or_else(|| value_id.to_owned());
    drop(conn);
    service.files.thumbnail_url(db, id, &object, size).await
}

/// Where the `size` thumbnail of file value `id` is: 404 when the caller
/// does not see it, 400 for a value that is not a file or a size not offered.
pub async fn of_value(service: &Service, caller: &Caller, db: &str, id: &str, size: &str) -> Result<String, ApiError> {
    service.require_database(db).await?;
    let size = thumbnail::parse_size(size)?;
    let value = {
        let mut conn = service.pool_for(db)?.get().await?;
        access::shown_value(&mut conn, db, id, caller.person_in(db)).await?
    };
    if value.filename.is_none() {
        return Err(ThumbnailError::Unsupported.into());
    }
    service
        .files
        .thumbnail_url(db, &value.entity_id, value.object_value_id(), size)
        .await
}
