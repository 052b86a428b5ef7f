//! Read access in one place: every read on a caller's behalf loads its
//! entity or value here, and what the caller cannot see answers 404 just as
//! what does not exist (a malformed id, a missing or a deleted one alike).

use diesel_async::AsyncPgConnection;
use serde_json::Value as Json;
use serde_json::value::RawValue;

use crate::db::references::entity_with_targets;
use crate::db::values::{self, EntityRow};
use crate::error::ApiError;
use crate::model::ids::is_valid_id;
use crate::model::stored::ValueRow;
use crate::rights::ViewLevel;
use crate::view::shown;

/// A live entity; 404 when there is none.
async fn live_entity(conn: &mut AsyncPgConnection, db: &str, id: &str) -> Result<EntityRow, ApiError> {
    if !is_valid_id(id) {
        return Err(ApiError::entity_not_found());
    }
    values::live_entity(conn, db, id, false)
        .await?
        .ok_or_else(ApiError::entity_not_found)
}

/// A live entity's document as `person`'s view shows it; 404 when they see nothing of it.
pub async fn entity_doc(
    conn: &mut AsyncPgConnection,
    db: &str,
    id: &str,
    person: Option<&str>,
) -> Result<Json, ApiError> {
    let entity = live_entity(conn, db, id).await?;
    super::visible_doc(entity, person).ok_or_else(ApiError::entity_not_found)
}

/// [`entity_doc`] with its references named as `person` may see their
/// targets (`super::resolve_references`), read in one statement and
/// written as JSON text (`super::shown`).
pub async fn entity_read(
    conn: &mut AsyncPgConnection,
    db: &str,
    id: &str,
    person: Option<&str>,
) -> Result<Box<RawValue>, ApiError> {
    if !is_valid_id(id) {
        return Err(ApiError::entity_not_found());
    }
    let (entity, targets) = entity_with_targets(conn, db, id)
        .await?
        .ok_or_else(ApiError::entity_not_found)?;
    let level = entity.view_level(person).ok_or_else(ApiError::entity_not_found)?;
    let names = super::TargetNames::new(targets, person);
    let mut doc = Vec::with_capacity(entity.doc.0.len() + 256);
    shown::write(&entity, level, |_| true, &names, &mut doc)?;
    let doc = String::from_utf8(doc).map_err(shown::unreadable)?;
    RawValue::from_string(doc).map_err(shown::unreadable)
}

/// How much of a live entity `person` sees; 404 when nothing.
pub async fn entity_level(
    conn: &mut AsyncPgConnection,
    db: &str,
    id: &str,
    person: Option<&str>,
) -> Result<ViewLevel, ApiError> {
    let entity = live_entity(conn, db, id).await?;
    entity.view_level(person).ok_or_else(ApiError::entity_not_found)
}

/// A live value that `person`'s view of its entity shows; 404 otherwise.
pub async fn shown_value(
    conn: &mut AsyncPgConnection,
    db: &str,
    id: &str,
    person: Option<&str>,
) -> Result<ValueRow, ApiError> {
    if !is_valid_id(id) {
        return Err(ApiError::property_not_found());
    }
    let value = values::find_value(conn, db, id)
        .await?
        .filter(|value| value.deleted_at.is_none())
        .ok_or_else(ApiError::property_not_found)?;
    let entity = values::live_entity(conn, db, &value.entity_id, false)
        .await?
        .ok_or_else(ApiError::property_not_found)?;
    if entity.shows_to(person, &value.prop) {
        Ok(value)
    } else {
        Err(ApiError::property_not_found())
    }
}
