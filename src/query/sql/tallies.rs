//! Counts of whole types, or of the whole database, read from the entity
//! tallies (migration `visibility_in_value_rows`): a few rows per type, one per
//! audience, added up over the audiences the caller may read, exact for
//! every caller whatever their rights.

use std::collections::HashSet;

use super::filters::{TypeFilter, positive_filters};
use super::statement::{Bind, Sql};
use super::visibility::readable_audiences;
use crate::query::ListQuery;

/// The count of a query whose only filters are on `_type`.
pub(super) struct WholeCount {
    types: Vec<TypeFilter>,
}

impl WholeCount {
    /// The count of `query` if it is a whole type's (or database's): no
    /// search words, no group, and no filter but positive ones on `_type`.
    pub(super) fn plan(query: &ListQuery) -> Option<WholeCount> {
        if !query.group.is_empty() {
            return None;
        }
        WholeCount::of_matches(query)
    }

    /// The count of the entities `query` matches before any grouping, if
    /// they are a whole type's (or database's): no search words, and no
    /// filter but positive ones on `_type`.
    pub(super) fn of_matches(query: &ListQuery) -> Option<WholeCount> {
        if !query.words.is_empty() {
            return None;
        }
        let (values, types) = positive_filters(&query.filters, &HashSet::new())?;
        values.is_empty().then_some(WholeCount { types })
    }

    /// The `_type` filters the count is taken under.
    pub(super) fn types(&self) -> &[TypeFilter] {
        &self.types
    }

    pub(super) fn statement(&self, db: &str, person: Option<&str>) -> Sql {
        let mut sql = Sql::default();
        self.push_into(&mut sql, db, person);
        sql
    }

    /// `SELECT ... AS count`: the count, written into `sql`.
    pub(super) fn push_into(&self, sql: &mut Sql, db: &str, person: Option<&str>) {
        sql.push("SELECT coalesce(sum(t.count), 0)::bigint AS count FROM entity_tallies t WHERE t.db = ")
            .bind(Bind::Text(db.to_owned()))
            .push(" AND t.audience IN ");
        readable_audiences(sql, db, person);
        for filter in &self.types {
            sql.push(" AND ");
            filter.test(sql, db, "t.type_id");
        }
    }
}
