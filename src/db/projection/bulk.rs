//! Projections built in bulk: a chunk of entities' projections built in
//! memory and stored in one statement, from the values a load read from its
//! file (`eds import`), or from their values read in one statement when the
//! entities of a type whose definitions changed are re-projected.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use diesel::QueryResult;
use diesel_async::AsyncPgConnection;

use super::one::{name_changes, narrows};
use super::rebuild::{reads_only_its_type, rebuild};
use super::store::{self, Stored, update};
use super::types::TypeCache;
use crate::db::values::{self, EntityRow};
use crate::model::projection::Projection;
use crate::model::stored::ValueRow;
use crate::rights::RightsLists;

/// A live entity being loaded whole (`eds import`): its row's stamps and
/// its live values, not yet written.
#[derive(Debug)]
pub struct Loaded {
    pub id: String,
    pub created_at: DateTime<Utc>,
    pub created_by: Option<String>,
    pub rows: Vec<ValueRow>,
}

/// Inserts the rows of those of new entities `loaded` whose projection
/// reads nothing but their type, their types' projections current, with
/// their projections built from the values given: their values then go in
/// once, taking their visibility from the finished row. Answers the others,
/// for the caller to insert and project one by one. Nothing follows these:
/// no entity inherits their rights or shows their names without being one
/// of the others.
pub async fn insert_plain(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    loaded: Vec<Loaded>,
) -> QueryResult<Vec<Loaded>> {
    let mut built = Vec::with_capacity(loaded.len());
    let mut others = Vec::new();
    for mut entity in loaded {
        entity.rows.sort_by(|a, b| a.id.cmp(&b.id)); // as `live_values` orders them
        if reads_only_its_type(conn, types, db, &entity.rows).await? {
            let (projection, lists) = rebuild(conn, types, db, &entity.id, &entity.rows).await?;
            built.push((entity, projection, lists));
        } else {
            others.push(entity);
        }
    }
    let stored: Vec<Stored> = built
        .iter()
        .map(|(entity, projection, lists)| {
            Stored::new(&entity.id, projection, lists).created(entity.created_at, entity.created_by.as_deref())
        })
        .collect();
    store::insert(conn, db, &stored).await?;
    Ok(others)
}

/// What re-projecting entities in bulk changed for other entities.
#[derive(Debug, Default)]
pub struct Followers {
    /// Those whose document or views changed: formulas reading them are
    /// computed again.
    pub read_changed: Vec<String>,
    /// Those whose name, or who may read it, changed: their referrers'
    /// search text holds it.
    pub name_changed: Vec<String>,
    /// Those fewer may now read, or some of whose properties: formulas
    /// reading them are stripped at once.
    pub narrowed: Vec<String>,
}

/// Re-projects those of entities `before` (their stored rows) whose
/// projection reads nothing but their type, their types' projections
/// current: answers the others and what the change of the
/// projected ones means for others. Their rights lists stay as they were
/// (they inherit none, and no definition changes them), so nothing inherits
/// a change from them.
pub async fn reproject_plain(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    before: Vec<EntityRow>,
) -> QueryResult<(Vec<String>, Followers)> {
    let ids: Vec<String> = before.iter().map(|row| row.id.clone()).collect();
    let mut before: HashMap<String, EntityRow> = before.into_iter().map(|row| (row.id.clone(), row)).collect();
    let (built, others) = build_plain(conn, types, db, &ids).await?;
    let mut followers = Followers::default();
    let mut reprojected = Vec::with_capacity(built.len());
    for (id, projection, lists) in built {
        let Some(row) = before.remove(&id) else { continue };
        let read_changed = row.doc != projection.doc
            || row.sharing() != projection.sharing
            || row.public_props != projection.public_props
            || row.domain_props != projection.domain_props;
        if read_changed {
            followers.read_changed.push(id.clone());
        }
        if name_changes(&row, &projection, &lists) {
            followers.name_changed.push(id.clone());
        }
        if narrows(&row, &projection, &lists) {
            followers.narrowed.push(id.clone());
        }
        reprojected.push((id, projection, lists));
    }
    store(conn, db, &reprojected).await?;
    Ok((others, followers))
}

type Built = (String, Projection, RightsLists);

/// The projections of those of `ids` that read only their type, and the others.
async fn build_plain(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    ids: &[String],
) -> QueryResult<(Vec<Built>, Vec<String>)> {
    let mut rows_of: HashMap<String, Vec<_>> = HashMap::new();
    for row in values::live_values_of(conn, db, ids).await? {
        rows_of.entry(row.entity_id.clone()).or_default().push(row);
    }
    let mut built = Vec::with_capacity(ids.len());
    let mut others = Vec::new();
    for id in ids {
        let rows = rows_of.remove(id).unwrap_or_default();
        if reads_only_its_type(conn, types, db, &rows).await? {
            let (projection, lists) = rebuild(conn, types, db, id, &rows).await?;
            built.push((id.clone(), projection, lists));
        } else {
            others.push(id.clone());
        }
    }
    Ok((built, others))
}

async fn store(conn: &mut AsyncPgConnection, db: &str, built: &[Built]) -> QueryResult<()> {
    let stored: Vec<Stored> = built
        .iter()
        .map(|(id, projection, lists)| Stored::new(id, projection, lists))
        .collect();
    update(conn, db, &stored).await
}
