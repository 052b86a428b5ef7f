//! A statement under construction: SQL text with numbered placeholders and
//! the values bound to them.

use std::collections::HashSet;
use std::sync::{Arc, LazyLock, Mutex};

use chrono::{DateTime, NaiveDate, Utc};
use diesel::pg::Pg;
use diesel::query_builder::{BoxedSqlQuery, SqlQuery};
use diesel::sql_types::{Array, BigInt, Bool, Date, Double, Text, Timestamptz};

use super::readable::Readable;
use crate::db::prepared::Prepared;
use crate::query::ListQuery;

/// How many statement texts (shapes: the values are bound) a process keeps
/// prepared. Queries of the same form with other values share a shape, so a
/// client's few query forms are planned once per connection; a flood of new
/// forms runs unprepared beyond this and cannot grow the connections' memory.
const KEPT_SHAPES: usize = 64;

static KEPT: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Mutex::default);

/// Whether statements of text `text` are kept prepared.
fn kept(text: &str) -> bool {
    let mut kept = KEPT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if kept.contains(text) {
        return true;
    }
    kept.len() < KEPT_SHAPES && kept.insert(text.to_owned())
}

/// A bind parameter value.
#[derive(Debug, Clone)]
pub(super) enum Bind {
    Text(String),
    TextArray(Vec<String>),
    Number(f64),
    NumberArray(Vec<f64>),
    Integer(i64),
    IntegerArray(Vec<i64>),
    Boolean(bool),
    BooleanArray(Vec<bool>),
    Date(NaiveDate),
    DateArray(Vec<NaiveDate>),
    Datetime(DateTime<Utc>),
    DatetimeArray(Vec<DateTime<Utc>>),
}

/// SQL text with numbered placeholders and their values.
#[derive(Default)]
pub(super) struct Sql {
    pub(super) text: String,
    binds: Vec<Bind>,
    /// Whether each value is read through a subquery (see [`Sql::planned_for_any_values`]).
    values_unseen_by_planner: bool,
    /// The audiences the caller may read, when resolved before the
    /// statement: bound as ids instead of found in it (see `visibility`).
    readable: Option<Arc<Readable>>,
}

impl Sql {
    /// A statement whose values the planner does not look at: each is read
    /// through a subquery. PostgreSQL plans a prepared statement's first
    /// executions for their values and keeps one plan for any values only
    /// when that plan is estimated to cost no more; with estimates for
    /// specific values (a narrow range, a short list) it never does, and
    /// planning each execution took longer than running it (0.7 ms of
    /// planning for a page of a range read in 0.5 ms). Unseen values give
    /// the same estimates every time, so one plan is kept after the first
    /// few. Only for statements whose shape, chosen here, decides the plan.
    pub(super) fn planned_for_any_values() -> Sql {
        Sql {
            values_unseen_by_planner: true,
            ..Sql::default()
        }
    }

    /// Binds the audiences the caller may read into every visibility test
    /// built after this (see `visibility::Readable`).
    pub(super) fn with_readable(mut self, readable: Option<Arc<Readable>>) -> Sql {
        self.readable = readable;
        self
    }

    pub(super) fn readable(&self) -> Option<Arc<Readable>> {
        self.readable.clone()
    }

    pub(super) fn push(&mut self, text: &str) -> &mut Self {
        self.text.push_str(text);
        self
    }

    pub(super) fn bind(&mut self, value: Bind) -> &mut Self {
        // an array in a subquery needs its type, or `= ANY (...)` takes
        // the subquery for a set of rows
        let array_type = match value {
            Bind::TextArray(_) => "::text[]",
            Bind::NumberArray(_) => "::double precision[]",
            Bind::IntegerArray(_) => "::bigint[]",
            Bind::BooleanArray(_) => "::boolean[]",
            Bind::DateArray(_) => "::date[]",
            Bind::DatetimeArray(_) => "::timestamptz[]",
            _ => "",
        };
        self.binds.push(value);
        let placeholder = format!("${}", self.binds.len());
        if self.values_unseen_by_planner {
            self.text.push_str(&format!("(SELECT {placeholder}){array_type}"));
        } else {
            self.text.push_str(&placeholder);
        }
        self
    }

    /// ` LIMIT .. OFFSET ..`: the query's page.
    pub(super) fn page_window(&mut self, query: &ListQuery) -> &mut Self {
        self.push(" LIMIT ")
            .bind(Bind::Integer(query.limit))
            .push(" OFFSET ")
            .bind(Bind::Integer(query.skip))
    }

    pub(super) fn into_query(self) -> Prepared<BoxedSqlQuery<'static, Pg, SqlQuery>> {
        let keep = kept(&self.text);
        let mut query = diesel::sql_query(self.text).into_boxed::<Pg>();
        for bind in self.binds {
            query = match bind {
                Bind::Text(v) => query.bind::<Text, _>(v),
                Bind::TextArray(v) => query.bind::<Array<Text>, _>(v),
                Bind::Number(v) => query.bind::<Double, _>(v),
                Bind::NumberArray(v) => query.bind::<Array<Double>, _>(v),
                Bind::Integer(v) => query.bind::<BigInt, _>(v),
                Bind::IntegerArray(v) => query.bind::<Array<BigInt>, _>(v),
                Bind::Boolean(v) => query.bind::<Bool, _>(v),
                Bind::BooleanArray(v) => query.bind::<Array<Bool>, _>(v),
                Bind::Date(v) => query.bind::<Date, _>(v),
                Bind::DateArray(v) => query.bind::<Array<Date>, _>(v),
                Bind::Datetime(v) => query.bind::<Timestamptz, _>(v),
                Bind::DatetimeArray(v) => query.bind::<Array<Timestamptz>, _>(v),
            };
        }
        Prepared::kept_if(query, keep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_more_than_the_cap_of_statement_shapes_is_kept_prepared() {
        // other tests may keep shapes of their own: the cap is shared
        let texts: Vec<String> = (0..KEPT_SHAPES + 10)
            .map(|n| format!("SELECT {n} AS shape_of_this_test"))
            .collect();
        let kept_now: Vec<bool> = texts.iter().map(|text| kept(text)).collect();
        assert!(kept_now.iter().filter(|kept| **kept).count() <= KEPT_SHAPES);
        assert!(!kept_now.last().unwrap(), "a shape past the cap runs unprepared");
        for (text, was_kept) in texts.iter().zip(&kept_now) {
            assert_eq!(kept(text), *was_kept, "a shape stays as it was first decided: {text}");
        }
    }
}
