//! The per-entity read projection: the entity's JSON, name, type, parents,
//! sharing and effective rights, rebuilt from its live values inside the
//! transaction of every write that touches it.

use std::collections::{BTreeSet, HashSet};

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::{Map, Value as Json};

use crate::db::schema::entities;
use crate::db::values::{self, EntityRow, ValueRow};
use crate::rights::{RightsLists, Sharing};
use crate::view;

/// What an entity's live values say about it, before rights inheritance.
#[derive(Debug, Clone, PartialEq)]
pub struct Projection {
    pub doc: Json,
    pub name: Option<String>,
    pub type_id: Option<String>,
    pub parent_ids: Vec<String>,
    pub sharing: Sharing,
    pub inherit_rights: bool,
    pub own_rights: RightsLists,
}

impl Projection {
    /// Builds the projection of entity `id` from its live values (oldest first).
    pub fn from_values(id: &str, rows: &[ValueRow]) -> Projection {
        let mut doc = Map::new();
        doc.insert("_id".into(), Json::String(id.to_owned()));
        let mut projection = Projection {
            doc: Json::Null,
            name: None,
            type_id: None,
            parent_ids: Vec::new(),
            sharing: Sharing::Private,
            inherit_rights: false,
            own_rights: RightsLists::default(),
        };
        let mut sharing_seen = false;
        let mut inherit_seen = false;
        for row in rows {
            let list = doc.entry(row.prop.clone()).or_insert_with(|| Json::Array(Vec::new()));
            if let Json::Array(items) = list {
                items.push(Json::Object(view::stored_value_json(row)));
            }
            let reference = row.reference.clone();
            match (row.prop.as_str(), reference) {
                ("name", _) if projection.name.is_none() => projection.name = row.string.clone(),
                ("_type", Some(target)) if projection.type_id.is_none() => projection.type_id = Some(target),
                ("_parent", Some(target)) => projection.parent_ids.push(target),
                ("_owner", Some(person)) => _ = projection.own_rights.owners.insert(person),
                ("_editor", Some(person)) => _ = projection.own_rights.editors.insert(person),
                ("_expander", Some(person)) => _ = projection.own_rights.expanders.insert(person),
                ("_viewer", Some(person)) => _ = projection.own_rights.viewers.insert(person),
                ("_noaccess", Some(person)) => _ = projection.own_rights.noaccess.insert(person),
                ("_sharing", _) if !sharing_seen => {
                    sharing_seen = true;
                    projection.sharing = row
                        .string
                        .as_deref()
                        .and_then(Sharing::parse)
                        .unwrap_or(Sharing::Private);
                }
                ("_inheritrights", _) if !inherit_seen => {
                    inherit_seen = true;
                    projection.inherit_rights = row.boolean.unwrap_or(false);
                }
                _ => {}
            }
        }
        projection.doc = Json::Object(doc);
        projection
    }
}

/// Re-projects entity `id` and, when its effective rights changed, every live
/// descendant that inherits them.
pub async fn project(conn: &mut AsyncPgConnection, db: &str, id: &str) -> QueryResult<()> {
    let mut pending = vec![id.to_owned()];
    let mut done = HashSet::new();
    while let Some(next) = pending.pop() {
        if !done.insert(next.clone()) {
            continue; // a cycle of parents
        }
        if project_one(conn, db, &next).await? {
            let heirs: Vec<String> = entities::table
                .filter(entities::db.eq(db))
                .filter(entities::parent_ids.contains(vec![next.clone()]))
                .filter(entities::inherit_rights.eq(true))
                .filter(entities::deleted_at.is_null())
                .select(entities::id)
                .load(conn)
                .await?;
            pending.extend(heirs);
        }
    }
    Ok(())
}

/// Rebuilds one entity's projection; answers whether its effective rights changed.
async fn project_one(conn: &mut AsyncPgConnection, db: &str, id: &str) -> QueryResult<bool> {
    let rows = values::live_values(conn, db, id).await?;
    let projection = Projection::from_values(id, &rows);
    let lists = effective_rights(conn, db, &projection).await?;
    let previous = values::live_entity(conn, db, id, false).await?.map(|row| row.lists());
    let array = |set: &BTreeSet<String>| set.iter().cloned().collect::<Vec<_>>();
    diesel::update(entities::table)
        .filter(entities::db.eq(db))
        .filter(entities::id.eq(id))
        .set((
            entities::doc.eq(&projection.doc),
            entities::name.eq(&projection.name),
            entities::type_id.eq(&projection.type_id),
            entities::parent_ids.eq(&projection.parent_ids),
            entities::sharing.eq(projection.sharing.as_str()),
            entities::inherit_rights.eq(projection.inherit_rights),
            entities::owners.eq(array(&lists.owners)),
            entities::editors.eq(array(&lists.editors)),
            entities::expanders.eq(array(&lists.expanders)),
            entities::viewers.eq(array(&lists.viewers)),
            entities::noaccess.eq(array(&lists.noaccess)),
        ))
        .execute(conn)
        .await?;
    Ok(previous.as_ref() != Some(&lists))
}

/// The entity's own lists, plus its parents' effective lists when it inherits.
pub async fn effective_rights(
    conn: &mut AsyncPgConnection,
    db: &str,
    projection: &Projection,
) -> QueryResult<RightsLists> {
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
