//! What a list query's SQL must know of the properties it names. A query
//! whose properties were all seen before is built on what was last found
//! of them, and its page statement checks, in its own snapshot, that this
//! still holds ([`PropertyFacts::still_hold`]): one round trip instead of
//! two. Otherwise the facts are read first, in one statement.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use dashmap::DashMap;
use diesel::QueryableByName;
use diesel::sql_types::{Array, Bool, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use super::statement::{Bind, Sql};
use crate::db::prepared::Prepared;
use crate::error::ApiError;
use crate::model::TYPE_PROPERTY;
use crate::query::{Field, ListQuery, SortTarget};

/// Facts about the properties a query filters, sorts or groups by.
#[derive(Debug, Default)]
pub(super) struct PropertyFacts {
    /// Properties filtered or grouped by `string` that hold references
    /// somewhere in the database: only for them can a filter match a
    /// reference by its target's name (and a group key is that name), so
    /// only their SQL asks.
    pub(super) referencing: HashSet<String>,
    /// Properties sorted or grouped by that no live entity of the database
    /// holds more than one live value of (migration `property_multiplicity`):
    /// each value row is then its entity's key.
    pub(super) single_valued: HashSet<String>,
    /// Properties sorted or grouped by that some definition computes with a
    /// formula: their values live in the entities' documents only.
    pub(super) computed: HashSet<String>,
    /// What these sets were built from, property by property.
    pub(super) found: Vec<Fact>,
    /// The database generation at which all of them were last found to
    /// hold, when the same for all: until the next committed change,
    /// nothing can have changed them.
    pub(super) held_at: Option<i64>,
}

/// What one property is in a database, whatever a query does with it.
#[derive(Debug, Clone, PartialEq, QueryableByName)]
pub(super) struct Fact {
    #[diesel(sql_type = Text)]
    prop: String,
    /// Some live value of it is a reference.
    #[diesel(sql_type = Bool)]
    has_references: bool,
    #[diesel(sql_type = Bool)]
    single: bool,
    #[diesel(sql_type = Bool)]
    computed: bool,
}

/// The facts of property `p.prop` in the database `db` names, as columns
/// `has_references`, `single` and `computed` (one index probe each).
fn facts_of_p(db: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM property_values x WHERE x.db = {db} AND x.prop = p.prop \
         AND x.deleted_at IS NULL AND x.reference IS NOT NULL) AS has_references, \
         NOT EXISTS (SELECT 1 FROM property_multiplicity m WHERE m.db = {db} AND m.prop = p.prop \
         AND m.several > 0) AS single, \
         EXISTS (SELECT 1 FROM entities d WHERE d.db = {db} AND d.name = p.prop \
         AND d.deleted_at IS NULL AND d.doc ? 'formula') AS computed"
    )
}

/// The statement reading the facts of properties `$2` in database `$1`
/// (values read through subqueries: one plan for any properties, see
/// `Sql::planned_for_any_values`).
static READ: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT p.prop, {} FROM unnest((SELECT $2::text[])) AS p(prop)",
        facts_of_p("(SELECT $1)")
    )
});

/// The facts of properties `p.prop` in the database `f.db`, for
/// [`PropertyFacts::still_hold`].
static OF_P_IN_F: LazyLock<String> = LazyLock::new(|| facts_of_p("f.db"));

/// The facts last found by this process, per database and property. A
/// database's record starts afresh past this many properties, so names
/// made up by queries cannot grow it (databases are the server's own: a
/// query names an existing one).
const SEEN_MOST: usize = 10_000;

static SEEN: LazyLock<DashMap<String, HashMap<String, Seen>>> = LazyLock::new(DashMap::new);

/// A fact as last found, and the generation at which a page's statement
/// last found it still held.
#[derive(Clone)]
struct Seen {
    fact: Fact,
    held_at: Option<i64>,
}

/// The properties of `query` whose facts its SQL needs, each with whether
/// it is filtered or grouped by `string` (only then do its references count).
fn named(query: &ListQuery) -> Vec<(&str, bool)> {
    // `_type` names are matched through the entity's projected type
    let by_string = query
        .filters
        .iter()
        .filter(|filter| filter.field == Field::String && filter.prop != TYPE_PROPERTY)
        .map(|filter| filter.prop.as_str())
        .chain(
            query
                .group
                .iter()
                .filter(|(_, field)| *field == Field::String)
                .map(|(prop, _)| prop.as_str()),
        );
    let keyed = query
        .sort
        .iter()
        .filter_map(|key| match &key.target {
            SortTarget::Value { prop, .. } => Some(prop.as_str()),
            _ => None,
        })
        .chain(query.group.iter().map(|(prop, _)| prop.as_str()))
        // a range of a number property no entity holds twice is counted
        // from the number tallies (`matches`)
        .chain(
            query
                .filters
                .iter()
                .filter(|filter| filter.field == Field::Number)
                .map(|filter| filter.prop.as_str()),
        );
    let mut props: Vec<(&str, bool)> = Vec::new();
    for (prop, filtered) in by_string
        .map(|prop| (prop, true))
        .chain(keyed.map(|prop| (prop, false)))
    {
        if !props.iter().any(|(known, _)| *known == prop) {
            props.push((prop, filtered));
        }
    }
    props
}

