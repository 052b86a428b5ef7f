//! Following a re-projection: what must be re-projected after it
//! (inheriting descendants, referrers, a type's entities) and the formulas to
//! queue and strip.

use std::collections::{BTreeSet, HashMap, HashSet};

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value as Json;

use super::bulk::{Before, reproject_plain};
use super::one::{Changes, project_one};
use super::types::TypeCache;
use crate::db::changes::record_rights_followed;
use crate::db::reprojection_queue::{self, BATCH, INLINE_MEMBERS};
use crate::db::schema::{entities, property_values};
use crate::db::values;
use crate::db::{formula_queue, formulas};
use crate::rights::RightsLists;

/// Re-projects what must follow the `changes` of entity `id`, and what must
/// follow those in turn; queues and strips formulas reading them.
pub(super) async fn follow(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    id: &str,
    changes: Changes,
    hops: i32,
) -> QueryResult<usize> {
    follow_all(conn, types, db, vec![(id.to_owned(), changes)], hops).await
}

/// As [`follow`], for the changes of several entities re-projected together:
/// their heirs and referrers are looked up at once.
pub(super) async fn follow_all(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    firsts: Vec<(String, Changes)>,
    hops: i32,
) -> QueryResult<usize> {
    let mut pending: Vec<String> = Vec::new();
    let mut done: HashSet<String> = firsts.iter().map(|(id, _)| id.clone()).collect();
    let mut queued = BTreeSet::new();
    // entities fewer may read: formulas reading them are stripped at once
    let mut readers_changed = Vec::new();
    let mut next = firsts;
    loop {
        if next.is_empty() {
            let Some(current) = pending.pop() else { break };
            if !done.insert(current.clone()) {
                continue; // a cycle of parents or references
            }
            let changes = project_one(conn, types, db, &current, None).await?;
            next.push((current, changes));
        }
        let changed = |pick: fn(&Changes) -> bool| -> Vec<String> {
            next.iter()
                .filter(|(_, changes)| pick(changes))
                .map(|(id, _)| id.clone())
                .collect()
        };
        let (rights_changed, names_changed) = (changed(|c| c.rights), changed(|c| c.name));
        if !rights_changed.is_empty() {
            let heirs = cascade_rights(conn, db, rights_changed).await?;
            // one re-projected with the others may inherit from one of them:
            // its readers changed again since
            let again: HashSet<&String> = heirs.iter().collect();
            done.retain(|id| !again.contains(id));
            // an heir's own search text and formulas depend on its readers,
            // its referrers' search text on who may read its name
            pending.extend(readers_dependent(conn, db, &heirs).await?);
            pending.extend(referrers(conn, db, &heirs).await?);
            readers_changed.extend(heirs);
        }
        pending.extend(referrers(conn, db, &names_changed).await?);
        for (current, changes) in std::mem::take(&mut next) {
            queued.extend(changes.dependents);
            if changes.narrowed {
                readers_changed.push(current);
            }
            if !changes.types_to_reproject.is_empty() {
                // what this transaction learned of those types is out of date
                types.clear();
            }
            for type_id in changes.types_to_reproject {
                let members = reprojection_queue::members_after(conn, db, &type_id, "", INLINE_MEMBERS + 1).await?;
                if members.len() <= INLINE_MEMBERS {
                    pending.extend(members);
                } else if !changes.types_narrowed {
                    reprojection_queue::enqueue(conn, db, &type_id).await?;
                } else {
                    // Fewer may now see some of what they show, which must hold
                    // at commit: re-projected now, in bulk where they read only
                    // their type, and what follows them as it follows any.
                    let mut after = String::new();
                    loop {
                        let batch = reprojection_queue::members_after(conn, db, &type_id, &after, BATCH).await?;
                        let Some(last) = batch.last() else { break };
                        after = last.clone();
                        let before = values::live_entities(conn, db, &batch).await?;
                        let (others, followers) = reproject_plain(conn, types, db, Before::Read(before)).await?;
                        pending.extend(others);
                        queued.extend(formulas::dependents(conn, db, &followers.read_changed, Vec::new()).await?);
                        pending.extend(referrers(conn, db, &followers.name_changed).await?);
                        readers_changed.extend(followers.narrowed);
                    }
                }
            }
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
pub async fn referrers(conn: &mut AsyncPgConnection, db: &str, ids: &[String]) -> QueryResult<Vec<String>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
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
    // the changed ones are not left out: one may inherit from another
    let mut visited: HashSet<String> = HashSet::new();
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
            .filter(property_values::prop.eq_any(crate::rights::RIGHTS_PROPERTIES))
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
        let parent_ids: Vec<String> = parent_ids.into_iter().cloned().collect();
        let parents: HashMap<String, RightsLists> = values::live_entities(conn, db, &parent_ids)
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
            // the change feed tells streams that may no longer read them
            record_rights_followed(conn, db, &next).await?;
        }
        heirs_changed.extend(next.iter().cloned());
        changed = next;
    }
    Ok(heirs_changed)
}
