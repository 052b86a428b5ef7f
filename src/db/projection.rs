//! The per-entity read projection: the entity's JSON, name, type, parents,
//! sharing, effective rights, views and search text, rebuilt from its live
//! values inside the transaction of every write that touches it.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::{Map, Value as Json};

use crate::db::schema::{entities, property_values};
use crate::db::values::{self, EntityRow, ValueRow};
use crate::db::{formula_queue, formulas};
use crate::model::definition::PropertyDefinition;
use crate::model::{ENTITY_TYPE, PROPERTY_TYPE};
use crate::rights::{RightsLists, Sharing};
use crate::view;

/// What the projection needs besides the entity's own values.
#[derive(Debug, Clone, Default)]
pub struct ProjectionContext {
    /// Definitions of the entity type's properties, by name.
    pub definitions: HashMap<String, PropertyDefinition>,
    /// The entity type's own `_sharing`: it caps every definition's.
    pub type_sharing: Option<Sharing>,
    /// The entity type's name (`property` marks a definition).
    pub type_name: Option<String>,
    /// Names of referenced entities, for searchable references.
    pub names: HashMap<String, String>,
}

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
    pub public_props: Vec<String>,
    pub domain_props: Vec<String>,
    pub search_private: String,
    pub search_domain: String,
    pub search_public: String,
}

/// Only the first characters of a query word count; longer stored words are
/// kept whole so any part of them matches.
pub const SEARCH_WORD_CHARS: usize = 20;

impl Projection {
    /// Builds the projection of entity `id` from its live values (oldest first).
    pub fn from_values(id: &str, rows: &[ValueRow], context: &ProjectionContext) -> Projection {
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
            public_props: Vec::new(),
            domain_props: Vec::new(),
            search_private: String::new(),
            search_domain: String::new(),
            search_public: String::new(),
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
        let type_sharing = context.type_sharing.unwrap_or(Sharing::Private);
        for prop in doc.keys().filter(|prop| !prop.starts_with('_')) {
            let Some(definition) = context.definitions.get(prop) else {
                continue;
            };
            let sharing = definition.sharing.min(type_sharing);
            if sharing >= Sharing::Domain {
                projection.domain_props.push(prop.clone());
            }
            if sharing == Sharing::Public {
                projection.public_props.push(prop.clone());
            }
        }
        for row in rows {
            if !context.definitions.get(&row.prop).is_some_and(|d| d.search) {
                continue;
            }
            let Some(text) = search_text(row, &context.names) else {
                continue;
            };
            append_words(&mut projection.search_private, &text);
            if projection.domain_props.contains(&row.prop) {
                append_words(&mut projection.search_domain, &text);
            }
            if projection.public_props.contains(&row.prop) {
                append_words(&mut projection.search_public, &text);
            }
        }
        projection.doc = Json::Object(doc);
        projection
    }
}

/// The searchable text of one value: strings, numbers, dates, file names and
/// the names of referenced entities.
fn search_text(row: &ValueRow, names: &HashMap<String, String>) -> Option<String> {
    if let Some(text) = &row.string {
        return Some(text.clone());
    }
    if let Some(target) = &row.reference {
        return names.get(target).cloned();
    }
    if let Some(number) = row.number {
        return Some(view::number_json(number).to_string());
    }
    if let Some(date) = row.date {
        return Some(date.format("%Y-%m-%d").to_string());
    }
    row.filename.clone()
}

fn append_words(index: &mut String, text: &str) {
    for word in text.split_whitespace() {
        if !index.is_empty() {
            index.push(' ');
        }
        index.push_str(&word.to_lowercase());
    }
}

/// Re-projects entity `id` and what must follow it at once: inheriting
/// descendants when its effective rights change, referrers when its name
/// changes (their search text holds it), and the entities of a type when one
/// of its property definitions or its own sharing changes. Entities whose
/// formulas read a changed entity are queued (`formula_queue`).
/// Answers how many entities it queued.
pub async fn project(conn: &mut AsyncPgConnection, types: &mut TypeCache, db: &str, id: &str) -> QueryResult<usize> {
    project_from(conn, types, db, id, None, 0).await
}

/// An entity being created: its row is inserted with its projection, which
/// is built from `rows`, the values about to be written.
pub struct NewEntity {
    pub id: String,
    pub created_at: DateTime<Utc>,
    pub created_by: String,
    pub rows: Vec<ValueRow>,
}

