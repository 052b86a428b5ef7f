//! One entity's projection rebuilt (or a new entity's first one), and what
//! changed in it that others depend on.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::AsyncPgConnection;

use super::TypeCache;
use super::rebuild::rebuild;
use super::store::{self, Stored};
use crate::db::values::{self, EntityRow};
use crate::db::{changes, formulas};
use crate::model::PROPERTY_TYPE;
use crate::model::definition::PropertyDefinition;
use crate::model::projection::Projection;
use crate::model::stored::ValueRow;
use crate::rights::{RightsLists, Visibility};

/// An entity being created: its row is inserted with its projection, which
/// is built from `rows`, the values about to be written.
pub struct NewEntity {
    pub id: String,
    pub created_at: DateTime<Utc>,
    pub created_by: String,
    pub rows: Vec<ValueRow>,
}

/// What changed in one re-projection that others depend on.
pub(super) struct Changes {
    /// Entities whose formulas read this one.
    pub(super) dependents: Vec<String>,
    /// Its effective rights lists.
    pub(super) rights: bool,
    /// Its name, or who may read it.
    pub(super) name: bool,
    /// Fewer may read it, or some of its properties.
    pub(super) narrowed: bool,
    pub(super) types_to_reproject: Vec<String>,
    /// Whether the entities of those types may show less to someone.
    pub(super) types_narrowed: bool,
}

/// Rebuilds one entity's projection, or makes the first of a new entity.
pub(super) async fn project_one(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    id: &str,
    new_entity: Option<NewEntity>,
) -> QueryResult<Changes> {
    let is_new = new_entity.is_some();
    let (created, rows, previous) = match new_entity {
        Some(entity) => (Some((entity.created_at, entity.created_by)), entity.rows, None),
        None => (
            None,
            values::live_values(conn, db, id).await?,
            values::live_entity(conn, db, id, false).await?,
        ),
    };
    let (projection, lists) = rebuild(conn, types, db, id, &rows).await?;
    let stored = Stored::new(id, &projection, &lists);
    match &created {
        Some((created_at, created_by)) => {
            store::insert(conn, db, &[stored.created(*created_at, Some(created_by))]).await?
        }
        None => {
            store::update(conn, db, &[stored]).await?;
        }
    }
    let (mut changes, read_by) = changes(conn, types, db, id, previous.as_ref(), &projection, &lists, &rows).await?;
    // a new entity has no referrers: only what it names can depend on it
    if let Some(near) = read_by.filter(|near| !(is_new && near.is_empty())) {
        changes.dependents = formulas::dependents(conn, db, &[id.to_owned()], near).await?;
    }
    // nothing inherits from a new entity yet
    changes.rights &= !is_new;
    Ok(changes)
}

