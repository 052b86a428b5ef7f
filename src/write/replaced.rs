//! What a write replaces besides the values it overwrites by `_id`.

use crate::db::values::{NewValue, ValueRow};
use crate::rights::is_rights_property;

/// Properties an entity holds one value of: a new value replaces the live one
/// (soft-deleted, as an overwrite by `_id` is), so the latest always governs.
pub(super) const SINGLE_VALUED: [&str; 2] = ["_sharing", "_inheritrights"];

/// A person holds one right per entity: a new right value for a person
/// replaces the live rights values that name them.
pub(super) fn replaced_rights(live: &[ValueRow], rows: &[NewValue]) -> Vec<String> {
    let granted: Vec<&str> = rows
        .iter()
        .filter(|row| is_rights_property(&row.prop))
        .filter_map(|row| row.reference.as_deref())
        .collect();
    live.iter()
        .filter(|row| is_rights_property(&row.prop))
        .filter(|row| row.reference.as_deref().is_some_and(|person| granted.contains(&person)))
        .map(|row| row.id.clone())
        .collect()
}

/// The live values that new single-valued values replace.
pub(super) fn replaced_single_values(live: &[ValueRow], rows: &[NewValue]) -> Vec<String> {
    live.iter()
        .filter(|row| SINGLE_VALUED.contains(&row.prop.as_str()))
        .filter(|row| rows.iter().any(|new| new.prop == row.prop))
        .map(|row| row.id.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new(id: &str, prop: &str, reference: Option<&str>) -> NewValue {
        NewValue {
            id: id.into(),
            prop: prop.into(),
            reference: reference.map(str::to_owned),
            ..NewValue::default()
        }
    }

    fn live(id: &str, prop: &str, reference: Option<&str>) -> ValueRow {
        ValueRow::from(&new(id, prop, reference))
    }

    #[test]
    fn a_new_right_replaces_every_live_right_of_that_person() {
        let live = [
            live("1", "_owner", Some("ann")),
            live("2", "_viewer", Some("bob")),
            live("3", "_noaccess", Some("bob")),
            live("4", "author", Some("bob")),
            live("5", "_editor", Some("cy")),
        ];
        let rows = [new("n1", "_editor", Some("bob")), new("n2", "author", Some("cy"))];
        assert_eq!(replaced_rights(&live, &rows), ["2", "3"]);
        assert!(replaced_rights(&live, &[new("n3", "title", None)]).is_empty());
    }

    #[test]
    fn a_new_single_value_replaces_the_live_one() {
        let live = [
            live("1", "_sharing", None),
            live("2", "_inheritrights", None),
            live("3", "title", None),
        ];
        assert_eq!(replaced_single_values(&live, &[new("n1", "_sharing", None)]), ["1"]);
        assert!(replaced_single_values(&live, &[new("n2", "title", None)]).is_empty());
    }
}
