//! Grouped lists (rule 14): one row per distinct combination of values.

use std::collections::HashSet;

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use super::ListResult;
use super::filters::{shown, where_clause};
use super::sort::document_value;
use super::statement::Sql;
use crate::error::ApiError;
use crate::query::ListQuery;

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
    referencing: &HashSet<String>,
) -> Result<ListResult, ApiError> {
    let groups = group_statement(db, person, query, referencing)
        .into_query()
        .load::<GroupRow>(conn)
        .await?
        .into_iter()
        .map(|group| (group.first, group.count))
        .collect();
    Ok(ListResult::Groups { groups })
}

/// The groups: each one's first entity (lowest `_id`) and size. Each grouped
/// property's smallest value is read from the entity's projected document,
/// in the scan of the entity rows: no join with the value rows, whose
/// per-entity minimum over a whole database would be a large hash aggregate.
pub(super) fn group_statement(db: &str, person: Option<&str>, query: &ListQuery, referencing: &HashSet<String>) -> Sql {
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
