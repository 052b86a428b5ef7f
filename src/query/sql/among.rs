//! Which of some entities a list query matches, as its caller sees them:
//! the change feed's test of a batch of changed entities (the same `WHERE`
//! as a list, rights included).

use diesel_async::{AsyncPgConnection, RunQueryDsl};

use super::ENTITY_COLUMNS;
use super::facts::PropertyFacts;
use super::filters::where_clause;
use super::statement::{Bind, Sql};
use crate::db::values::EntityRow;
use crate::error::ApiError;
use crate::query::ListQuery;

/// The entities of `db` matching `query` (its filters and words; its page
/// and order are not read) that `person` may read: among `ids`, or with
/// `ids` `None` the first `limit` of them in `_id` order.
pub async fn matching(
    conn: &mut AsyncPgConnection,
    db: &str,
    person: Option<&str>,
    query: &ListQuery,
    ids: Option<&[String]>,
    limit: i64,
) -> Result<Vec<EntityRow>, ApiError> {
    let facts = PropertyFacts::of(conn, db, query).await?;
    let mut sql = Sql::default();
    sql.push("SELECT ").push(ENTITY_COLUMNS).push(" FROM entities e WHERE ");
    if let Some(ids) = ids {
        sql.push("e.id = ANY (")
            .bind(Bind::TextArray(ids.to_vec()))
            .push(") AND ");
    }
    where_clause(&mut sql, db, person, query, &facts.referencing);
    sql.push(" ORDER BY e.id LIMIT ").bind(Bind::Integer(limit));
    Ok(sql.into_query().load::<EntityRow>(conn).await?)
}
