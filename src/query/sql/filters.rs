//! The `WHERE` of a list query: the caller's access to the entity, the
//! search words and the property filters (rules 3 to 12), each value test a
//! bind parameter.

use std::collections::HashSet;

use super::conditions::value_test;
use super::search::search_words;
use super::statement::{Bind, Sql};
use super::visibility::visible_value;
use crate::model::{API_KEY_PROPERTY, TYPE_PROPERTY};
use crate::query::{Condition, Field, Filter, ListQuery, Operator, REFERENCES};
use crate::rights::ALWAYS_SHOWN;

/// The conditions every match meets: a live entity of `db` the caller may
/// read, holding the search words and passing the filters.
pub(super) fn where_clause(
    sql: &mut Sql,
    db: &str,
    person: Option<&str>,
    query: &ListQuery,
    referencing: &HashSet<String>,
) {
    sql.push("e.db = ")
        .bind(Bind::Text(db.to_owned()))
        .push(" AND e.deleted_at IS NULL AND ");
    match person {
        None => _ = sql.push("e.sharing = 'public'"),
        Some(person) => {
            sql.push("NOT (")
                .bind(Bind::Text(person.to_owned()))
                .push(" = ANY (e.noaccess)) AND (e.sharing <> 'private' OR ")
                .bind(Bind::Text(person.to_owned()))
                .push(" = ANY (e.viewers))");
        }
    }
    search_words(sql, person, &query.words);
    // Conditions on one property and value field hold for one and the same
    // value (a range is one index scan); negations stand alone.
    let mut groups: Vec<(&str, Field, Vec<Condition>)> = Vec::new();
    for filter in &query.filters {
        if filter.prop == API_KEY_PROPERTY {
            // Keys are hidden: nothing about them can be matched.
            sql.push(" AND FALSE");
            continue;
        }
        let (negated, positive) = match &filter.condition {
            Condition::Compare(Operator::Ne, operand) => (true, Condition::Compare(Operator::Eq, operand.clone())),
            Condition::Exists(false) => (true, Condition::Exists(true)),
            other => (false, other.clone()),
        };
        if negated {
            sql.push(" AND NOT ");
            let references = referencing.contains(&filter.prop);
            filter_clause(sql, db, person, &filter.prop, filter.field, &[positive], references);
        } else if let Some(group) = groups
            .iter_mut()
            .find(|(prop, field, _)| *prop == filter.prop && *field == filter.field)
        {
            group.2.push(positive);
        } else {
            groups.push((&filter.prop, filter.field, vec![positive]));
        }
    }
    for (prop, field, conditions) in groups {
        sql.push(" AND ");
        let references = referencing.contains(prop);
        filter_clause(sql, db, person, prop, field, &conditions, references);
    }
}

/// Whether the caller's view of entity `e` shows property `prop`.
pub(super) fn shown(sql: &mut Sql, person: Option<&str>, prop: &str) {
    if ALWAYS_SHOWN.contains(&prop) {
        sql.push("TRUE");
        return;
    }
    match person {
        None => _ = sql.bind(Bind::Text(prop.to_owned())).push(" = ANY (e.public_props)"),
        Some(person) => {
            sql.push("(")
                .bind(Bind::Text(prop.to_owned()))
                .push(" = ANY (e.domain_props) OR ")
                .bind(Bind::Text(person.to_owned()))
                .push(" = ANY (e.viewers))");
        }
    }
}

/// The column a field lives in (a fixed name, never user text).
pub(super) fn column(field: Field) -> &'static str {
    match field {
        Field::String => "string",
        Field::Number => "number",
        Field::Boolean => "boolean",
        Field::Date => "date",
        Field::Datetime => "datetime",
        Field::Reference => "reference",
        Field::Filesize => "filesize",
        Field::Filename => "filename",
        Field::Filetype => "filetype",
        Field::Language => "language",
        Field::Id => "id",
        Field::PropertyType => "prop",
    }
}

