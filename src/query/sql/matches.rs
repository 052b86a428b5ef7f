//! The matches of a list query found from the value rows alone. Value rows
//! carry their entity's type and what decides who may see them, so a query
//! of positive value filters (and `_type`) is answered by index-only scans of
//! the value indexes: its count needs no entity row, and its page reads only
//! the rows it shows. A sort by the filtered property reads its keys from
//! the same values when they are the ones the sort would pick.

use super::facts::PropertyFacts;
use super::filters::{TypeFilter, ValueFilter, positive_filters};
use super::statement::{Bind, Sql};
use super::tallies::{bucket_start, number_bucket};
use super::visibility::visible_value;
use crate::query::{Condition, Field, ListQuery, Operand, Operator, REFERENCES, SortTarget};

/// A list query answered from its value rows: the filter whose values drive
/// it (and give the sort keys), the other filters its entities must pass,
/// and the `_type` filters.
pub(super) struct FromValues<'a> {
    driver: ValueFilter<'a>,
    others: Vec<ValueFilter<'a>>,
    types: Vec<TypeFilter>,
    /// Per value sort key: its index in the query's sort and its aggregate.
    keys: Vec<(usize, &'static str)>,
    /// Whether each entity has at most one driving value: no entity holds
    /// several values of its property, so its value is its key.
    single_valued: bool,
}