/// What changed for others when entity `id`, stored as `previous` (none
/// when new), was re-projected as `projection` with `lists` from its live
/// values `rows`; `dependents` left empty. With it, when its document
/// changed, the entities it names, whose formulas may read it
/// ([`formulas::dependents`]).
#[allow(clippy::too_many_arguments)]
pub(super) async fn changes(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    id: &str,
    previous: Option<&EntityRow>,
    projection: &Projection,
    lists: &RightsLists,
    rows: &[ValueRow],
) -> QueryResult<(Changes, Option<Vec<String>>)> {
    let mut types_to_reproject = Vec::new();
    let mut types_narrowed = false;
    let doc_changed = previous.is_none_or(|row| row.doc != projection.doc);
    if let (Some(row), Some(type_id), true) = (previous, &projection.type_id, doc_changed) {
        log_formula_changes(conn, types, db, type_id, row, projection).await?;
    }
    let is_definition = is_a_definition(conn, types, db, projection.type_id.as_deref()).await?;
    let was_definition = match previous.map(|row| row.type_id.as_deref()) {
        Some(before) if before != projection.type_id.as_deref() => is_a_definition(conn, types, db, before).await?,
        Some(_) => is_definition,
        None => false,
    };
    if doc_changed && (is_definition || was_definition) {
        // a definition: its types' entities show and index values by it
        let mut parents = projection.parent_ids.clone();
        if let Some(row) = previous {
            parents.extend(row.parent_ids.iter().cloned());
        }
        types_to_reproject.extend(parents);
        // a new definition only shows what was private; one that is no
        // longer a definition leaves its property private
        types_narrowed =
            previous.is_some_and(|row| (was_definition && !is_definition) || definition_narrows(row, projection));
    } else if let Some(row) = previous.filter(|row| row.sharing() != projection.sharing) {
        // a type's sharing caps its definitions' (a no-op for other entities)
        types_to_reproject.push(id.to_owned());
        types_narrowed = projection.sharing < row.sharing();
    }
    let mut near = projection.parent_ids.clone();
    near.extend(
        rows.iter()
            .filter(|row| !row.prop.starts_with('_'))
            .filter_map(|row| row.reference.clone()),
    );
    let changes = Changes {
        dependents: Vec::new(),
        rights: previous.map(EntityRow::lists).as_ref() != Some(lists),
        name: previous.is_some_and(|row| name_changes(row, projection, lists)),
        narrowed: previous.is_some_and(|row| narrows(row, projection, lists)),
        types_to_reproject,
        types_narrowed,
    };
    Ok((changes, doc_changed.then_some(near)))
}

/// Logs the formula values a re-projection changed as an `update` of the
/// entity (the values a write stores log themselves); a re-projection that
/// changes no value logs nothing.
async fn log_formula_changes(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    type_id: &str,
    before: &EntityRow,
    after: &Projection,
) -> QueryResult<()> {
    let mut changed: Vec<String> = types
        .get(conn, db, type_id)
        .await?
        .definitions
        .iter()
        .filter(|(_, definition)| definition.formula.is_some())
        .map(|(prop, _)| prop)
        .filter(|prop| before.doc.get(prop.as_str()) != after.doc.get(prop.as_str()))
        .cloned()
        .collect();
    if changed.is_empty() {
        return Ok(());
    }
    changed.sort();
    changes::record_update(conn, db, &before.id, &changed).await
}

/// Whether an entity of type `type_id` is a property definition.
async fn is_a_definition(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    type_id: Option<&str>,
) -> QueryResult<bool> {
    Ok(match type_id {
        Some(type_id) => types.get(conn, db, type_id).await?.name.as_deref() == Some(PROPERTY_TYPE),
        None => false,
    })
}

/// Whether a definition's change may show less of its types' entities to
/// someone: its property shown in a narrower view, or under another name or
/// for other types (the old ones' property then has no definition, so it is
/// private).
fn definition_narrows(before: &EntityRow, after: &Projection) -> bool {
    before.name != after.name
        || before.parent_ids != after.parent_ids
        || PropertyDefinition::from_doc(&after.doc).sharing < PropertyDefinition::from_doc(&before.doc).sharing
}

/// Whether the new projection changes the entity's name, or who may read it
/// (its referrers' search text holds the name where they may).
pub(super) fn name_changes(before: &EntityRow, after: &Projection, lists: &RightsLists) -> bool {
    let now_visible = Visibility {
        sharing: after.sharing,
        lists: lists.clone(),
        public_props: &after.public_props,
        domain_props: &after.domain_props,
    };
    before.name != after.name || before.visibility().audience("name") != now_visible.audience("name")
}

/// Whether the new projection lets fewer read the entity, or some of its
/// properties, than its stored row did.
pub(super) fn narrows(before: &EntityRow, after: &Projection, lists: &RightsLists) -> bool {
    let kept = |old: &[String], new: &[String]| old.iter().all(|item| new.contains(item));
    after.sharing < before.sharing()
        || !before.viewers.iter().all(|person| lists.viewers.contains(person))
        || !lists.noaccess.iter().all(|person| before.noaccess.contains(person))
        || !kept(&before.public_props, &after.public_props)
        || !kept(&before.domain_props, &after.domain_props)
}
