//! SQL for list queries. Every user-supplied text (property names included)
//! travels as a bind parameter; the SQL text holds only fixed fragments.
//! A page is read whole ([`run`]) or, past [`CHUNK`] entities, streamed
//! ([`Chunks`]); `filters` builds the `WHERE`, `sort` the order, `group` the
//! grouped lists. Queries of positive value filters are answered from the
//! value rows alone (`matches`: they carry what decides the caller's view,
//! `visibility`, against the audiences resolved for the caller, `readable`), counts of whole types from the tallies (`tallies`), and a
//! whole type's page sorted by a number from where the number tallies say
//! it starts (`sorted_by_number`).

mod among;
mod chunks;
mod conditions;
mod facts;
mod filters;
mod group;
mod matches;
mod readable;
mod search;
mod sort;
mod sorted_by_number;
mod statement;
mod tallies;
mod targets;
mod visibility;

use std::collections::HashMap;
use std::sync::Arc;

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Nullable, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

pub use among::matching;
pub use chunks::{CHUNK, Chunks, is_streamed};
use facts::PropertyFacts;
use filters::where_clause;
use group::{group_statement, run_grouped};
use matches::FromValues;
use readable::Readable;
use sort::{order_by, ordered_matches};
use sorted_by_number::NumberSortedPage;
use statement::{Bind, Sql};
use tallies::WholeCount;

use super::{ListQuery, SortTarget};
use crate::db::references::Target;
use crate::db::values::{self, EntityRow, RawDoc};
use crate::error::ApiError;

#[derive(QueryableByName)]
struct CountRow {
    #[diesel(sql_type = BigInt)]
    count: i64,
}

/// A row of a page, with the count of all matches when the page statement
/// counts them itself (see [`page_counts_matches`]).
#[derive(QueryableByName)]
struct PageRow {
    #[diesel(embed)]
    entity: EntityRow<RawDoc>,
    #[diesel(sql_type = Nullable<BigInt>)]
    matches: Option<i64>,
}

/// The columns of [`EntityRow`], read from alias `e`.
const ENTITY_COLUMNS: &str = "e.id, e.type_id, e.parent_ids, e.name, e.sharing, e.owners, e.editors, e.expanders, \
     e.viewers, e.noaccess, e.doc, e.public_props, e.domain_props";

/// What a list query found.
pub enum ListResult {
    /// One page of matching entities, the number of all matches, and the
    /// live entities the page's documents reference.
    Page {
        entities: Vec<EntityRow<RawDoc>>,
        count: i64,
        targets: Vec<Target>,
    },
    /// One row per group: the id of its first entity (lowest `_id`) and its
    /// size; the entities are read a chunk at a time ([`entities_by_id`]).
    Groups { groups: Vec<(String, i64)> },
}

/// Runs a list query for a caller (`person` in this database, or anonymous).
pub async fn run(
    conn: &mut AsyncPgConnection,
    db: &str,
    person: Option<&str>,
    query: &ListQuery,
) -> Result<ListResult, ApiError> {
    if !query.group.is_empty() {
        let facts = PropertyFacts::of(conn, db, query).await?;
        return run_grouped(conn, db, person, query, &facts).await;
    }
    // Built on the facts this process last saw of its properties and on the
    // audiences it last resolved for the caller, both checked in the page's
    // own statement; read first when unknown or changed since.
    let mut last_seen = PropertyFacts::last_seen(db, query);
    let mut resolved = Readable::last_seen(db, person);
    let (rows, targets, count) = loop {
        let checked = last_seen.is_some();
        let facts = match last_seen.take() {
            Some(facts) => facts,
            None => PropertyFacts::of(conn, db, query).await?,
        };
        let readable = match resolved.take() {
            Some(readable) => readable,
            None => Readable::resolve(conn, db, person).await?,
        };
        let (page, count) = statements(conn, db, person, query, &facts, readable.clone()).await?;
        let rows = targets::with_targets(page, db, checked.then_some(&facts), readable.as_deref())
            .into_query()
            .load(conn)
            .await?;
        if let Some(split) = targets::split(rows) {
            if let Some(generation) = split.held_at.filter(|_| checked) {
                facts.held_at(db, generation);
            }
            break (split.rows, split.targets, count);
        }
    };
    let counted = rows.as_slice().first().and_then(|row| row.matches);
    let entities: Vec<EntityRow<RawDoc>> = rows.into_iter().map(|row| row.entity).collect();
    let count = match counted.or_else(|| count_from_page(query, entities.len())) {
        Some(count) => count,
        None => count.into_query().get_result::<CountRow>(conn).await?.count,
    };
    Ok(ListResult::Page {
        entities,
        count,
        targets,
    })
}

