//! The queries behind a restore from history: an entity found whether live
//! or deleted, its undeletion, and whether a counter's number is free.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::db::schema::{entities, property_values};
use crate::db::values::EntityRow;

/// An entity, live or deleted, and its lifetime.
pub struct EntityLifetime {
    /// Its projection as it is now; a deleted one's as it was when deleted
    /// (a deletion leaves the row's projection as it was).
    pub row: EntityRow,
    pub created_at: DateTime<Utc>,
    pub deleted_at: Option<DateTime<Utc>>,
}

/// Entity `id`, live or deleted, its row locked until the transaction ends.
pub async fn entity_locked(conn: &mut AsyncPgConnection, db: &str, id: &str) -> QueryResult<Option<EntityLifetime>> {
    let found: Option<(EntityRow, DateTime<Utc>, Option<DateTime<Utc>>)> = entities::table
        .filter(entities::db.eq(db))
        .filter(entities::id.eq(id))
        .select((EntityRow::as_select(), entities::created_at, entities::deleted_at))
        .for_update()
        .first(conn)
        .await
        .optional()?;
    Ok(found.map(|(row, created_at, deleted_at)| EntityLifetime {
        row,
        created_at,
        deleted_at,
    }))
}

/// Makes deleted entity `id` live again; its values are the restore's.
pub async fn undelete_entity(conn: &mut AsyncPgConnection, db: &str, id: &str) -> QueryResult<usize> {
    diesel::update(entities::table)
        .filter(entities::db.eq(db))
        .filter(entities::id.eq(id))
        .set((
            entities::deleted_at.eq(None::<DateTime<Utc>>),
            entities::deleted_by.eq(None::<String>),
        ))
        .execute(conn)
        .await
}

/// Whether a live value of `prop` other than `except` holds `number`.
pub async fn number_taken(
    conn: &mut AsyncPgConnection,
    db: &str,
    prop: &str,
    number: f64,
    except: &[String],
) -> QueryResult<bool> {
    diesel::select(diesel::dsl::exists(
        property_values::table
            .filter(property_values::db.eq(db))
            .filter(property_values::prop.eq(prop))
            .filter(property_values::number.eq(number))
            .filter(property_values::deleted_at.is_null())
            .filter(property_values::id.ne_all(except)),
    ))
    .get_result(conn)
    .await
}
