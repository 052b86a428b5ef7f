//! Counts of whole types, or of the whole database, read from the entity
//! tallies (migration `visibility_in_value_rows`): a few rows per type, one per
//! audience, added up over the audiences the caller may read, exact for
//! every caller whatever their rights. The buckets of the number tallies
//! (migration `number_tallies`), which count the whole of a range's span
//! (`matches`).

use std::collections::HashSet;

use super::filters::{TypeFilter, positive_filters};
use super::statement::{Bind, Sql};
use super::visibility::readable_audience;
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
            .push(" AND ");
        readable_audience(sql, "t.audience", db, person);
        for filter in &self.types {
            sql.push(" AND ");
            filter.test(sql, db, "t.type_id");
        }
    }
}

/// The bits of a number below its bucket in `number_tallies`: 1,024
/// buckets to each power of two.
const BUCKET_SHIFT: u32 = 42;

/// A number's bucket in `number_tallies`, from the same bits as the
/// migration's `number_bucket`: its IEEE 754 bits made to order as numbers
/// do (a negative number's magnitude negated), less the lowest ones.
pub(super) fn number_bucket(number: f64) -> i64 {
    let bits = number.to_bits() as i64;
    let ordered = if bits >= 0 { bits } else { -(bits & i64::MAX) };
    ordered >> BUCKET_SHIFT
}

/// The smallest number of bucket `bucket` (for the bucket after the largest
/// numbers', infinity).
pub(super) fn bucket_start(bucket: i64) -> f64 {
    let ordered = bucket << BUCKET_SHIFT;
    if ordered >= 0 {
        f64::from_bits(ordered as u64)
    } else {
        -f64::from_bits(ordered.unsigned_abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_follow_the_order_of_numbers() {
        let numbers = [
            f64::MIN,
            -1e300,
            -1000.0,
            -990.5,
            -990.0,
            -1.0,
            -f64::MIN_POSITIVE,
            -0.0,
            0.0,
            f64::MIN_POSITIVE,
            0.001,
            1.0,
            989.9,
            990.0,
            990.4,
            990.5,
            1000.0,
            1e300,
            f64::MAX,
        ];
        for pair in numbers.windows(2) {
            assert!(number_bucket(pair[0]) <= number_bucket(pair[1]), "{pair:?}");
        }
        assert_eq!(number_bucket(-0.0), number_bucket(0.0));
        assert_eq!(number_bucket(990.0), number_bucket(990.4));
        assert_ne!(number_bucket(990.0), number_bucket(990.5));
    }

    #[test]
    fn a_bucket_starts_at_its_smallest_number() {
        for number in [-1000.0, -990.3, -1.0, -1e-300, 0.0, 1e-300, 1.0, 990.3, 1000.0, 1e300] {
            let bucket = number_bucket(number);
            let start = bucket_start(bucket);
            assert!(start <= number, "{number}");
            assert_eq!(number_bucket(start), bucket, "{number}");
            // the number before the start is in the bucket before
            let before = if start > 0.0 {
                f64::from_bits(start.to_bits() - 1)
            } else if start == 0.0 {
                -f64::from_bits(1)
            } else {
                -f64::from_bits((-start).to_bits() + 1)
            };
            assert_eq!(number_bucket(before), bucket - 1, "{number}");
        }
        assert_eq!(bucket_start(number_bucket(f64::MAX) + 1), f64::INFINITY);
    }
}
