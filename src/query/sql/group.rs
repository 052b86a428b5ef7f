//! Grouped lists (rule 14): one row per distinct combination of values.

use std::collections::HashSet;

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use super::ListResult;
use super::facts::PropertyFacts;
use super::filters::{column, shown, where_clause};
use super::sort::document_value;
use super::statement::{Bind, Sql};
use super::tallies::WholeCount;
use super::visibility::visible_value;
use crate::error::ApiError;
use crate::model::API_KEY_PROPERTY;
use crate::query::{Field, ListQuery};

#[derive(QueryableByName)]
struct GroupRow {
    #[diesel(sql_type = Text)]
    first: String,
    #[diesel(sql_type = BigInt)]
    count: i64,
}

/// Rule 14: one row per distinct combination of the grouped values (a
/// multi-valued property groups by its smallest value).
pub(super) async fn run_grouped(
    conn: &mut AsyncPgConnection,
    db: &str,
    person: Option<&str>,
    query: &ListQuery,
    facts: &PropertyFacts,
) -> Result<ListResult, ApiError> {
    let groups = group_statement(db, person, query, facts)
        .into_query()
        .load::<GroupRow>(conn)
        .await?
        .into_iter()
        .map(|group| (group.first, group.count))
        .collect();
    Ok(ListResult::Groups { groups })
}

/// The statement answering a grouped query: each group's first entity
/// (lowest `_id`) and size, in the order of the grouped values.
pub(super) fn group_statement(db: &str, person: Option<&str>, query: &ListQuery, facts: &PropertyFacts) -> Sql {
    match FromValues::plan(query, facts) {
        Some(plan) => plan.statement(db, person, query),
        None => from_documents(db, person, query, &facts.referencing),
    }
}

/// The groups read from the entity rows: each grouped property's smallest
/// value is read from the entity's projected document, in the scan of the
/// entity rows.
fn from_documents(db: &str, person: Option<&str>, query: &ListQuery, referencing: &HashSet<String>) -> Sql {
    let mut sql = Sql::default();
    sql.push("SELECT min(e.id) AS first, count(*) AS count");
    for (index, (prop, field)) in query.group.iter().enumerate() {
        sql.push(", CASE WHEN ");
        shown(&mut sql, person, prop);
        sql.push(" THEN ");
        document_value(&mut sql, prop, *field, "min");
        sql.push(&format!(" END AS k{index}"));
    }
    sql.push(" FROM entities e WHERE ");
    where_clause(&mut sql, db, person, query, referencing);
    let keys: Vec<String> = (0..query.group.len()).map(|index| format!("k{index}")).collect();
    sql.push(" GROUP BY ")
        .push(&keys.join(", "))
        .push(" ORDER BY ")
        .push(&keys.join(", "));
    sql
}

/// A group by one property of a whole type (or database), read from the
/// property's value rows and the entity tallies instead of every entity's
/// document: an index-only scan of the values the caller may see, each
/// entity keyed by its smallest (each value row its entity's key where no
/// entity holds several), or for a boolean no entity holds twice the
/// boolean tallies; the entities without such a value (counted as the
/// tallies' total less the keyed ones) form the last group.
struct FromValues<'a> {
    prop: &'a str,
    field: Field,
    total: WholeCount,
    single_valued: bool,
}

