//! Entities as a caller may see them: the view their rights give them, and
//! references carrying what the caller may see of their targets. `access`
//! loads an entity or a value for a caller and answers 404 for what they
//! cannot see; the rule itself is `rights::Visibility`.

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
    let found = values::targets(conn, db, &targets).await?;
    name_references(docs, found, person);
    Ok(())
}

/// [`resolve_references`] with the targets already read: `found` holds the
/// live ones among (at least) those the documents reference.
pub fn name_references(docs: &mut [Json], found: Vec<Target>, person: Option<&str>) {
    // what each target shows the caller, judged once however often it is referenced
    let found: HashMap<String, (Target, bool, bool)> = found
        .into_iter()
        .map(|target| {
            let visibility = target.access.visibility();
            let (shows_name, shows_type) = (
                visibility.shows_to(person, "name"),
                visibility.view_level(person).is_some(),
            );
            (target.id.clone(), (target, shows_name, shows_type))
        })
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
                if let Some((target, shows_name, shows_type)) = found.get(target) {
                    let is_type = prop == "_type";
                    if let Some(name) = target.name.as_deref().filter(|_| is_type || *shows_name) {
                        value.insert("string".into(), Json::String(name.to_owned()));
                    }
                    if let Some(type_name) = target.type_name.as_deref().filter(|_| is_type || *shows_type) {
                        value.insert("entity_type".into(), Json::String(type_name.to_owned()));
                    }
                }
                value.insert("property_type".into(), Json::String(prop.clone()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn entity(sharing: &str) -> EntityRow {
        EntityRow {
            id: "e1".into(),
            type_id: Some("t1".into()),
            parent_ids: Vec::new(),
            name: Some("Dune".into()),
            sharing: sharing.into(),
            owners: strings(&["ann"]),
            editors: strings(&["ann"]),
            expanders: strings(&["ann"]),
            viewers: strings(&["ann"]),
            noaccess: strings(&["eve"]),
            doc: json!({
                "_id": "e1",
                "_type": [{"_id": "v1", "reference": "t1"}],
                "_owner": [{"_id": "v2", "reference": "ann"}],
                "name": [{"_id": "v3", "string": "Dune"}],
                "price": [{"_id": "v4", "number": 9}],
            }),
            public_props: strings(&["name"]),
            domain_props: strings(&["name", "price"]),
        }
    }

    #[test]
    fn each_caller_sees_the_view_their_rights_give_them() {
        let full = visible_doc(entity("public"), Some("ann")).unwrap();
        assert_eq!(full, entity("public").doc);
        let domain = visible_doc(entity("public"), Some("bob")).unwrap();
        let keys: Vec<&String> = domain.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["_id", "_type", "name", "price"]);
        let public = visible_doc(entity("public"), None).unwrap();
        let keys: Vec<&String> = public.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["_id", "_type", "name"]);
    }

    #[test]
    fn a_caller_who_sees_nothing_gets_nothing() {
        assert_eq!(visible_doc(entity("public"), Some("eve")), None);
        assert_eq!(visible_doc(entity("domain"), None), None);
        assert_eq!(visible_doc(entity("private"), Some("bob")), None);
    }
}
