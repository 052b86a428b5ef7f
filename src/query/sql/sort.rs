//! Sorting a page by `_id` or by values (rule 13), and the page window.

use std::collections::HashSet;

use super::filters::{column, shown, where_clause};
use super::matches::FromValues;
use super::statement::{Bind, Sql};
use super::tallies::WholeCount;
use crate::query::{Field, ListQuery, SortTarget};

/// The page's matches sorted by value, as narrow rows: `id`, the sort keys
/// (`k{index}`) and `matches`, the count of all matches (`whole`, when
/// given); from the value rows when the query has a `plan` for them
/// ([`FromValues::plan`]).
pub(super) fn ordered_matches(
    sql: &mut Sql,
    db: &str,
    person: Option<&str>,
    query: &ListQuery,
    referencing: &HashSet<String>,
    plan: Option<&FromValues<'_>>,
    whole: Option<&WholeCount>,
) {
    if let Some(plan) = plan.filter(|plan| plan.walks_in_order(query)) {
        // the page stops at its end; the count scans the matches on its own
        sql.push("SELECT m.*, ");
        match whole {
            Some(whole) => whole_count(sql, whole, db, person),
            None => plan.count(sql, db, person),
        }
        sql.push(" AS matches FROM (");
        plan.page_in_order(sql, db, person, query);
        sql.push(") m");
        return;
    }
    sql.push("SELECT m.*, ");
    match whole {
        Some(whole) => whole_count(sql, whole, db, person),
        None => _ = sql.push("count(*) OVER ()"),
    }
    sql.push(" AS matches FROM (");
    if let Some(plan) = plan {
        plan.matches(sql, db, person);
    } else {
        matches_from_entities(sql, db, person, query, referencing);
    }
    sql.push(" OFFSET 0) m ORDER BY ");
    order_by(sql, "m", query);
    sql.page_window(query);
}

/// `(SELECT ...)`: the count of a whole type's (or database's) matches.
fn whole_count(sql: &mut Sql, whole: &WholeCount, db: &str, person: Option<&str>) {
    sql.push("(");
    whole.push_into(sql, db, person);
    sql.push(")");
}

/// The matches with their sort keys, from the entity rows.
fn matches_from_entities(
    sql: &mut Sql,
    db: &str,
    person: Option<&str>,
    query: &ListQuery,
    referencing: &HashSet<String>,
) {
    sql.push("SELECT e.id");
    for (index, key) in query.sort.iter().enumerate() {
        if let SortTarget::Value { prop, field } = &key.target {
            sql.push(", ");
            sort_value(sql, person, prop, *field, key.descending);
            sql.push(&format!(" AS k{index}"));
        }
    }
    sql.push(" FROM entities e WHERE ");
    where_clause(sql, db, person, query, referencing);
}

/// The value an entity sorts by for one sort key. Multi-valued properties
/// sort by their smallest value ascending and their largest descending;
/// entities without the property (NULL) come last either way.
fn sort_value(sql: &mut Sql, person: Option<&str>, prop: &str, field: Field, descending: bool) {
    let aggregate = if descending { "max" } else { "min" };
    if matches!(field, Field::Date | Field::Datetime) {
        // Dates before year 1 do not order as their text does: they sort by
        // the typed columns of the value rows.
        sql.push(&format!("(SELECT {aggregate}(v.{}) ", column(field)));
        visible_values(sql, person, prop);
        sql.push(")");
    } else {
        sql.push("(CASE WHEN ");
        shown(sql, person, prop);
        sql.push(" THEN ");
        document_value(sql, prop, field, aggregate);
        sql.push(" END)");
    }
}

/// The sort keys over rows of `alias` (value keys as columns `k{index}`),
/// then `_id` ascending to make the order total.
pub(super) fn order_by(sql: &mut Sql, alias: &str, query: &ListQuery) {
    for (index, key) in query.sort.iter().enumerate() {
        let direction = if key.descending { "DESC" } else { "ASC" };
        match key.target {
            SortTarget::Id => sql.push(&format!("{alias}.id {direction}, ")),
            SortTarget::Value { .. } => sql.push(&format!("{alias}.k{index} {direction} NULLS LAST, ")),
        };
    }
    sql.push(&format!("{alias}.id ASC"));
}

/// The smallest (`aggregate` `min`) or largest (`max`) `field` of entity
/// `e`'s values of `prop`, read from its document in the scan of its row
/// rather than from the value rows. Numbers compare as numbers, everything
/// else as text (`false` before `true`). Only an entity with several values
/// pays for the subquery.
pub(super) fn document_value(sql: &mut Sql, prop: &str, field: Field, aggregate: &str) {
    let key = column(field);
    let cast = match field {
        Field::Number => "::double precision",
        Field::Filesize => "::bigint",
        _ => "",
    };
    sql.push("(CASE WHEN jsonb_array_length(e.doc -> ")
        .bind(Bind::Text(prop.to_owned()))
        .push(&format!(
            ") > 1 THEN (SELECT {aggregate}((x ->> '{key}'){cast}) FROM jsonb_array_elements(e.doc -> "
        ))
        .bind(Bind::Text(prop.to_owned()))
        .push(") x) ELSE (e.doc -> ")
        .bind(Bind::Text(prop.to_owned()))
        .push(&format!(" -> 0 ->> '{key}'){cast} END)"));
}

/// `FROM property_values v WHERE ...`: the live values of `prop` on entity `e`
/// that the caller's view of `e` shows.
fn visible_values(sql: &mut Sql, person: Option<&str>, prop: &str) {
    sql.push("FROM property_values v WHERE v.db = e.db AND v.entity_id = e.id AND v.deleted_at IS NULL AND v.prop = ")
        .bind(Bind::Text(prop.to_owned()))
        .push(" AND ");
    shown(sql, person, prop);
}