impl<'a> FromValues<'a> {
    /// The plan of `query`, if its matches can be found from value rows:
    /// no search words, no group, no negated filter, at least one value
    /// filter, and every value sort key on one filter's property and field
    /// with conditions that keep the key the sort would pick among the
    /// matching values (any conditions, where the property is single-valued).
    pub(super) fn plan(query: &'a ListQuery, facts: &PropertyFacts) -> Option<FromValues<'a>> {
        if !query.words.is_empty() || !query.group.is_empty() {
            return None;
        }
        let (mut values, types) = positive_filters(&query.filters, &facts.referencing)?;
        let mut keys = Vec::new();
        let mut driver = None;
        for (index, key) in query.sort.iter().enumerate() {
            let SortTarget::Value { prop, field } = &key.target else {
                continue;
            };
            let found = values
                .iter()
                .position(|group| group.prop == prop && group.field == *field)?;
            let group = &values[found];
            let single_valued = facts.single_valued.contains(prop);
            if *driver.get_or_insert(found) != found
                || (group.field == Field::String && group.holds_references)
                || !(single_valued || keeps_the_key(&group.conditions, key.descending))
            {
                return None;
            }
            keys.push((index, if key.descending { "max" } else { "min" }));
        }
        if values.is_empty() {
            return None;
        }
        let driver = values.remove(driver.unwrap_or(0));
        let single_valued = driver.prop != REFERENCES
            && !(driver.field == Field::String && driver.holds_references)
            && facts.single_valued.contains(driver.prop);
        Some(FromValues {
            driver,
            others: values,
            types,
            keys,
            single_valued,
        })
    }

    /// `SELECT x.entity_id AS id, <key> AS k{index}... FROM ... GROUP BY
    /// x.entity_id`: each match once, with its sort keys.
    pub(super) fn matches(&self, sql: &mut Sql, db: &str, person: Option<&str>) {
        sql.push("SELECT x.entity_id AS id");
        for (index, aggregate) in &self.keys {
            if self.single_valued {
                sql.push(&format!(", x.k AS k{index}"));
            } else {
                sql.push(&format!(", {aggregate}(x.k) AS k{index}"));
            }
        }
        sql.push(" FROM (");
        self.driver
            .matching_values(sql, db, person, &self.types, !self.keys.is_empty());
        sql.push(") x");
        for (n, other) in self.others.iter().enumerate() {
            sql.push(if n == 0 { " WHERE " } else { " AND " });
            sql.push("x.entity_id IN (");
            other.matching_values(sql, db, person, &[], false);
            sql.push(")");
        }
        if !self.single_valued {
            sql.push(" GROUP BY x.entity_id");
        }
    }

    /// `(SELECT ...)`: the number of matches. A range of a number property
    /// no entity holds twice adds up the tallies of the buckets it spans
    /// whole (`number_tallies`) and counts one by one only the values of the
    /// buckets at its ends.
    pub(super) fn count(&self, sql: &mut Sql, db: &str, person: Option<&str>) {
        let Some(range) = self.tallied_range() else {
            sql.push("(SELECT count(*) FROM (");
            self.matches(sql, db, person);
            sql.push(") c)");
            return;
        };
        sql.push("((SELECT coalesce(sum(t.count), 0) FROM number_tallies t WHERE t.db = ")
            .bind(Bind::Text(db.to_owned()))
            .push(" AND t.prop = ")
            .bind(Bind::Text(self.driver.prop.to_owned()));
        if let Some(after) = range.after {
            sql.push(" AND t.bucket > ").bind(Bind::Integer(after));
        }
        if let Some(before) = range.before {
            sql.push(" AND t.bucket < ").bind(Bind::Integer(before));
        }
        sql.push(" AND ");
        visible_value(sql, "t", db, person);
        for filter in &self.types {
            sql.push(" AND ");
            filter.test_each_row(sql, db, "t.type_id");
        }
        sql.push(")");
        for edge in range.edges {
            let mut conditions = self.driver.conditions.clone();
            conditions.push(edge);
            let values = ValueFilter {
                conditions,
                ..self.driver
            };
            sql.push(" + (SELECT count(*) FROM (");
            values.matching_values(sql, db, person, &self.types, false);
            sql.push(") c)");
        }
        sql.push(")::bigint");
    }

    /// The buckets of a range counted from the tallies: a driving filter
    /// of lower and upper bounds on a number property no entity holds
    /// twice, with no other filter, and a bucket between its ends.
    fn tallied_range(&self) -> Option<TalliedRange> {
        if !self.others.is_empty() || !self.single_valued || self.driver.field != Field::Number {
            return None;
        }
        let (mut lower, mut upper) = (None, None);
        for condition in &self.driver.conditions {
            let Condition::Compare(operator, Operand::Number(bound)) = condition else {
                return None;
            };
            let side = match operator {
                Operator::Gt | Operator::Gte => &mut lower,
                Operator::Lt | Operator::Lte => &mut upper,
                _ => return None,
            };
            if side.is_some() || !bound.is_finite() {
                return None;
            }
            *side = Some(*bound);
        }
        let (after, before) = (lower.map(number_bucket), upper.map(number_bucket));
        if let (Some(after), Some(before)) = (after, before)
            && before <= after + 1
        {
            return None;
        }
        // each end's own bucket: the matches below the next bucket's start,
        // and those from the start of the upper bound's bucket
        let edges = [
            after.map(|after| Condition::Compare(Operator::Lt, Operand::Number(bucket_start(after + 1)))),
            before.map(|before| Condition::Compare(Operator::Gte, Operand::Number(bucket_start(before)))),
        ];
        Some(TalliedRange {
            after,
            before,
            edges: edges.into_iter().flatten().collect(),
        })
    }

    /// Whether a page sorted by `query` can be read by walking the driving
    /// filter's index in order, stopping at the page's end: the only sort
    /// key is the driver's own property, which no entity holds twice.
    pub(super) fn walks_in_order(&self, query: &ListQuery) -> bool {
        self.single_valued && self.keys.len() == 1 && query.sort.len() == 1
    }

    /// The page's matches in sort order, as [`FromValues::matches`] rows,
    /// for a query that [`FromValues::walks_in_order`].
    pub(super) fn page_in_order(&self, sql: &mut Sql, db: &str, person: Option<&str>, query: &ListQuery) {
        self.matches(sql, db, person);
        // Driving values are never NULL, so the index's own NULLS order
        // (first when walked backwards) is as good as the sort's.
        let descending = query.sort.first().is_some_and(|key| key.descending);
        sql.push(if descending {
            " ORDER BY x.k DESC NULLS FIRST, x.entity_id ASC"
        } else {
            " ORDER BY x.k ASC NULLS LAST, x.entity_id ASC"
        });
        sql.page_window(query);
    }
}

/// A range whose whole buckets are counted from the tallies: those after
/// bucket `after` and before bucket `before` (an open side has none), and
/// one condition more for the values of each end's bucket.
struct TalliedRange {
    after: Option<i64>,
    before: Option<i64>,
    edges: Vec<Condition>,
}

/// Whether, for an entity with some value passing `conditions`, the value a
/// sort picks (the largest descending, the smallest ascending) passes them
/// too: under lower bounds the largest does, under upper bounds the
/// smallest; any other condition may leave it out.
fn keeps_the_key(conditions: &[Condition], descending: bool) -> bool {
    conditions.iter().all(|condition| match condition {
        Condition::Exists(true) => true,
        Condition::Compare(Operator::Gt | Operator::Gte, _) => descending,
        Condition::Compare(Operator::Lt | Operator::Lte, _) => !descending,
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_of(query: &str, referencing: &[&str]) -> bool {
        plan_with(query, referencing, &[])
    }

    fn plan_with(query: &str, referencing: &[&str], single_valued: &[&str]) -> bool {
        let params: Vec<(String, String)> = serde_urlencoded::from_str(query).unwrap();
        let query = ListQuery::parse(&params).unwrap();
        let set = |props: &[&str]| props.iter().map(|prop| (*prop).to_owned()).collect();
        let facts = PropertyFacts {
            referencing: set(referencing),
            single_valued: set(single_valued),
            ..PropertyFacts::default()
        };
        FromValues::plan(&query, &facts).is_some()
    }

    #[test]
    fn positive_value_filters_are_answered_from_the_value_rows() {
        assert!(plan_of("code.string=BK-1", &[]));
        assert!(plan_of("_type.string=book&price.number.gt=990&sort=-price.number", &[]));
        assert!(plan_of("price.number.lt=10&sort=price.number&limit=5", &[]));
        assert!(plan_of("price.number.gte=5&title.string=Dune&sort=-_id", &[]));
        assert!(
            plan_of("_reference.reference=5f1a2b3c4d5e6f7a8b9c0d1e", &[]),
            "referrers"
        );
    }

    #[test]
    fn queries_the_value_rows_cannot_answer_alone_are_not() {
        assert!(!plan_of("_type.string=book", &[]), "no value filter");
        assert!(!plan_of("q=dune&code.string=BK-1", &[]), "search words");
        assert!(!plan_of("code.string.ne=BK-1&price.number.gt=1", &[]), "a negation");
        assert!(!plan_of("price.number.gt=1&group=instock.boolean", &[]), "a group");
        assert!(
            !plan_of("price.number.gt=1&sort=title.string", &[]),
            "a key of another property"
        );
        assert!(
            !plan_of("author.string.gt=A&sort=-author.string", &["author"]),
            "names of references"
        );
    }

    #[test]
    fn a_sort_key_comes_from_the_matches_only_when_bounds_keep_it() {
        assert!(plan_of("price.number.gt=1&sort=-price.number", &[]));
        assert!(!plan_of("price.number.gt=1&sort=price.number", &[]));
        assert!(!plan_of("price.number.lt=1&sort=-price.number", &[]));
        assert!(!plan_of("price.number=1&sort=-price.number", &[]));
        assert!(plan_of("price.number.exists=true&sort=price.number", &[]));
    }

    #[test]
    fn a_single_valued_property_gives_its_key_under_any_conditions() {
        assert!(plan_with(
            "price.number.gte=5&price.number.lt=9&sort=-price.number",
            &[],
            &["price"]
        ));
        assert!(plan_with("price.number=1&sort=price.number", &[], &["price"]));
        assert!(!plan_with("price.number=1&sort=price.number", &[], &["title"]));
    }
}