/// As [`project`], for an entity created in this transaction: it is inserted
/// (its values go in after it), nothing is read back, and nothing can
/// inherit from or refer to it yet.
pub async fn project_new(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    mut entity: NewEntity,
) -> QueryResult<usize> {
    entity.rows.sort_by(|a, b| a.id.cmp(&b.id)); // as `live_values` orders them
    let id = entity.id.clone();
    project_from(conn, types, db, &id, Some(entity), 0).await
}

/// As [`project`], for an entity taken off the formula queue `hops`
/// re-computations after the write that started it.
pub async fn project_after(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    id: &str,
    hops: i32,
) -> QueryResult<usize> {
    project_from(conn, types, db, id, None, hops).await
}

async fn project_from(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    id: &str,
    mut new_entity: Option<NewEntity>,
    hops: i32,
) -> QueryResult<usize> {
    let mut pending = vec![id.to_owned()];
    let mut done = HashSet::new();
    let mut queued = BTreeSet::new();
    while let Some(next) = pending.pop() {
        if !done.insert(next.clone()) {
            continue; // a cycle of parents or references
        }
        let changes = project_one(conn, types, db, &next, new_entity.take()).await?;
        if changes.rights {
            cascade_rights(conn, db, vec![next.clone()]).await?;
        }
        queued.extend(changes.dependents);
        if changes.name {
            let referrers: Vec<String> = property_values::table
                .filter(property_values::db.eq(db))
                .filter(property_values::reference.eq(&next))
                .filter(property_values::deleted_at.is_null())
                .filter(property_values::prop.not_like("\\_%"))
                .select(property_values::entity_id)
                .distinct()
                .load(conn)
                .await?;
            pending.extend(referrers.into_iter().filter(|referrer| !done.contains(referrer)));
        }
        for type_id in changes.types_to_reproject {
            let members: Vec<String> = entities::table
                .filter(entities::db.eq(db))
                .filter(entities::type_id.eq(&type_id))
                .filter(entities::deleted_at.is_null())
                .select(entities::id)
                .load(conn)
                .await?;
            pending.extend(members.into_iter().filter(|member| !done.contains(member)));
        }
    }
    let queued: Vec<String> = queued.into_iter().collect();
    formula_queue::enqueue(conn, db, &queued, hops + 1).await?;
    Ok(queued.len())
}

/// An inheriting entity's id, parents and current effective lists.
type HeirRow = (
    String,
    Vec<String>,
    Vec<String>,
    Vec<String>,
    Vec<String>,
    Vec<String>,
    Vec<String>,
);

