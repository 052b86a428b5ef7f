//! Which file values of a write's answer carry a signed `upload`. A write
//! signs each of its file values; its repeat (the same `Idempotency-Key`)
//! answers the first answer, but signs a file value again only while the
//! caller may still write the entity, the value is live and its object is
//! not yet stored: an upload URL is a right to write, judged now.

use std::collections::HashSet;

use crate::db::values;
use crate::error::ApiError;
use crate::rights::{Right, has_right};
use crate::service::{Caller, Service};
use crate::write::WrittenValue;

/// The ids of the file values among `written` (on entity `entity_id`) that
/// get an upload; `repeat` when the write was a repeat of a recorded one.
pub async fn signed_values(
    service: &Service,
    caller: &Caller,
    db: &str,
    entity_id: &str,
    written: &[WrittenValue],
    repeat: bool,
) -> Result<HashSet<String>, ApiError> {
    let files = written
        .iter()
        .map(|value| &value.row)
        .filter(|row| row.filename.is_some());
    if !repeat {
        return Ok(files.map(|row| row.id.clone()).collect());
    }
    let mut open = HashSet::new();
    let Some(person) = caller.person_in(db) else {
        return Ok(open);
    };
    let mut conn = service.pool_for(db)?.get().await?;
    let may_write = values::live_entity(&mut conn, db, entity_id, false)
        .await?
        .is_some_and(|entity| has_right(&entity.lists(), person, Right::Editor));
    if !may_write {
        return Ok(open);
    }
    let live: HashSet<String> = values::live_values(&mut conn, db, entity_id)
        .await?
        .into_iter()
        .map(|value| value.id)
        .collect();
    drop(conn);
    for row in files.filter(|row| live.contains(&row.id)) {
        if !service.files.is_stored(db, row).await? {
            open.insert(row.id.clone());
        }
    }
    Ok(open)
}
