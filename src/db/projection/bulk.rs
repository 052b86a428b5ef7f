//! Projections built in bulk: a chunk of entities' projections built in
//! memory and stored in one statement, from the values a load read from its
//! file (`eds import`), or from their values read in one statement when the
//! entities of a type whose definitions changed are re-projected.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use super::one::{name_changes, narrows};
use super::rebuild::{reads_only_its_type, rebuild};
use super::store::{self, Stored, update};
use super::types::TypeCache;
use crate::db::schema::entities;
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
    /// How many entities' rows were rewritten: a transaction that bumps
    /// the database's generation itself bumps it when any was.
    pub rewritten: usize,
}

/// The stored rows of entities to re-project, as their caller read them.
pub enum Before {
    /// Read without locking them: each is written, the `UPDATE` comparing
    /// its projection with the row it finds then (another transaction may
    /// have changed it since it was read).
    Read(Vec<EntityRow>),
    /// Locked by the caller's transaction, so they hold until it ends: those
    /// whose projection is the row they hold are not written at all. A change
    /// to a type re-projects all its entities, most often changing few, and
    /// the `UPDATE` spent most of a batch reading the projections' JSON
    /// only to find them unchanged.
    Locked(Vec<EntityRow>),
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
    before: Before,
) -> QueryResult<(Vec<String>, Followers)> {
    let (before, locked) = match before {
        Before::Read(rows) => (rows, false),
        Before::Locked(rows) => (rows, true),
    };
    let ids: Vec<String> = before.iter().map(|row| row.id.clone()).collect();
    let mut before: HashMap<String, EntityRow> = before.into_iter().map(|row| (row.id.clone(), row)).collect();
    let (built, others) = build_plain(conn, types, db, &ids).await?;
    let mut followers = Followers::default();
    let mut reprojected = Vec::with_capacity(built.len());
    // the locked rows that may hold their projection, for `unchanged`
    let mut held = HashMap::new();
    for (id, projection, lists) in built {
        let Some(row) = before.remove(&id) else { continue };
        if locked && holds_all_but_search(&row, &projection, &lists) {
            held.insert(id.clone(), reprojected.len());
        }
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
    let unchanged = unchanged(conn, db, &reprojected, held).await?;
    let changed: Vec<Built> = reprojected
        .into_iter()
        .enumerate()
        .filter(|(position, _)| !unchanged.contains(position))
        .map(|(_, built)| built)
        .collect();
    followers.rewritten = store(conn, db, &changed).await?;
    Ok((others, followers))
}

/// Whether `row` holds `projection` and `lists` in every column it was read
/// with (not its search texts nor `inherit_rights`). Documents compare as
/// trees: where a tree could call equal what `jsonb` does not (a number
/// more precise than a `double`, which no value row holds), the row would
/// be left as it was.
fn holds_all_but_search(row: &EntityRow, projection: &Projection, lists: &RightsLists) -> bool {
    let same = |stored: &[String], set: &std::collections::BTreeSet<String>| stored.iter().eq(set.iter());
    row.doc == projection.doc
        && row.name == projection.name
        && row.type_id == projection.type_id
        && row.parent_ids == projection.parent_ids
        && row.sharing == projection.sharing.as_str()
        && row.public_props == projection.public_props
        && row.domain_props == projection.domain_props
        && same(&row.owners, &lists.owners)
        && same(&row.editors, &lists.editors)
        && same(&row.expanders, &lists.expanders)
        && same(&row.viewers, &lists.viewers)
        && same(&row.noaccess, &lists.noaccess)
}

/// The positions in `built` of the entities `held` (id → position) whose
/// rows also hold their search texts and `inherit_rights`: their rows
/// hold their projections whole. With [`holds_all_but_search`], every
/// column [`update`] writes is compared: a column it gains belongs here too.
async fn unchanged(
    conn: &mut AsyncPgConnection,
    db: &str,
    built: &[Built],
    held: HashMap<String, usize>,
) -> QueryResult<HashSet<usize>> {
    if held.is_empty() {
        return Ok(HashSet::new());
    }
    let ids: Vec<&String> = held.keys().collect();
    let rows: Vec<(String, bool, String, String, String)> = entities::table
        .filter(entities::db.eq(db))
        .filter(entities::id.eq_any(ids))
        .select((
            entities::id,
            entities::inherit_rights,
            entities::search_private,
            entities::search_domain,
            entities::search_public,
        ))
        .load(conn)
        .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(id, inherit_rights, private, domain, public)| {
            let position = *held.get(&id)?;
            let (_, projection, _) = &built[position];
            let same = projection.inherit_rights == inherit_rights
                && projection.search_private == private
                && projection.search_domain == domain
                && projection.search_public == public;
            same.then_some(position)
        })
        .collect())
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

/// Writes the projections `built`; answers how many rows they changed.
async fn store(conn: &mut AsyncPgConnection, db: &str, built: &[Built]) -> QueryResult<usize> {
    let stored: Vec<Stored> = built
        .iter()
        .map(|(id, projection, lists)| Stored::new(id, projection, lists))
        .collect();
    update(conn, db, &stored).await
}