/// The plan of every statement a list query runs, as `EXPLAIN (ANALYZE,
/// BUFFERS)` reports it (for the query benchmark).
pub async fn explain(
    conn: &mut AsyncPgConnection,
    db: &str,
    person: Option<&str>,
    query: &ListQuery,
) -> Result<Vec<String>, ApiError> {
    #[derive(QueryableByName)]
    struct PlanLine {
        #[diesel(sql_type = Text, column_name = "QUERY PLAN")]
        line: String,
    }
    let facts = PropertyFacts::of(conn, db, query).await?;
    let statements = if query.group.is_empty() {
        // where a page sorted by a number starts, read before it
        let start = NumberSortedPage::plan(query, &facts).map(|sorted| sorted.start_statement(db, person));
        let readable = Readable::resolve(conn, db, person).await?;
        let (page, count) = statements(conn, db, person, query, &facts, readable).await?;
        let count = (!page_counts_matches(query)).then_some(count);
        start.into_iter().chain([page]).chain(count).collect()
    } else {
        vec![group_statement(db, person, query, &facts)]
    };
    let mut plans = Vec::new();
    for mut statement in statements {
        let mut plan = statement.text.clone();
        statement.text.insert_str(0, "EXPLAIN (ANALYZE, BUFFERS) ");
        for line in statement.into_query().load::<PlanLine>(conn).await? {
            plan.push('\n');
            plan.push_str(&line.line);
        }
        plans.push(plan);
    }
    Ok(plans)
}

/// The count of all matches when the page itself shows it: a page that is
/// not full and is not past the last match ends with the last match.
fn count_from_page(query: &ListQuery, found: usize) -> Option<i64> {
    let found = i64::try_from(found).ok()?;
    (found < query.limit && (found > 0 || query.skip == 0)).then_some(query.skip + found)
}

/// Whether the page statement counts all matches itself: a page sorted by a
/// value reads every match to sort them anyway, and search words are found
/// by trigram index scans that collect every match before the first row, so
/// counting them there costs little more than a second statement repeating
/// those scans; a page in `_id` order may otherwise stop after its last row.
fn page_counts_matches(query: &ListQuery) -> bool {
    !query.words.is_empty()
        || query
            .sort
            .iter()
            .any(|key| matches!(key.target, SortTarget::Value { .. }))
}

/// The page and count statements of `query` ([`page_statements`]); a whole
/// type's page sorted by a number starts where the tallies say
/// ([`NumberSortedPage`]).
async fn statements(
    conn: &mut AsyncPgConnection,
    db: &str,
    person: Option<&str>,
    query: &ListQuery,
    facts: &PropertyFacts,
    readable: Option<Arc<Readable>>,
) -> Result<(Sql, Sql), ApiError> {
    if let Some(sorted) = NumberSortedPage::plan(query, facts)
        && let Some(started) = sorted.started(conn, db, person).await?
    {
        return Ok(page_statements(
            db,
            person,
            &started,
            facts,
            Some(sorted.whole()),
            readable,
        ));
    }
    Ok(page_statements(db, person, query, facts, None, readable))
}

