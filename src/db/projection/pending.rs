//! New entities a transaction has yet to store: those whose projection reads
//! nothing but their type and that nothing else in the transaction can read
//! (no entity may name one before its write is answered). Their projections
//! are built as their writes are applied, and stored together, when the
//! transaction needs them stored: the entities of one author and moment in
//! one statement, all their values in one more, instead of two statements
//! for each.

use chrono::{DateTime, Utc};
use diesel::QueryResult;
use diesel_async::AsyncPgConnection;

use super::rebuild::{reads_only_its_type, rebuild};
use super::store::{Stored, insert};
use super::{NewEntity, TypeCache};
use crate::db::values::{self, ValueRecord};
use crate::model::projection::Projection;
use crate::rights::RightsLists;

/// New entities of one transaction (all of database `db`), not yet stored.
#[derive(Default)]
pub struct PendingCreates {
    created: Vec<Created>,
}

struct Created {
    id: String,
    created_at: DateTime<Utc>,
    created_by: String,
    projection: Projection,
    lists: RightsLists,
    rows: Vec<ValueRecord>,
}

impl PendingCreates {
    /// Keeps new entity `entity`, with `rows`, the value rows written for
    /// it, to be stored by [`PendingCreates::store`], when its projection
    /// reads only its type and nothing follows it: no parent, no reference
    /// of its own (formulas reading those would follow it), and not a type
    /// or definition (later writes read those). Otherwise gives both back:
    /// the caller stores them now ([`super::project_new`]).
    pub async fn keep(
        &mut self,
        conn: &mut AsyncPgConnection,
        types: &mut TypeCache,
        db: &str,
        mut entity: NewEntity,
        rows: Vec<ValueRecord>,
    ) -> QueryResult<Option<(NewEntity, Vec<ValueRecord>)>> {
        let follows = entity
            .rows
            .iter()
            .any(|row| row.prop == "_parent" || (row.reference.is_some() && !row.prop.starts_with('_')));
        if follows || !reads_only_its_type(conn, types, db, &entity.rows).await? {
            return Ok(Some((entity, rows)));
        }
        entity.rows.sort_by(|a, b| a.id.cmp(&b.id)); // as `project_new` builds it
        let (projection, lists) = rebuild(conn, types, db, &entity.id, &entity.rows).await?;
        let describes_types = match projection.type_id.as_deref() {
            Some(type_id) => types.get(conn, db, type_id).await?.describes_types(),
            None => false,
        };
        if describes_types {
            return Ok(Some((entity, rows)));
        }
        self.created.push(Created {
            id: entity.id,
            created_at: entity.created_at,
            created_by: entity.created_by,
            projection,
            lists,
            rows,
        });
        Ok(None)
    }

    /// Stores the entities kept so far, and their values.
    pub async fn store(&mut self, conn: &mut AsyncPgConnection, db: &str) -> QueryResult<()> {
        let created = std::mem::take(&mut self.created);
        let stored: Vec<Stored> = created
            .iter()
            .map(|entity| {
                Stored::new(&entity.id, &entity.projection, &entity.lists)
                    .created(entity.created_at, Some(&entity.created_by))
            })
            .collect();
        insert(conn, db, &stored).await?;
        let rows: Vec<ValueRecord> = created.into_iter().flat_map(|entity| entity.rows).collect();
        if !rows.is_empty() {
            values::insert_values_of_new_entities(conn, &rows).await?;
        }
        Ok(())
    }
}
