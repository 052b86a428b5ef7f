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
use crate::db::values::{self, EntityRow};
use crate::db::{formula_queue, formulas};
use crate::model::definition::PropertyDefinition;
use crate::model::json::number_json;
use crate::model::stored::ValueRow;
use crate::model::{ENTITY_TYPE, PROPERTY_TYPE};
use crate::rights::{ALWAYS_SHOWN, Audience, RightsLists, Sharing, Visibility};

/// What the projection needs besides the entity's own values.
#[derive(Debug, Clone, Default)]
pub struct ProjectionContext {
    /// Definitions of the entity type's properties, by name.
    pub definitions: HashMap<String, PropertyDefinition>,
    /// The entity type's own `_sharing`: it caps every definition's.
    pub type_sharing: Option<Sharing>,
    /// The entity type's name (`property` marks a definition).
    pub type_name: Option<String>,
    /// Entities referenced by searchable properties: their names, and who
    /// may read those names.
    pub targets: HashMap<String, (String, Audience)>,
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
                items.push(Json::Object(row.stored_json()));
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
        projection.share_props(context);
        projection
    }

    /// How widely property `prop` may show: its definition's `_sharing`
    /// capped by the type's; `_type`, `_parent` and `_sharing` everywhere;
    /// a property without a definition only to viewers.
    fn prop_sharing(context: &ProjectionContext, prop: &str) -> Sharing {
        if ALWAYS_SHOWN.contains(&prop) {
            return Sharing::Public;
        }
        match context.definitions.get(prop) {
            Some(definition) => definition.sharing.min(context.type_sharing.unwrap_or(Sharing::Private)),
            None => Sharing::Private,
        }
    }

    /// The properties of the document the public and domain views show.
    pub fn share_props(&mut self, context: &ProjectionContext) {
        self.public_props.clear();
        self.domain_props.clear();
        let Some(doc) = self.doc.as_object() else { return };
        for prop in doc.keys().filter(|prop| !prop.starts_with('_')) {
            let sharing = Projection::prop_sharing(context, prop);
            if sharing >= Sharing::Domain {
                self.domain_props.push(prop.clone());
            }
            if sharing == Sharing::Public {
                self.public_props.push(prop.clone());
            }
        }
    }

    /// Who may read property `prop` of this entity, given its effective lists.
    pub fn audience(&self, context: &ProjectionContext, lists: &RightsLists, prop: &str) -> Audience {
        let sharing = Projection::prop_sharing(context, prop);
        Audience::of(
            self.sharing,
            lists,
            sharing == Sharing::Public,
            sharing >= Sharing::Domain,
        )
    }

    /// The search text of each view: the searchable values that view shows,
    /// and a referenced entity's name only where everyone reading that view
    /// may read the name (the formula rule, docs/formulas.md).
    pub fn index_search(&mut self, rows: &[ValueRow], context: &ProjectionContext, lists: &RightsLists) {
        let private = Audience {
            named: lists.viewers.clone(),
            ..Audience::default()
        };
        let domain = Audience::of(self.sharing, lists, false, true);
        let public = Audience {
            anonymous: true,
            ..Audience::default()
        };
        for row in rows {
            if !context.definitions.get(&row.prop).is_some_and(|d| d.search) {
                continue;
            }
            let (text, readers) = match &row.reference {
                Some(target) => match context.targets.get(target) {
                    Some((name, readers)) => (name.clone(), Some(readers)),
                    None => continue,
                },
                None => match search_text(row) {
                    Some(text) => (text, None),
                    None => continue,
                },
            };
            let readable = |view: &Audience| readers.is_none_or(|readers| view.within(readers));
            if readable(&private) {
                append_words(&mut self.search_private, &text);
            }
            if self.domain_props.contains(&row.prop) && readable(&domain) {
                append_words(&mut self.search_domain, &text);
            }
            if self.public_props.contains(&row.prop) && readable(&public) {
                append_words(&mut self.search_public, &text);
            }
        }
    }
}