/// Re-computes the effective rights of every live descendant that inherits
/// from `changed` (entities whose effective rights just changed), a level at
/// a time with a handful of set-based queries per level: only the rights
/// columns depend on a parent, so nothing else is rebuilt.
async fn cascade_rights(conn: &mut AsyncPgConnection, db: &str, mut changed: Vec<String>) -> QueryResult<()> {
    let mut visited: HashSet<String> = changed.iter().cloned().collect();
    while !changed.is_empty() {
        // Children found through their `_parent` values (a btree probe per
        // changed entity): a GIN overlap with thousands of keys is far slower.
        let children = property_values::table
            .filter(property_values::db.eq(db))
            .filter(property_values::reference.eq_any(&changed))
            .filter(property_values::prop.eq("_parent"))
            .filter(property_values::deleted_at.is_null())
            .select(property_values::entity_id);
        let heirs: Vec<HeirRow> = entities::table
            .filter(entities::db.eq(db))
            .filter(entities::id.eq_any(children))
            .filter(entities::inherit_rights.eq(true))
            .filter(entities::deleted_at.is_null())
            .select((
                entities::id,
                entities::parent_ids,
                entities::owners,
                entities::editors,
                entities::expanders,
                entities::viewers,
                entities::noaccess,
            ))
            .load(conn)
            .await?;
        let heirs: Vec<_> = heirs
            .into_iter()
            .filter(|heir| visited.insert(heir.0.clone()))
            .collect();
        if heirs.is_empty() {
            break;
        }
        let heir_ids: Vec<String> = heirs.iter().map(|heir| heir.0.clone()).collect();
        let own_rows: Vec<(String, String, Option<String>)> = property_values::table
            .filter(property_values::db.eq(db))
            .filter(property_values::entity_id.eq_any(&heir_ids))
            .filter(property_values::deleted_at.is_null())
            .filter(property_values::prop.eq_any(["_owner", "_editor", "_expander", "_viewer", "_noaccess"]))
            .select((
                property_values::entity_id,
                property_values::prop,
                property_values::reference,
            ))
            .load(conn)
            .await?;
        let mut own: HashMap<String, RightsLists> = HashMap::new();
        for (entity, prop, person) in own_rows {
            let Some(person) = person else { continue };
            let lists = own.entry(entity).or_default();
            let list = match prop.as_str() {
                "_owner" => &mut lists.owners,
                "_editor" => &mut lists.editors,
                "_expander" => &mut lists.expanders,
                "_viewer" => &mut lists.viewers,
                _ => &mut lists.noaccess,
            };
            list.insert(person);
        }
        let parent_ids: BTreeSet<&String> = heirs.iter().flat_map(|heir| heir.1.iter()).collect();
        let parents: HashMap<String, RightsLists> = entities::table
            .filter(entities::db.eq(db))
            .filter(entities::id.eq_any(parent_ids))
            .filter(entities::deleted_at.is_null())
            .select(EntityRow::as_select())
            .load(conn)
            .await?
            .into_iter()
            .map(|row| (row.id.clone(), row.lists()))
            .collect();
        let mut updates = Vec::new();
        let mut next = Vec::new();
        for (id, parent_ids, owners, editors, expanders, viewers, noaccess) in heirs {
            let inherited: Vec<RightsLists> = parent_ids.iter().filter_map(|p| parents.get(p).cloned()).collect();
            let lists = RightsLists::effective(&own.remove(&id).unwrap_or_default(), &inherited);
            let set = |items: Vec<String>| items.into_iter().collect::<BTreeSet<_>>();
            let before = RightsLists {
                owners: set(owners),
                editors: set(editors),
                expanders: set(expanders),
                viewers: set(viewers),
                noaccess: set(noaccess),
            };
            if before != lists {
                updates.push(serde_json::json!({
                    "id": id, "owners": lists.owners, "editors": lists.editors,
                    "expanders": lists.expanders, "viewers": lists.viewers, "noaccess": lists.noaccess,
                }));
                next.push(id);
            }
        }
        if !updates.is_empty() {
            let list = |key: &str| format!("ARRAY(SELECT jsonb_array_elements_text(d.value -> '{key}'))");
            diesel::sql_query(format!(
                "UPDATE entities e SET owners = {}, editors = {}, expanders = {}, viewers = {}, noaccess = {} \
                 FROM jsonb_array_elements($2) d WHERE e.db = $1 AND e.id = d.value ->> 'id'",
                list("owners"),
                list("editors"),
                list("expanders"),
                list("viewers"),
                list("noaccess"),
            ))
            .bind::<diesel::sql_types::Text, _>(db)
            .bind::<diesel::sql_types::Jsonb, _>(Json::Array(updates))
            .execute(conn)
            .await?;
        }
        changed = next;
    }
    Ok(())
}

/// What changed in one re-projection that others depend on.
struct Changes {
    /// Entities whose formulas read this one.
    dependents: Vec<String>,
    rights: bool,
    name: bool,
    types_to_reproject: Vec<String>,
}

