//! Loading what the pure projection ([`crate::model::projection`]) needs,
//! and building an entity's projection with it.

use std::collections::HashMap;

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use super::TypeCache;
use crate::db::formulas;
use crate::db::schema::entities;
use crate::db::values::{self, EntityRow};
use crate::model::projection::{Projection, ProjectionContext};
use crate::model::stored::ValueRow;
use crate::rights::RightsLists;

/// Loads the definitions, type sharing and referenced names an entity's projection needs.
async fn context_for(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    rows: &[ValueRow],
) -> QueryResult<ProjectionContext> {
    let Some(type_id) = rows
        .iter()
        .find(|row| row.prop == "_type")
        .and_then(|row| row.reference.clone())
    else {
        return Ok(ProjectionContext::default());
    };
    let info = types.get(conn, db, &type_id).await?;
    let searchable_targets: Vec<String> = rows
        .iter()
        .filter(|row| info.definitions.get(&row.prop).is_some_and(|d| d.search))
        .filter_map(|row| row.reference.clone())
        .collect();
    let targets = if searchable_targets.is_empty() {
        HashMap::new()
    } else {
        values::targets(conn, db, &searchable_targets)
            .await?
            .into_iter()
            .filter_map(|target| {
                let readers = target.access.visibility().audience("name");
                Some((target.id, (target.name?, readers)))
            })
            .collect()
    };
    Ok(ProjectionContext {
        definitions: info.definitions.clone(),
        type_sharing: info.sharing,
        type_name: info.name.clone(),
        targets,
    })
}

/// Whether [`rebuild`] of an entity with live values `rows` reads nothing
/// but its type: no formulas (they read other entities), no inherited
/// rights (they are its parents'), no searchable reference (its search text
/// holds the referenced entity's name).
pub(super) async fn reads_only_its_type(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    rows: &[ValueRow],
) -> QueryResult<bool> {
    if rows
        .iter()
        .any(|row| row.prop == "_inheritrights" && row.boolean == Some(true))
    {
        return Ok(false);
    }
    let Some(type_id) = rows
        .iter()
        .find(|row| row.prop == "_type")
        .and_then(|row| row.reference.as_deref())
    else {
        return Ok(true);
    };
    let info = types.get(conn, db, type_id).await?;
    let definitions = &info.definitions;
    Ok(definitions.values().all(|definition| definition.formula.is_none())
        && !rows.iter().any(|row| {
            row.reference.is_some() && definitions.get(&row.prop).is_some_and(|definition| definition.search)
        }))
}

/// The projection of an entity with live values `rows`, formulas included,
/// and its effective rights lists: what a write stores, and what a check
/// that the stored projection is current compares with.
pub async fn rebuild(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    id: &str,
    rows: &[ValueRow],
) -> QueryResult<(Projection, RightsLists)> {
    let context = context_for(conn, types, db, rows).await?;
    let mut projection = Projection::from_values(id, rows, &context);
    let lists = effective_rights(conn, db, &projection).await?;
    projection.index_search(rows, &context, &lists);
    let computed = {
        let audience = |prop: &str| projection.audience(&context, &lists, prop);
        formulas::evaluate(conn, db, id, rows, &context.definitions, &audience).await?
    };
    crate::formula::context::apply(&mut projection.doc, computed);
    // formula values show in the views their definitions allow
    projection.share_props(&context);
    Ok((projection, lists))
}

/// The entity's own lists, plus its parents' effective lists when it inherits.
async fn effective_rights(conn: &mut AsyncPgConnection, db: &str, projection: &Projection) -> QueryResult<RightsLists> {
    let mut inherited = Vec::new();
    if projection.inherit_rights && !projection.parent_ids.is_empty() {
        let parents: Vec<EntityRow> = entities::table
            .filter(entities::db.eq(db))
            .filter(entities::id.eq_any(&projection.parent_ids))
            .filter(entities::deleted_at.is_null())
            .select(EntityRow::as_select())
            .load(conn)
            .await?;
        inherited = parents.iter().map(EntityRow::lists).collect();
    }
    Ok(RightsLists::effective(&projection.own_rights, &inherited))
}
