//! Long pages streamed a chunk at a time.

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use super::facts::PropertyFacts;
use super::filters::where_clause;
use super::matches::FromValues;
use super::sort::{order_by, ordered_matches};
use super::statement::{Bind, Sql};
use super::{CountRow, ENTITY_COLUMNS, count_from_page, entities_by_id, page_counts_matches, page_statements};
use crate::db::values::EntityRow;
use crate::error::ApiError;
use crate::query::ListQuery;

/// Pages longer than this are read and answered a chunk at a time, each
/// chunk one short statement on a connection taken for it alone.
pub const CHUNK: i64 = 500;

/// Whether a query's answer is streamed chunk by chunk ([`Chunks`]) rather
/// than read whole.
pub fn is_streamed(query: &ListQuery) -> bool {
    query.group.is_empty() && query.limit > CHUNK
}

/// A page read a chunk at a time. In `_id` order each chunk continues after
/// the last id of the one before (keyset); sorted by a value, the page's ids
/// are sorted once (narrow rows, counted in the same statement) and the
/// entities read by id a chunk at a time. Memory holds one chunk of
/// entities, and for a value sort the page's ids.
pub struct Chunks {
    db: String,
    person: Option<String>,
    query: ListQuery,
    facts: PropertyFacts,
    /// The page's ids still to read, for a value sort.
    ids: Option<std::vec::IntoIter<String>>,
    /// The last id read, in `_id` order.
    after: Option<String>,
    /// Matches of the page read (or sorted) so far.
    read: usize,
    /// The count of all matches, when the sort counted them.
    counted: Option<i64>,
    done: bool,
}

#[derive(QueryableByName)]
struct SortedRow {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = BigInt)]
    matches: i64,
}

impl Chunks {
    /// Prepares the page of `query` (for a value sort, sorts its ids).
    pub async fn start(
        conn: &mut AsyncPgConnection,
        db: &str,
        person: Option<&str>,
        query: &ListQuery,
    ) -> Result<Chunks, ApiError> {
        let facts = PropertyFacts::of(conn, db, query).await?;
        let mut chunks = Chunks {
            db: db.to_owned(),
            person: person.map(str::to_owned),
            query: query.clone(),
            facts,
            ids: None,
            after: None,
            read: 0,
            counted: None,
            done: false,
        };
        if page_counts_matches(query) {
            let mut sorted = Sql::default();
            sorted.push("SELECT p.id, p.matches FROM (");
            let plan = FromValues::plan(query, &chunks.facts);
            ordered_matches(
                &mut sorted,
                db,
                person,
                query,
                &chunks.facts.referencing,
                plan.as_ref(),
                None,
            );
            sorted.push(") p ORDER BY ");
            order_by(&mut sorted, "p", query);
            let rows = sorted.into_query().load::<SortedRow>(conn).await?;
            chunks.counted = rows.as_slice().first().map(|row| row.matches);
            chunks.read = rows.len();
            let ids: Vec<String> = rows.into_iter().map(|row| row.id).collect();
            chunks.ids = Some(ids.into_iter());
        }
        Ok(chunks)
    }

    /// The next chunk of the page's entities, in order; `None` after the last.
    pub async fn next(&mut self, conn: &mut AsyncPgConnection) -> Result<Option<Vec<EntityRow>>, ApiError> {
        if self.done {
            return Ok(None);
        }
        if let Some(ids) = &mut self.ids {
            let chunk: Vec<String> = ids.by_ref().take(CHUNK as usize).collect();
            if chunk.is_empty() {
                self.done = true;
                return Ok(None);
            }
            let mut by_id = entities_by_id(conn, &self.db, &chunk).await?;
            return Ok(Some(chunk.iter().filter_map(|id| by_id.remove(id)).collect()));
        }
        let wanted = (self.query.limit - self.read as i64).min(CHUNK);
        if wanted <= 0 {
            self.done = true;
            return Ok(None);
        }
        let mut chunk = Sql::default();
        chunk
            .push("SELECT ")
            .push(ENTITY_COLUMNS)
            .push(" FROM entities e WHERE ");
        where_clause(
            &mut chunk,
            &self.db,
            self.person.as_deref(),
            &self.query,
            &self.facts.referencing,
        );
        if let Some(after) = &self.after {
            // the order is the first key's: every key is `_id`
            let descending = self.query.sort.as_slice().first().is_some_and(|key| key.descending);
            chunk
                .push(if descending { " AND e.id < " } else { " AND e.id > " })
                .bind(Bind::Text(after.clone()));
        }
        chunk.push(" ORDER BY ");
        order_by(&mut chunk, "e", &self.query);
        let skip = if self.after.is_none() { self.query.skip } else { 0 };
        chunk
            .push(" LIMIT ")
            .bind(Bind::Integer(wanted))
            .push(" OFFSET ")
            .bind(Bind::Integer(skip));
        let rows = chunk.into_query().load::<EntityRow>(conn).await?;
        self.read += rows.len();
        self.done = (rows.len() as i64) < wanted;
        self.after = rows.last().map(|row| row.id.clone());
        Ok(Some(rows))
    }

    /// The count of all matches, once the page has been read.
    pub async fn count(&self, conn: &mut AsyncPgConnection) -> Result<i64, ApiError> {
        if let Some(count) = self.counted.or_else(|| count_from_page(&self.query, self.read)) {
            return Ok(count);
        }
        let (_, count) = page_statements(&self.db, self.person.as_deref(), &self.query, &self.facts, None, None);
        Ok(count.into_query().get_result::<CountRow>(conn).await?.count)
    }
}