/// Rebuilds one entity's projection, or makes the first of a new entity.
async fn project_one(
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
    let context = context_for(conn, types, db, &rows).await?;
    let mut projection = Projection::from_values(id, &rows, &context);
    let computed = formulas::evaluate(conn, db, id, &rows, &context.definitions).await?;
    formulas::apply(&mut projection.doc, computed);
    let lists = effective_rights(conn, db, &projection).await?;
    let array = |set: &BTreeSet<String>| set.iter().cloned().collect::<Vec<_>>();
    let columns = (
        (
            entities::doc.eq(&projection.doc),
            entities::name.eq(&projection.name),
            entities::type_id.eq(&projection.type_id),
            entities::parent_ids.eq(&projection.parent_ids),
            entities::sharing.eq(projection.sharing.as_str()),
            entities::inherit_rights.eq(projection.inherit_rights),
        ),
        (
            entities::owners.eq(array(&lists.owners)),
            entities::editors.eq(array(&lists.editors)),
            entities::expanders.eq(array(&lists.expanders)),
            entities::viewers.eq(array(&lists.viewers)),
            entities::noaccess.eq(array(&lists.noaccess)),
        ),
        (
            entities::public_props.eq(&projection.public_props),
            entities::domain_props.eq(&projection.domain_props),
            entities::search_private.eq(&projection.search_private),
            entities::search_domain.eq(&projection.search_domain),
            entities::search_public.eq(&projection.search_public),
        ),
    );
    match created {
        Some((created_at, created_by)) => {
            diesel::insert_into(entities::table)
                .values((
                    (
                        entities::db.eq(db),
                        entities::id.eq(id),
                        entities::created_at.eq(created_at),
                        entities::created_by.eq(created_by),
                    ),
                    columns,
                ))
                .execute(conn)
                .await?
        }
        None => {
            diesel::update(entities::table)
                .filter(entities::db.eq(db))
                .filter(entities::id.eq(id))
                .set(columns)
                .execute(conn)
                .await?
        }
    };
    let mut types_to_reproject = Vec::new();
    let doc_changed = previous.as_ref().is_none_or(|row| row.doc != projection.doc);
    if doc_changed && context.type_name.as_deref() == Some(PROPERTY_TYPE) {
        // a definition: its types' entities show and index values by it
        let mut parents = projection.parent_ids.clone();
        if let Some(row) = &previous {
            parents.extend(row.parent_ids.iter().cloned());
        }
        types_to_reproject.extend(parents);
    } else if previous.as_ref().is_some_and(|row| row.sharing() != projection.sharing) {
        // a type's sharing caps its definitions' (a no-op for other entities)
        types_to_reproject.push(id.to_owned());
    }
    let mut near = projection.parent_ids.clone();
    near.extend(
        rows.iter()
            .filter(|row| !row.prop.starts_with('_'))
            .filter_map(|row| row.reference.clone()),
    );
    // a new entity has no referrers: only what it names can depend on it
    let dependents = if doc_changed && !(is_new && near.is_empty()) {
        formulas::dependents(conn, db, id, near).await?
    } else {
        Vec::new()
    };
    Ok(Changes {
        dependents,
        // nothing inherits from a new entity yet
        rights: !is_new && previous.as_ref().map(EntityRow::lists) != Some(lists),
        name: previous.is_some_and(|row| row.name != projection.name),
        types_to_reproject,
    })
}

/// What the projection and validation need to know about one entity type.
#[derive(Debug, Default)]
pub struct TypeInfo {
    /// Its property definitions, by name.
    pub definitions: HashMap<String, PropertyDefinition>,
    /// Its own `_sharing` (None when the type does not exist).
    pub sharing: Option<Sharing>,
    pub name: Option<String>,
    /// The name of the type's own type: `entity` for an entity type.
    pub kind: Option<String>,
}

impl TypeInfo {
    pub fn is_entity_type(&self) -> bool {
        self.kind.as_deref() == Some(ENTITY_TYPE)
    }

    /// Whether writing an entity of this type may change what other entities'
    /// types say (a definition, or a type itself).
    pub fn describes_types(&self) -> bool {
        matches!(self.name.as_deref(), Some(PROPERTY_TYPE | ENTITY_TYPE))
    }
}

/// Type information learned by the writes of one transaction, so a batch of
/// writes to one type loads it once. Clear it after a write that may change a
/// type or a definition, and after a write that was rolled back.
#[derive(Default)]
pub struct TypeCache {
    types: HashMap<String, Arc<TypeInfo>>,
}

impl TypeCache {
    pub async fn get(&mut self, conn: &mut AsyncPgConnection, db: &str, type_id: &str) -> QueryResult<Arc<TypeInfo>> {
        if let Some(info) = self.types.get(type_id) {
            return Ok(info.clone());
        }
        let definitions = values::definitions_of_type(conn, db, type_id)
            .await?
            .into_iter()
            .filter_map(|(name, doc)| Some((name?, PropertyDefinition::from_doc(&doc))))
            .collect();
        let sharing = values::live_entity(conn, db, type_id, false)
            .await?
            .map(|row| row.sharing());
        let (name, kind) = values::names_and_types(conn, db, &[type_id.to_owned()])
            .await?
            .into_iter()
            .next()
            .map(|(_, name, kind)| (name, kind))
            .unwrap_or_default();
        let info = Arc::new(TypeInfo {
            definitions,
            sharing,
            name,
            kind,
        });
        self.types.insert(type_id.to_owned(), info.clone());
        Ok(info)
    }

    pub fn clear(&mut self) {
        self.types.clear();
    }
}

/// Loads the definitions, type sharing and referenced names an entity's projection needs.
pub async fn context_for(
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
    let names = if searchable_targets.is_empty() {
        HashMap::new()
    } else {
        values::names_and_types(conn, db, &searchable_targets)
            .await?
            .into_iter()
            .filter_map(|(id, name, _)| Some((id, name?)))
            .collect()
    };
    Ok(ProjectionContext {
        definitions: info.definitions.clone(),
        type_sharing: info.sharing,
        type_name: info.name.clone(),
        names,
    })
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
