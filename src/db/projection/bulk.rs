//! Projections built in bulk, for loading a whole database (`eds import`):
//! a chunk of entities' values read in one statement, their projections
//! built in memory and stored in one statement.

use std::collections::HashMap;

use diesel::QueryResult;
use diesel_async::AsyncPgConnection;

use super::TypeCache;
use super::rebuild::{reads_only_its_type, rebuild};
use super::store::{Stored, update};
use crate::db::values;

/// Projects those of live entities `ids` whose projection reads nothing but
/// their type (see [`reads_only_its_type`]), with their types' own
/// projections already current; answers the others, for the caller to
/// project one by one with what follows them. Nothing follows these: no
/// entity inherits their rights or shows their names without being one of
/// the others.
pub async fn project_plain(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    ids: &[String],
) -> QueryResult<Vec<String>> {
    let mut rows_of: HashMap<String, Vec<_>> = HashMap::new();
    for row in values::live_values_of(conn, db, ids).await? {
        rows_of.entry(row.entity_id.clone()).or_default().push(row);
    }
    let mut built = Vec::with_capacity(ids.len());
    let mut others = Vec::new();
    for id in ids {
        let rows = rows_of.remove(id).unwrap_or_default();
        if reads_only_its_type(conn, types, db, &rows).await? {
            built.push((id, rebuild(conn, types, db, id, &rows).await?));
        } else {
            others.push(id.clone());
        }
    }
    let stored: Vec<Stored> = built
        .iter()
        .map(|(id, (projection, lists))| Stored::new(id, projection, lists))
        .collect();
    update(conn, db, &stored).await?;
    Ok(others)
}
