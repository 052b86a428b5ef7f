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
pub mod shown;

/// The entity document as `person`'s view (`None`: anonymous) shows it;
/// `None` when they see nothing of it.
pub fn visible_doc(mut entity: EntityRow, person: Option<&str>) -> Option<Json> {
    let level = entity.view_level(person)?;
    let mut doc = std::mem::take(&mut entity.doc);
    if level != ViewLevel::Full
        && let Some(object) = doc.as_object_mut()
    {
        object.retain(|prop, _| entity.shows(level, prop));
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
    let names = TargetNames::new(found, person);
    for doc in docs.iter_mut() {
        let Some(properties) = doc.as_object_mut() else {
            continue;
        };
        for (prop, list) in properties.iter_mut() {
            names.name(prop, list);
        }
    }
}

/// What each referenced target shows a caller, judged once however often
/// it is referenced.
pub struct TargetNames {
    /// Each target with whether its name and its type show.
    found: HashMap<String, (Target, bool, bool)>,
}

impl TargetNames {
    /// The targets in `found` as `person` sees them.
    pub fn new(found: Vec<Target>, person: Option<&str>) -> TargetNames {
        let found = found
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
        TargetNames { found }
    }

    /// Names the reference values of property `prop`'s list of values.
    pub fn name(&self, prop: &str, list: &mut Json) {
        let Some(items) = list.as_array_mut() else { return };
        for item in items {
            let Some(value) = item.as_object_mut() else { continue };
            let Some(target) = value.get("reference").and_then(Json::as_str) else {
                continue;
            };
            for (field, text) in self.fields(prop, target).into_iter().flatten() {
                value.insert(field.into(), Json::String(text.to_owned()));
            }
        }
    }

    /// The fields, in order, that a value of property `prop` referencing
    /// `target` gains (each replacing a field of the same name): the
    /// target's name and its type's name where the caller sees them, and
    /// the property's name.
    pub fn fields<'a>(&'a self, prop: &'a str, target: &str) -> [Option<(&'static str, &'a str)>; 3] {
        let mut fields = [None, None, Some(("property_type", prop))];
        if let Some((target, shows_name, shows_type)) = self.found.get(target) {
            let is_type = prop == "_type";
            fields[0] = target
                .name
                .as_deref()
                .filter(|_| is_type || *shows_name)
                .map(|name| ("string", name));
            fields[1] = (target.type_name.as_deref())
                .filter(|_| is_type || *shows_type)
                .map(|type_name| ("entity_type", type_name));
        }
        fields
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
