//! Entities and values as JSON, as a caller may see them: credentials hidden,
//! dates in the service's formats, references carrying their target's name.

use std::collections::{BTreeSet, HashMap};

use diesel::QueryResult;
use diesel_async::AsyncPgConnection;
use serde_json::Value as Json;

use crate::db::values::{self, EntityRow, Target};
use crate::rights::ViewLevel;

pub mod access;
pub mod history;

/// The entity document as `person`'s view (`None`: anonymous) shows it;
/// `None` when they see nothing of it.
pub fn visible_doc(mut entity: EntityRow, person: Option<&str>) -> Option<Json> {
    let mut doc = std::mem::take(&mut entity.doc);
    let visibility = entity.visibility();
    let level = visibility.view_level(person)?;
    if level != ViewLevel::Full
        && let Some(object) = doc.as_object_mut()
    {
        object.retain(|prop, _| visibility.shows(level, prop));
    }
    Some(doc)
}

/// Adds `string` (the target's name), `entity_type` (the target's type name)
/// and `property_type` (the property name) to every reference value of the
/// given entity documents, as `person`'s own view of each target shows
/// them: nothing of a target the caller cannot read, no name its view hides.
/// An entity's `_type` always names its type: type names are schema, and
/// `_type.string` filters by them.
pub async fn resolve_references(
    conn: &mut AsyncPgConnection,
    db: &str,
    person: Option<&str>,
    docs: &mut [Json],
) -> QueryResult<()> {
    let targets: BTreeSet<String> = docs
        .iter()
        .filter_map(Json::as_object)
        .flat_map(|properties| properties.values())
        .filter_map(Json::as_array)
        .flatten()
        .filter_map(|value| value.get("reference").and_then(Json::as_str))
        .map(str::to_owned)
        .collect();
    if targets.is_empty() {
        return Ok(());
    }
    let targets: Vec<String> = targets.into_iter().collect();
    let found: HashMap<String, Target> = values::targets(conn, db, &targets)
        .await?
        .into_iter()
        .map(|target| (target.id.clone(), target))
        .collect();
    for doc in docs.iter_mut() {
        let Some(properties) = doc.as_object_mut() else {
            continue;
        };
        for (prop, list) in properties.iter_mut() {
            let Some(items) = list.as_array_mut() else { continue };
            for item in items {
                let Some(value) = item.as_object_mut() else { continue };
                let Some(target) = value.get("reference").and_then(Json::as_str) else {
                    continue;
                };
                if let Some(target) = found.get(target) {
                    let is_type = prop == "_type";
                    let visibility = target.access.visibility();
                    let name = if is_type || visibility.shows_to(person, "name") {
                        target.name.as_deref()
                    } else {
                        None
                    };
                    if let Some(name) = name {
                        value.insert("string".into(), Json::String(name.to_owned()));
                    }
                    if let Some(type_name) = &target.type_name
                        && (is_type || visibility.view_level(person).is_some())
                    {
                        value.insert("entity_type".into(), Json::String(type_name.clone()));
                    }
                }
                value.insert("property_type".into(), Json::String(prop.clone()));
            }
        }
    }
    Ok(())
}
