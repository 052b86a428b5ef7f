//! Several existing entities re-projected together after one write changed
//! them all (a batch's run of additions): their values and rows read at
//! once, their projections stored in one statement, and what follows them
//! looked up together.

use std::collections::HashMap;

use diesel::QueryResult;
use diesel_async::AsyncPgConnection;

use super::TypeCache;
use super::follow::follow_all;
use super::one::changes;
use super::rebuild::rebuild;
use super::store::{self, Stored};
use crate::db::formulas;
use crate::db::values;

/// As [`super::project`] for each of live entities `ids` (each once);
/// answers how many entities it queued for their formulas.
pub async fn project_many(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    ids: &[String],
) -> QueryResult<usize> {
    let mut previous: HashMap<String, _> = values::live_entities(conn, db, ids)
        .await?
        .into_iter()
        .map(|row| (row.id.clone(), row))
        .collect();
    let mut rows_of: HashMap<String, Vec<_>> = HashMap::new();
    for row in values::live_values_of(conn, db, ids).await? {
        rows_of.entry(row.entity_id.clone()).or_default().push(row);
    }
    let mut built = Vec::with_capacity(ids.len());
    for id in ids {
        let Some(before) = previous.remove(id) else { continue };
        let rows = rows_of.remove(id).unwrap_or_default();
        let (projection, lists) = rebuild(conn, types, db, id, &rows).await?;
        built.push((id, before, rows, projection, lists));
    }
    let stored: Vec<Stored> = built
        .iter()
        .map(|(id, _, _, projection, lists)| Stored::new(id, projection, lists))
        .collect();
    store::update(conn, db, &stored).await?;
    let mut firsts = Vec::with_capacity(built.len());
    let (mut read, mut near) = (Vec::new(), Vec::new());
    for (id, before, rows, projection, lists) in &built {
        let (changes, read_by) = changes(conn, types, db, id, Some(before), projection, lists, rows).await?;
        if let Some(names) = read_by {
            read.push(id.to_string());
            near.extend(names);
        }
        firsts.push((id.to_string(), changes));
    }
    // whose formulas read any of them, looked up once for all
    if let Some((_, first)) = firsts.first_mut() {
        first.dependents = formulas::dependents(conn, db, &read, near).await?;
    }
    follow_all(conn, types, db, firsts, 0).await
}
