//! What a write replaces besides the values it overwrites by `_id`, and the
//! rule that an entity keeps an owner through every write and deletion.

use crate::db::values::ValueRecord;
use crate::error::ApiError;
use crate::model::stored::ValueRow;
use crate::rights::is_rights_property;

/// Properties an entity holds one value of: a new value replaces the live one
/// (soft-deleted, as an overwrite by `_id` is), so the latest always governs.
pub(super) const SINGLE_VALUED: [&str; 2] = ["_sharing", "_inheritrights"];

/// A person holds one right per entity: a new right value for a person
/// replaces the live rights values that name them.
pub(super) fn replaced_rights(live: &[ValueRow], rows: &[ValueRecord]) -> Vec<String> {
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
pub(super) fn replaced_single_values(live: &[ValueRow], rows: &[ValueRecord]) -> Vec<String> {
    live.iter()
        .filter(|row| SINGLE_VALUED.contains(&row.prop.as_str()))
        .filter(|row| rows.iter().any(|new| new.prop == row.prop))
        .map(|row| row.id.clone())
        .collect()
}

/// An entity keeps at least one `_owner`: refuses a change that removes the
/// live values `removed` and adds `added` when it removes an `_owner` value
/// and leaves none. A change that removes none is not this rule's to judge:
/// an entity whose owners are inherited only (a person made at a first
/// login, an imported child) is written by its callers' rights.
pub(super) fn keep_an_owner(live: &[ValueRow], removed: &[String], added: &[ValueRecord]) -> Result<(), ApiError> {
    let owners = || live.iter().filter(|row| row.prop == "_owner");
    if !owners().any(|row| removed.contains(&row.id)) {
        return Ok(());
    }
    let owners_left = owners().filter(|row| !removed.contains(&row.id)).count()
        + added.iter().filter(|row| row.prop == "_owner").count();
    if owners_left == 0 {
        return Err(ApiError::forbidden("An entity keeps at least one _owner"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new(id: &str, prop: &str, reference: Option<&str>) -> ValueRecord {
        ValueRecord {
            id: id.into(),
            prop: prop.into(),
            reference: reference.map(str::to_owned),
            ..ValueRecord::default()
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

    #[test]
    fn an_entity_keeps_at_least_one_owner() {
        let live = [live("1", "_owner", Some("ann")), live("2", "_owner", Some("bob"))];
        assert!(keep_an_owner(&live, &["1".into()], &[]).is_ok());
        let refused = keep_an_owner(&live, &["1".into(), "2".into()], &[]).unwrap_err();
        assert_eq!(
            (refused.status().as_u16(), refused.message.as_ref()),
            (403, "An entity keeps at least one _owner")
        );
        let successor = [new("n1", "_owner", Some("cy"))];
        assert!(keep_an_owner(&live, &["1".into(), "2".into()], &successor).is_ok());
    }

    #[test]
    fn an_entity_without_an_owner_of_its_own_is_not_refused_a_write_that_removes_no_owner() {
        let inherited_only = [live("1", "name", None), live("2", "_editor", Some("bob"))];
        assert!(keep_an_owner(&inherited_only, &["1".into()], &[new("n1", "name", None)]).is_ok());
        let replaced = [new("n2", "_viewer", Some("bob"))];
        assert!(keep_an_owner(&inherited_only, &["2".into()], &replaced).is_ok());
        assert!(keep_an_owner(&inherited_only, &[], &[]).is_ok());
        // a person's only owner value replaced by another right: refused
        let owned = [live("3", "_owner", Some("ann")), live("4", "name", None)];
        let replaced = [new("n3", "_editor", Some("ann"))];
        assert!(keep_an_owner(&owned, &["3".into()], &replaced).is_err());
        assert!(keep_an_owner(&owned, &["4".into()], &[]).is_ok());
    }
}
