//! Prepared once per connection: diesel prepares the text of every
//! `sql_query` (and of DSL queries whose SQL may vary) anew for each
//! execution, so PostgreSQL parses, analyses and plans it every time. A
//! statement kept prepared is keyed by its text; PostgreSQL plans its first
//! executions for their values and then, when a plan for any values costs no
//! more, reuses that one.

use diesel::QueryResult;
use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};

/// A query, kept prepared on each connection that runs it or not. Keep only
/// text with a bounded number of shapes: a connection holds every text it
/// kept for its whole life.
pub struct Prepared<Q> {
    query: Q,
    keep: bool,
}

impl<Q> Prepared<Q> {
    /// `query`, whose text never varies (or takes a few shapes), kept.
    pub fn kept(query: Q) -> Prepared<Q> {
        Prepared { query, keep: true }
    }

    /// `query`, kept when `keep`.
    pub fn kept_if(query: Q, keep: bool) -> Prepared<Q> {
        Prepared { query, keep }
    }
}

impl<Q: QueryFragment<Pg>> QueryFragment<Pg> for Prepared<Q> {
    fn walk_ast<'b>(&'b self, pass: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        self.query.walk_ast(pass)
    }

    fn is_safe_to_cache_prepared(&self, _: &Pg) -> QueryResult<bool> {
        Ok(self.keep)
    }
}

impl<Q> QueryId for Prepared<Q> {
    type QueryId = ();
    // keyed by the SQL text, not by a type
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<Q: Query> Query for Prepared<Q> {
    type SqlType = Q::SqlType;
}
