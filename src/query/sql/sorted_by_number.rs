//! A page of a whole type (or database) sorted by a number property no
//! entity holds twice (`sort=-price.number&skip=500000`). Sorting every
//! entity by the value in its document read and sorted a million rows for
//! any page (1.9 s); the number tallies say instead in which bucket the page
//! starts and how many values the caller sees before that bucket, so the
//! page walks the value index in order from that bucket's start and skips
//! only the values of the bucket itself before the page.

use diesel::QueryableByName;
use diesel::sql_types::BigInt;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use super::facts::PropertyFacts;
use super::statement::{Bind, Sql};
use super::tallies::{WholeCount, bucket_start};
use super::visibility::visible_value;
use crate::error::ApiError;
use crate::query::{Condition, Field, Filter, ListQuery, Operand, Operator, SortTarget};

/// A page whose start the tallies can find.
pub(super) struct NumberSortedPage<'a> {
    query: &'a ListQuery,
    prop: &'a str,
    descending: bool,
    whole: WholeCount,
}

/// Where the page starts: the bucket of its first value, how many values
/// the caller sees in the buckets before it (in the sort's order), and in
/// all buckets.
#[derive(QueryableByName)]
struct Start {
    #[diesel(sql_type = BigInt)]
    bucket: i64,
    #[diesel(sql_type = BigInt)]
    before: i64,
    #[diesel(sql_type = BigInt)]
    total: i64,
}

impl<'a> NumberSortedPage<'a> {
    /// The page of `query`, if it is one: no filter but positive ones on
    /// `_type`, no search words or group, and one sort key, a number
    /// property no entity holds twice.
    pub(super) fn plan(query: &'a ListQuery, facts: &PropertyFacts) -> Option<NumberSortedPage<'a>> {
        let whole = WholeCount::plan(query)?;
        let [key] = query.sort.as_slice() else {
            return None;
        };
        let SortTarget::Value {
            prop,
            field: Field::Number,
        } = &key.target
        else {
            return None;
        };
        facts.single_valued.contains(prop).then_some(NumberSortedPage {
            query,
            prop,
            descending: key.descending,
            whole,
        })
    }

    /// The count of all matches: the whole type's (or database's), those
    /// without a value the caller sees included.
    pub(super) fn whole(&self) -> &WholeCount {
        &self.whole
    }

    /// The query the page is read with: the sorted property's values from
    /// the start of the page's bucket, less those before it skipped. `None`
    /// when the page reaches past the values the caller sees, into the
    /// entities without one (sorted last, by `_id`).
    pub(super) async fn started(
        &self,
        conn: &mut AsyncPgConnection,
        db: &str,
        person: Option<&str>,
    ) -> Result<Option<ListQuery>, ApiError> {
        let sql = self.start_statement(db, person);
        let start = sql.into_query().load::<Start>(conn).await?.pop();
        let Some(start) = start.filter(|start| self.query.skip.saturating_add(self.query.limit) <= start.total) else {
            return Ok(None);
        };
        let condition = match (start.before, self.descending) {
            (0, _) => Condition::Exists(true),
            (_, true) => Condition::Compare(Operator::Lt, Operand::Number(bucket_start(start.bucket + 1))),
            (_, false) => Condition::Compare(Operator::Gte, Operand::Number(bucket_start(start.bucket))),
        };
        let mut started = self.query.clone();
        started.filters.push(Filter {
            prop: self.prop.to_owned(),
            field: Field::Number,
            condition,
        });
        started.skip -= start.before;
        Ok(Some(started))
    }

    /// `SELECT bucket, before, total ...`: where the page starts ([`Start`]),
    /// from the tallies added up in the sort's order.
    pub(super) fn start_statement(&self, db: &str, person: Option<&str>) -> Sql {
        let order = if self.descending { "DESC" } else { "ASC" };
        let mut sql = Sql::planned_for_any_values();
        // sums of float8, exact below 2^53: those of bigint are numeric,
        // slower to add up
        sql.push(&format!(
            "SELECT c.bucket, c.before::bigint, c.total::bigint FROM (SELECT b.bucket, \
             sum(b.n) OVER (ORDER BY b.bucket {order}) - b.n AS before, b.n, sum(b.n) OVER () AS total \
             FROM (SELECT t.bucket, sum(t.count)::float8 AS n FROM number_tallies t WHERE t.db = "
        ))
        .bind(Bind::Text(db.to_owned()))
        .push(" AND t.prop = ")
        .bind(Bind::Text(self.prop.to_owned()))
        .push(" AND ");
        visible_value(&mut sql, "t", db, person);
        for filter in self.whole.types() {
            sql.push(" AND ");
            filter.test_each_row(&mut sql, db, "t.type_id");
        }
        sql.push(" GROUP BY t.bucket) b) c WHERE c.before + c.n > ")
            .bind(Bind::Integer(self.query.skip))
            .push(&format!(" ORDER BY c.bucket {order} LIMIT 1"));
        sql
    }
}