impl<'a> FromValues<'a> {
    /// The plan of `query`, if it groups a whole type's entities by one
    /// property's stored field (not a file's details, not API keys) as the
    /// documents show it: not computed by a formula (formula values live in
    /// the documents only), and for `string`, holding no reference (whose
    /// `string` is the referenced entity's name).
    fn plan(query: &'a ListQuery, facts: &PropertyFacts) -> Option<FromValues<'a>> {
        let [(prop, field)] = query.group.as_slice() else {
            return None;
        };
        let stored = matches!(
            field,
            Field::String | Field::Number | Field::Boolean | Field::Date | Field::Datetime | Field::Reference
        );
        let shown_otherwise =
            facts.computed.contains(prop) || (*field == Field::String && facts.referencing.contains(prop));
        if !stored || prop == API_KEY_PROPERTY || shown_otherwise {
            return None;
        }
        let total = WholeCount::of_matches(query)?;
        Some(FromValues {
            prop,
            field: *field,
            total,
            single_valued: facts.single_valued.contains(prop),
        })
    }

    fn statement(&self, db: &str, person: Option<&str>, query: &ListQuery) -> Sql {
        let value = format!("v.{}", column(self.field));
        let mut sql = Sql::default();
        sql.push("WITH ");
        if self.single_valued && self.field == Field::Boolean {
            self.groups_from_tallies(&mut sql, db, person);
        } else {
            self.groups_from_values(&mut sql, db, person);
        }
        sql.push(", total AS (");
        self.total.push_into(&mut sql, db, person);
        // The entities without a value form the last group; its first is
        // looked for only when there are some (`first IS NOT NULL` would
        // otherwise read every entity to find none).
        sql.push(
            "), unkeyed AS (SELECT ((SELECT count FROM total) - (SELECT coalesce(sum(count), 0) FROM groups))::bigint AS count) \
             SELECT first, count FROM (SELECT first, count, k FROM groups UNION ALL \
             SELECT CASE WHEN unkeyed.count > 0 THEN (SELECT e.id FROM entities e WHERE ",
        );
        where_clause(&mut sql, db, person, query, &HashSet::new());
        sql.push(
            " AND NOT EXISTS (SELECT 1 FROM property_values v WHERE v.db = e.db AND v.entity_id = e.id AND v.prop = ",
        )
        .bind(Bind::Text(self.prop.to_owned()))
        .push(&format!(" AND v.deleted_at IS NULL AND {value} IS NOT NULL AND "));
        shown(&mut sql, person, self.prop);
        sql.push(
            ") ORDER BY e.id LIMIT 1) END, unkeyed.count, NULL FROM unkeyed WHERE unkeyed.count > 0) g \
             WHERE first IS NOT NULL ORDER BY k",
        );
        sql
    }

    /// `groups AS (...)`: each value's first entity, count and value, from
    /// the caller's visible value rows, each entity keyed by its smallest
    /// value (each row its entity's key where no entity holds several).
    fn groups_from_values(&self, sql: &mut Sql, db: &str, person: Option<&str>) {
        let value = format!("v.{}", column(self.field));
        // the smallest of an entity's values (`false` before `true`)
        let key = match self.field {
            _ if self.single_valued => value.clone(),
            Field::Boolean => format!("bool_and({value})"),
            _ => format!("min({value})"),
        };
        sql.push(&format!(
            "keyed AS (SELECT v.entity_id AS id, {key} AS k FROM property_values v WHERE v.db = "
        ))
        .bind(Bind::Text(db.to_owned()))
        .push(" AND v.prop = ")
        .bind(Bind::Text(self.prop.to_owned()))
        .push(&format!(" AND v.deleted_at IS NULL AND {value} IS NOT NULL AND "));
        visible_value(sql, "v", db, person);
        self.of_the_types(sql, db, "v");
        if !self.single_valued {
            sql.push(" GROUP BY v.entity_id");
        }
        sql.push("), groups AS (SELECT min(id) AS first, count(*) AS count, k FROM keyed GROUP BY k)");
    }

    /// `groups AS (...)` for a boolean no entity holds twice: each value's
    /// count added up from the tallies the caller may see, and its first
    /// entity the first visible row of the value in the index's order.
    fn groups_from_tallies(&self, sql: &mut Sql, db: &str, person: Option<&str>) {
        sql.push("counted AS (SELECT t.value AS k, sum(t.count)::bigint AS count FROM boolean_tallies t WHERE t.db = ")
            .bind(Bind::Text(db.to_owned()))
            .push(" AND t.prop = ")
            .bind(Bind::Text(self.prop.to_owned()))
            .push(" AND ");
        visible_value(sql, "t", db, person);
        self.of_the_types(sql, db, "t");
        sql.push(
            " GROUP BY t.value HAVING sum(t.count) > 0), groups AS (SELECT (SELECT v.entity_id FROM property_values v \
             WHERE v.db = ",
        )
        .bind(Bind::Text(db.to_owned()))
        .push(" AND v.prop = ")
        .bind(Bind::Text(self.prop.to_owned()))
        .push(" AND v.deleted_at IS NULL AND v.boolean = c.k AND ");
        visible_value(sql, "v", db, person);
        for filter in self.total.types() {
            sql.push(" AND ");
            filter.test_each_row(sql, db, "v.type_id");
        }
        sql.push(" ORDER BY v.entity_id LIMIT 1) AS first, c.count, c.k FROM counted c)");
    }

    /// ` AND ...`: the rows of `alias` of the types the count is taken under.
    fn of_the_types(&self, sql: &mut Sql, db: &str, alias: &str) {
        for filter in self.total.types() {
            sql.push(" AND ");
            filter.test(sql, db, &format!("{alias}.type_id"));
        }
    }
}