/// One page of matches, and the count of all matches (needed unless the page
/// counted them or shows the count itself, see [`count_from_page`]); that
/// count is `whole` when given, for a query that reads its page with more
/// filters than its matches have (a [`NumberSortedPage`]). The page binds the
/// audiences `readable` when given, and must then check that they still hold
/// (as [`targets::with_targets`] does); the count, read in a later snapshot,
/// finds them itself.
fn page_statements(
    db: &str,
    person: Option<&str>,
    query: &ListQuery,
    facts: &PropertyFacts,
    whole: Option<&WholeCount>,
    readable: Option<Arc<Readable>>,
) -> (Sql, Sql) {
    let referencing = &facts.referencing;
    let plan = FromValues::plan(query, facts);
    let statement = || match plan {
        Some(_) => Sql::planned_for_any_values(),
        None => Sql::default(),
    };
    let mut page = statement().with_readable(readable);
    page.push("SELECT ").push(ENTITY_COLUMNS);
    if page_counts_matches(query) {
        // Sort keys and the count come from narrow rows (id and keys), and
        // only the page's own rows are read whole: carrying every match's
        // document through the count and the sort spills to disk. OFFSET 0
        // keeps the keys computed below the count.
        page.push(", p.matches FROM (");
        ordered_matches(&mut page, db, person, query, referencing, plan.as_ref(), whole);
        page.push(") p JOIN entities e ON e.db = ")
            .bind(Bind::Text(db.to_owned()))
            .push(" AND e.id = p.id ORDER BY ");
        order_by(&mut page, "p", query);
    } else if let Some(plan) = &plan {
        // the page's ids first: only the rows shown are read
        page.push(", NULL::bigint AS matches FROM (SELECT m.id FROM (");
        plan.matches(&mut page, db, person);
        page.push(") m ORDER BY ");
        order_by(&mut page, "m", query);
        page.page_window(query);
        page.push(") p JOIN entities e ON e.db = ")
            .bind(Bind::Text(db.to_owned()))
            .push(" AND e.id = p.id ORDER BY ");
        order_by(&mut page, "e", query);
    } else {
        page.push(", NULL::bigint AS matches FROM entities e WHERE ");
        where_clause(&mut page, db, person, query, referencing);
        page.push(" ORDER BY ");
        order_by(&mut page, "e", query);
        page.page_window(query);
    }

    let count = match (whole.or(WholeCount::plan(query).as_ref()), &plan) {
        (Some(whole), _) => whole.statement(db, person),
        (None, Some(plan)) => {
            let mut count = statement();
            count.push("SELECT ");
            plan.count(&mut count, db, person);
            count.push(" AS count");
            count
        }
        (None, None) => {
            let mut count = Sql::default();
            count.push("SELECT count(*) AS count FROM entities e WHERE ");
            where_clause(&mut count, db, person, query, referencing);
            count
        }
    };
    (page, count)
}

/// The live entities among `ids` (at most a chunk of them), by id.
pub async fn entities_by_id(
    conn: &mut AsyncPgConnection,
    db: &str,
    ids: &[String],
) -> Result<HashMap<String, EntityRow>, ApiError> {
    Ok(values::live_entities(conn, db, ids)
        .await?
        .into_iter()
        .map(|row| (row.id.clone(), row))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(limit: i64, skip: i64) -> ListQuery {
        let params = [
            ("limit".to_owned(), limit.to_string()),
            ("skip".to_owned(), skip.to_string()),
        ];
        ListQuery::parse(&params).unwrap()
    }

    #[test]
    fn a_page_that_is_not_full_gives_the_count() {
        assert_eq!(count_from_page(&query(20, 0), 0), Some(0));
        assert_eq!(count_from_page(&query(20, 0), 7), Some(7));
        assert_eq!(count_from_page(&query(20, 40), 7), Some(47));
    }

    #[test]
    fn a_search_or_a_sort_by_value_counts_in_the_page_statement() {
        let parse = |query: &str| {
            let params: Vec<(String, String)> = serde_urlencoded::from_str(query).unwrap();
            ListQuery::parse(&params).unwrap()
        };
        assert!(page_counts_matches(&parse("q=dune")));
        assert!(page_counts_matches(&parse("sort=-price.number")));
        assert!(!page_counts_matches(&parse("title.string=Dune&sort=-_id")));
    }

    #[test]
    fn a_full_page_or_one_past_the_end_needs_counting() {
        assert_eq!(count_from_page(&query(20, 0), 20), None);
        assert_eq!(count_from_page(&query(20, 40), 0), None);
    }
}
