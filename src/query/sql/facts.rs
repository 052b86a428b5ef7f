//! What a list query's SQL must know of the properties it names, read in
//! one statement before it is built.

use std::collections::HashSet;

use diesel::QueryableByName;
use diesel::sql_types::{Array, Bool, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

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
}

impl PropertyFacts {
    /// The facts `query` needs: one index probe per property, in one
    /// statement, none when it needs none.
    pub(super) async fn of(
        conn: &mut AsyncPgConnection,
        db: &str,
        query: &ListQuery,
    ) -> Result<PropertyFacts, ApiError> {
        #[derive(QueryableByName)]
        struct Fact {
            #[diesel(sql_type = Text)]
            prop: String,
            #[diesel(sql_type = Bool)]
            references: bool,
            #[diesel(sql_type = Bool)]
            single: bool,
            #[diesel(sql_type = Bool)]
            computed: bool,
        }
        // `_type` names are matched through the entity's projected type
        let filtered = query
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
            .chain(query.group.iter().map(|(prop, _)| prop.as_str()));
        let mut props: Vec<(String, bool)> = Vec::new();
        for prop in filtered {
            if !props.iter().any(|(known, _)| known == prop) {
                props.push((prop.to_owned(), true));
            }
        }
        for prop in keyed {
            if !props.iter().any(|(known, _)| known == prop) {
                props.push((prop.to_owned(), false));
            }
        }
        if props.is_empty() {
            return Ok(PropertyFacts::default());
        }
        let (names, filtered): (Vec<String>, Vec<bool>) = props.into_iter().unzip();
        // values read through subqueries: one plan for any properties (see
        // `Sql::planned_for_any_values`)
        let facts: Vec<Fact> = Prepared::kept(
            diesel::sql_query(
                "SELECT p.prop, CASE WHEN p.filtered THEN EXISTS (SELECT 1 FROM property_values x \
                 WHERE x.db = (SELECT $1) AND x.prop = p.prop AND x.deleted_at IS NULL AND x.reference IS NOT NULL) \
                 ELSE false END AS references, \
                 NOT EXISTS (SELECT 1 FROM property_multiplicity m WHERE m.db = (SELECT $1) AND m.prop = p.prop \
                 AND m.several > 0) AS single, \
                 EXISTS (SELECT 1 FROM entities d WHERE d.db = (SELECT $1) AND d.name = p.prop \
                 AND d.deleted_at IS NULL AND d.doc ? 'formula') AS computed \
                 FROM unnest((SELECT $2::text[]), (SELECT $3::boolean[])) AS p(prop, filtered)",
            )
            .bind::<Text, _>(db)
            .bind::<Array<Text>, _>(names)
            .bind::<Array<Bool>, _>(filtered),
        )
        .load(conn)
        .await?;
        let mut found = PropertyFacts::default();
        for fact in facts {
            if fact.references {
                found.referencing.insert(fact.prop.clone());
            }
            if fact.computed {
                found.computed.insert(fact.prop.clone());
            }
            if fact.single {
                found.single_valued.insert(fact.prop);
            }
        }
        Ok(found)
    }
}