/// A filter: one of the entity's live values of the property, that the
/// caller may see, passes every condition. The values are found first,
/// through the (database, property, value) indexes, which also decide the
/// caller's view of each ([`visible_value`]).
fn filter_clause(
    sql: &mut Sql,
    db: &str,
    person: Option<&str>,
    prop: &str,
    field: Field,
    conditions: &[Condition],
    holds_references: bool,
) {
    if prop == TYPE_PROPERTY && matches!(field, Field::String | Field::Reference) {
        type_clause(sql, db, "e.type_id", field, conditions, TypeList::Joined);
        return;
    }
    sql.push("e.id IN (");
    let source = ValueFilter {
        prop,
        field,
        conditions: conditions.to_vec(),
        holds_references,
    };
    source.matching_values(sql, db, person, &[], false);
    sql.push(")");
}

/// The positive conditions on one property and field of a list query.
pub(super) struct ValueFilter<'a> {
    pub(super) prop: &'a str,
    pub(super) field: Field,
    pub(super) conditions: Vec<Condition>,
    /// Whether the property holds references somewhere in the database: a
    /// `string` filter then also matches a reference by its target's name.
    pub(super) holds_references: bool,
}

impl ValueFilter<'_> {
    /// `SELECT v.entity_id[, v.<field> AS k] FROM property_values v WHERE ...`:
    /// the live values of the property (for `_reference`: the reference
    /// values of every property not named with `_`) that pass every condition and that
    /// the caller may see, of entities whose type passes `types` (filters on
    /// `_type`); with `key`, `k` is the value's field (NULL for a reference
    /// matched by its target's name).
    pub(super) fn matching_values(
        &self,
        sql: &mut Sql,
        db: &str,
        person: Option<&str>,
        types: &[TypeFilter],
        key: bool,
    ) {
        let values = |sql: &mut Sql, column: &str| {
            sql.push("SELECT v.entity_id");
            if key {
                sql.push(&format!(", {column} AS k"));
            }
            sql.push(" FROM property_values v WHERE v.db = ")
                .bind(Bind::Text(db.to_owned()));
            if self.prop == REFERENCES {
                // as the partial index `property_values_referrers` spells it
                sql.push(" AND v.reference IS NOT NULL AND v.prop NOT LIKE '\\_%'");
            } else {
                sql.push(" AND v.prop = ").bind(Bind::Text(self.prop.to_owned()));
            }
            sql.push(" AND v.deleted_at IS NULL AND ");
            visible_value(sql, "v", db, person);
            for filter in types {
                sql.push(" AND ");
                // listed first, not joined: a walk of the value index in
                // order keeps its order and stops at the page's end
                filter.test_each_row(sql, db, "v.type_id");
            }
        };
        let tests = |sql: &mut Sql, column: &str| {
            for condition in &self.conditions {
                sql.push(" AND ");
                value_test(sql, column, condition);
            }
        };
        let column = format!("v.{}", column(self.field));
        values(sql, &column);
        tests(sql, &column);
        if self.field == Field::String && self.holds_references {
            // A reference's `string` is the referenced entity's name.
            sql.push(" UNION ALL ");
            values(sql, "NULL::text");
            sql.push(" AND v.reference IS NOT NULL AND v.reference IN (SELECT r.id FROM entities r WHERE r.db = ")
                .bind(Bind::Text(db.to_owned()))
                .push(" AND r.deleted_at IS NULL");
            // a name matches only as the caller's own view of the
            // referenced entity shows it (`_type` names: `type_clause`)
            name_shown(sql, person);
            tests(sql, "r.name");
            sql.push(")");
        }
    }
}

/// The conditions of a filter on `_type` (by reference or by name).
pub(super) struct TypeFilter {
    field: Field,
    conditions: Vec<Condition>,
}

impl TypeFilter {
    /// The type id in `type_id` passes the filter.
    pub(super) fn test(&self, sql: &mut Sql, db: &str, type_id: &str) {
        type_clause(sql, db, type_id, self.field, &self.conditions, TypeList::Joined);
    }

    /// As [`TypeFilter::test`], the named types listed once before the rows
    /// are read, so that a walk of an index in order can stop at its first
    /// row (a join with the types would read and sort every row first).
    pub(super) fn test_each_row(&self, sql: &mut Sql, db: &str, type_id: &str) {
        type_clause(sql, db, type_id, self.field, &self.conditions, TypeList::Listed);
    }
}