impl PropertyFacts {
    /// The facts `query` needs, read in one statement (none when it needs
    /// none).
    pub(super) async fn of(
        conn: &mut AsyncPgConnection,
        db: &str,
        query: &ListQuery,
    ) -> Result<PropertyFacts, ApiError> {
        let props = named(query);
        if props.is_empty() {
            return Ok(PropertyFacts::default());
        }
        let names: Vec<String> = props.iter().map(|(prop, _)| (*prop).to_owned()).collect();
        // values read through subqueries: one plan for any properties (see
        // `Sql::planned_for_any_values`)
        let found: Vec<Fact> = Prepared::kept(
            diesel::sql_query(READ.as_str())
                .bind::<Text, _>(db)
                .bind::<Array<Text>, _>(names),
        )
        .load(conn)
        .await?;
        let mut seen = SEEN.entry(db.to_owned()).or_default();
        if seen.len() + found.len() > SEEN_MOST {
            seen.clear();
        }
        for fact in &found {
            let fact = fact.clone();
            seen.insert(fact.prop.clone(), Seen { fact, held_at: None });
        }
        drop(seen);
        Ok(PropertyFacts::from_found(&props, found, None))
    }

    /// The facts `query` needs as this process last found them, when it
    /// found them all: to be checked by [`PropertyFacts::still_hold`].
    pub(super) fn last_seen(db: &str, query: &ListQuery) -> Option<PropertyFacts> {
        let props = named(query);
        if props.is_empty() {
            // none to read, none to check
            return None;
        }
        let seen = SEEN.get(db)?;
        let found = props
            .iter()
            .map(|(prop, _)| seen.get(*prop).cloned())
            .collect::<Option<Vec<Seen>>>()?;
        drop(seen);
        let held_at = found[0]
            .held_at
            .filter(|at| found.iter().all(|seen| seen.held_at == Some(*at)));
        let found = found.into_iter().map(|seen| seen.fact).collect();
        Some(PropertyFacts::from_found(&props, found, held_at))
    }

    /// Records that a page's statement found these facts still held when
    /// the database's generation was `generation`.
    pub(super) fn held_at(&self, db: &str, generation: i64) {
        let Some(mut seen) = SEEN.get_mut(db) else {
            return;
        };
        for fact in &self.found {
            // unless read anew meanwhile
            if let Some(seen) = seen.get_mut(&fact.prop).filter(|seen| seen.fact == *fact) {
                seen.held_at = Some(generation);
            }
        }
    }

    fn from_found(props: &[(&str, bool)], found: Vec<Fact>, held_at: Option<i64>) -> PropertyFacts {
        let mut facts = PropertyFacts::default();
        for fact in &found {
            let by_string = props.iter().any(|(prop, filtered)| *prop == fact.prop && *filtered);
            if fact.has_references && by_string {
                facts.referencing.insert(fact.prop.clone());
            }
            if fact.computed {
                facts.computed.insert(fact.prop.clone());
            }
            if fact.single {
                facts.single_valued.insert(fact.prop.clone());
            }
        }
        facts.found = found;
        facts.held_at = held_at;
        facts
    }

    /// Appends a boolean expression that is true when these facts (of at
    /// least one property) are still those of database `db` (in the
    /// statement's own snapshot): at once when its generation is still the
    /// one they last held at, or else when found again.
    pub(super) fn still_hold(&self, sql: &mut Sql, db: &str) {
        let column = |value: fn(&Fact) -> bool| self.found.iter().map(value).collect::<Vec<bool>>();
        if let Some(generation) = self.held_at {
            sql.push("((SELECT d.generation FROM databases d WHERE d.name = ")
                .bind(Bind::Text(db.to_owned()))
                .push(") = ")
                .bind(Bind::Integer(generation))
                .push(" OR ");
        }
        sql.push(
            "(SELECT bool_and(facts.has_references = p.has_references AND facts.single = p.single \
             AND facts.computed = p.computed) FROM (SELECT ",
        )
        .bind(Bind::Text(db.to_owned()))
        .push(" AS db) f, unnest(")
        .bind(Bind::TextArray(
            self.found.iter().map(|fact| fact.prop.clone()).collect(),
        ))
        .push(", ")
        .bind(Bind::BooleanArray(column(|fact| fact.has_references)))
        .push(", ")
        .bind(Bind::BooleanArray(column(|fact| fact.single)))
        .push(", ")
        .bind(Bind::BooleanArray(column(|fact| fact.computed)))
        .push(") AS p(prop, has_references, single, computed), LATERAL (SELECT ")
        .push(&OF_P_IN_F)
        .push(") facts)");
        if self.held_at.is_some() {
            sql.push(")");
        }
    }
}