/// The searchable text of one value other than a reference: strings,
/// numbers, dates and file names.
fn search_text(row: &ValueRow) -> Option<String> {
    if let Some(text) = &row.string {
        return Some(text.clone());
    }
    if let Some(number) = row.number {
        return Some(number_json(number).to_string());
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
/// descendants when its effective rights change, referrers when its name or
/// who may read it changes (their search text holds its name), and the
/// entities of a type when one of its property definitions or its own
/// sharing changes. Entities whose formulas read a changed entity are queued
/// (`formula_queue`); where who may read it changed, their formula values
/// are removed at once, so a narrowing never lags (see [`formulas::strip`]).
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

/// Brings up to date what depended on entity `id`, just soft-deleted (its
/// row read before as `previous`): inheriting children lose its rights,
/// referrers its name, a type's entities the definition or the type, and
/// formulas reading it their values.
pub async fn project_deleted(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    previous: &EntityRow,
) -> QueryResult<usize> {
    let kind = match &previous.type_id {
        Some(type_id) => types.get(conn, db, type_id).await?.name.clone(),
        None => None,
    };
    let types_to_reproject = match kind.as_deref() {
        Some(PROPERTY_TYPE) => previous.parent_ids.clone(),
        Some(ENTITY_TYPE) => vec![previous.id.clone()],
        _ => Vec::new(),
    };
    types.clear();
    let mut near = previous.parent_ids.clone();
    near.extend(references_in(&previous.doc));
    let changes = Changes {
        dependents: formulas::dependents(conn, db, std::slice::from_ref(&previous.id), near).await?,
        rights: true,
        name: true,
        narrowed: true,
        types_to_reproject,
    };
    follow(conn, types, db, &previous.id, changes, 0).await
}

/// The entities a document's own (not system) reference values point at.
fn references_in(doc: &Json) -> Vec<String> {
    let Some(properties) = doc.as_object() else {
        return Vec::new();
    };
    properties
        .iter()
        .filter(|(prop, _)| !prop.starts_with('_'))
        .filter_map(|(_, values)| values.as_array())
        .flatten()
        .filter_map(|value| value.get("reference").and_then(Json::as_str))
        .map(str::to_owned)
        .collect()
}

async fn project_from(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    id: &str,
    new_entity: Option<NewEntity>,
    hops: i32,
) -> QueryResult<usize> {
    let changes = project_one(conn, types, db, id, new_entity).await?;
    follow(conn, types, db, id, changes, hops).await
}

/// Re-projects what must follow the `changes` of entity `id`, and what must
/// follow those in turn; queues and strips formulas reading them.
async fn follow(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    id: &str,
    changes: Changes,
    hops: i32,
) -> QueryResult<usize> {
    let mut pending: Vec<String> = Vec::new();
    let mut done = HashSet::from([id.to_owned()]);
    let mut queued = BTreeSet::new();
    // entities fewer may read: formulas reading them are stripped at once
    let mut readers_changed = Vec::new();
    let mut next = Some((id.to_owned(), changes));
    loop {
        let (current, changes) = match next.take() {
            Some(first) => first,
            None => {
                let Some(current) = pending.pop() else { break };
                if !done.insert(current.clone()) {
                    continue; // a cycle of parents or references
                }
                let changes = project_one(conn, types, db, &current, None).await?;
                (current, changes)
            }
        };
        if changes.rights {
            let heirs = cascade_rights(conn, db, vec![current.clone()]).await?;
            // an heir's own search text and formulas depend on its readers,
            // its referrers' search text on who may read its name
            pending.extend(readers_dependent(conn, db, &heirs).await?);
            pending.extend(referrers(conn, db, &heirs).await?);
            readers_changed.extend(heirs);
        }
        queued.extend(changes.dependents);
        if changes.narrowed {
            readers_changed.push(current.clone());
        }
        if changes.name {
            pending.extend(referrers(conn, db, std::slice::from_ref(&current)).await?);
        }
        for type_id in changes.types_to_reproject {
            let members: Vec<String> = entities::table
                .filter(entities::db.eq(db))
                .filter(entities::type_id.eq(&type_id))
                .filter(entities::deleted_at.is_null())
                .select(entities::id)
                .load(conn)
                .await?;
            pending.extend(members);
        }
        pending.retain(|entity| !done.contains(entity));
    }
    if !readers_changed.is_empty() {
        queued.extend(formulas::strip(conn, db, readers_changed).await?);
    }
    let queued: Vec<String> = queued.into_iter().collect();
    formula_queue::enqueue(conn, db, &queued, hops + 1).await?;
    Ok(queued.len())
}

/// Live entities pointing at any of `ids` through their own (not system)
/// reference properties: their search text may hold those entities' names.
async fn referrers(conn: &mut AsyncPgConnection, db: &str, ids: &[String]) -> QueryResult<Vec<String>> {
    property_values::table
        .filter(property_values::db.eq(db))
        .filter(property_values::reference.eq_any(ids))
        .filter(property_values::deleted_at.is_null())
        .filter(property_values::prop.not_like("\\_%"))
        .select(property_values::entity_id)
        .distinct()
        .load(conn)
        .await
}

/// Those of `ids` whose projection depends on who may read them: they hold
/// references (whose names their search text may carry) or their type
/// defines formulas.
async fn readers_dependent(conn: &mut AsyncPgConnection, db: &str, ids: &[String]) -> QueryResult<Vec<String>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut found: Vec<String> = property_values::table
        .filter(property_values::db.eq(db))
        .filter(property_values::entity_id.eq_any(ids))
        .filter(property_values::deleted_at.is_null())
        .filter(property_values::reference.is_not_null())
        .filter(property_values::prop.not_like("\\_%"))
        .select(property_values::entity_id)
        .distinct()
        .load(conn)
        .await?;
    found.extend(formulas::with_formulas(conn, db, ids).await?);
    Ok(found)
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
/// columns depend on a parent, so nothing else is rebuilt here. Answers the
/// descendants whose lists changed.
async fn cascade_rights(conn: &mut AsyncPgConnection, db: &str, mut changed: Vec<String>) -> QueryResult<Vec<String>> {
    let mut visited: HashSet<String> = changed.iter().cloned().collect();
    let mut heirs_changed = Vec::new();
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
        heirs_changed.extend(next.iter().cloned());
        changed = next;
    }
    Ok(heirs_changed)
}

/// What changed in one re-projection that others depend on.
struct Changes {
    /// Entities whose formulas read this one.
    dependents: Vec<String>,
    /// Its effective rights lists.
    rights: bool,
    /// Its name, or who may read it.
    name: bool,
    /// Fewer may read it, or some of its properties.
    narrowed: bool,
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
    let (projection, lists) = rebuild(conn, types, db, id, &rows).await?;
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
    let is_definition = match &projection.type_id {
        Some(type_id) => types.get(conn, db, type_id).await?.name.as_deref() == Some(PROPERTY_TYPE),
        None => false,
    };
    if doc_changed && is_definition {
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
    let rights = previous.as_ref().map(EntityRow::lists).as_ref() != Some(&lists);
    let name = previous.as_ref().is_some_and(|row| {
        let now_visible = Visibility {
            sharing: projection.sharing,
            lists: lists.clone(),
            public_props: &projection.public_props,
            domain_props: &projection.domain_props,
        };
        row.name != projection.name || row.visibility().audience("name") != now_visible.audience("name")
    });
    let narrowed = previous.as_ref().is_some_and(|row| narrows(row, &projection, &lists));
    // a new entity has no referrers: only what it names can depend on it
    let dependents = if doc_changed && !(is_new && near.is_empty()) {
        formulas::dependents(conn, db, &[id.to_owned()], near).await?
    } else {
        Vec::new()
    };
    Ok(Changes {
        dependents,
        // nothing inherits from a new entity yet
        rights: !is_new && rights,
        name,
        narrowed,
        types_to_reproject,
    })
}

/// Whether the new projection lets fewer read the entity, or some of its
/// properties, than its stored row did.
fn narrows(before: &EntityRow, after: &Projection, lists: &RightsLists) -> bool {
    let kept = |old: &[String], new: &[String]| old.iter().all(|item| new.contains(item));
    after.sharing < before.sharing()
        || !before.viewers.iter().all(|person| lists.viewers.contains(person))
        || !lists.noaccess.iter().all(|person| before.noaccess.contains(person))
        || !kept(&before.public_props, &after.public_props)
        || !kept(&before.domain_props, &after.domain_props)
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
                let readers = target.visibility().audience("name");
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
    formulas::apply(&mut projection.doc, computed);
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