/// How a filter on type names reads the types it names.
#[derive(Clone, Copy, PartialEq)]
enum TypeList {
    /// `IN (SELECT ...)`: the planner may join them.
    Joined,
    /// `= ANY (ARRAY(SELECT ...))`: read once, then tested on each row.
    Listed,
}

/// A query's filters as positive conditions on values and on `_type`,
/// conditions on one property and field together; `None` when a filter is
/// negated (`ne`, `exists=false`) or names API keys.
pub(super) fn positive_filters<'a>(
    filters: &'a [Filter],
    referencing: &HashSet<String>,
) -> Option<(Vec<ValueFilter<'a>>, Vec<TypeFilter>)> {
    let mut values: Vec<ValueFilter<'a>> = Vec::new();
    let mut types: Vec<TypeFilter> = Vec::new();
    for filter in filters {
        let negated = matches!(
            filter.condition,
            Condition::Compare(Operator::Ne, _) | Condition::Exists(false)
        );
        if negated || filter.prop == API_KEY_PROPERTY {
            return None;
        }
        let condition = filter.condition.clone();
        if filter.prop == TYPE_PROPERTY && matches!(filter.field, Field::String | Field::Reference) {
            match types.iter_mut().find(|group| group.field == filter.field) {
                Some(group) => group.conditions.push(condition),
                None => types.push(TypeFilter {
                    field: filter.field,
                    conditions: vec![condition],
                }),
            }
            continue;
        }
        match values
            .iter_mut()
            .find(|group| group.prop == filter.prop && group.field == filter.field)
        {
            Some(group) => group.conditions.push(condition),
            None => values.push(ValueFilter {
                prop: &filter.prop,
                field: filter.field,
                conditions: vec![condition],
                holds_references: referencing.contains(&filter.prop),
            }),
        }
    }
    Some((values, types))
}

/// A filter on `_type` by reference or by the type's name (rule 15). Every
/// entity has exactly one `_type`, projected into its `type_id` column, so
/// the test reads that column (indexed with the database) instead of
/// collecting the entities of a type from the value rows: `_type.string=book`
/// is then a condition the planner can check on the other filters' few
/// matches rather than a list of every book. Value rows carry their entity's
/// type as well, so `type_id` is `e.type_id` or `v.type_id`.
fn type_clause(sql: &mut Sql, db: &str, type_id: &str, field: Field, conditions: &[Condition], list: TypeList) {
    sql.push(&format!("({type_id} IS NOT NULL"));
    if field == Field::Reference {
        for condition in conditions {
            sql.push(" AND ");
            value_test(sql, type_id, condition);
        }
    } else {
        // type names are schema: no view rule applies to them (rule 15)
        let opening = match list {
            TypeList::Joined => " IN (SELECT",
            TypeList::Listed => " = ANY (ARRAY(SELECT",
        };
        sql.push(&format!(" AND {type_id}{opening} r.id FROM entities r WHERE r.db = "))
            .bind(Bind::Text(db.to_owned()))
            .push(" AND r.deleted_at IS NULL");
        for condition in conditions {
            sql.push(" AND ");
            value_test(sql, "r.name", condition);
        }
        sql.push(if list == TypeList::Listed { "))" } else { ")" });
    }
    sql.push(")");
}

/// ` AND ...`: the caller's view of referenced entity `r` shows its name.
fn name_shown(sql: &mut Sql, person: Option<&str>) {
    match person {
        None => _ = sql.push(" AND r.sharing = 'public' AND 'name' = ANY (r.public_props)"),
        Some(person) => {
            sql.push(" AND NOT (")
                .bind(Bind::Text(person.to_owned()))
                .push(" = ANY (r.noaccess)) AND (")
                .bind(Bind::Text(person.to_owned()))
                .push(" = ANY (r.viewers) OR (r.sharing <> 'private' AND 'name' = ANY (r.domain_props)))");
        }
    }
}
