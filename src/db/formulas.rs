//! The statements behind formula values: loading the related entities a
//! formula reads (the reading itself is `formula::context`), finding the
//! entities whose formulas depend on a change, and stripping stale values.
//! Formula values live only in the projection, never in the value rows or
//! the history.

use std::collections::HashMap;

use diesel::QueryableByName;
use diesel::sql_types::{Array, Jsonb, Nullable, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value as Json;

use crate::db::values::AccessColumns;
use crate::formula::context::{self, Inputs, RelatedEntity};
use crate::formula::{FieldRef, FormulaValue};
use crate::model::PROPERTY_TYPE;
use crate::model::definition::PropertyDefinition;
use crate::model::stored::ValueRow;
use crate::rights::Audience;

/// A related entity: its document and what decides who may read its values.
#[derive(QueryableByName)]
struct Related {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Jsonb)]
    doc: Json,
    #[diesel(embed)]
    access: AccessColumns,
}

/// The columns of [`Related`], of an entity row aliased `e`.
const RELATED_COLUMNS: &str = "e.id, e.doc, e.sharing, e.viewers, e.noaccess, e.public_props, e.domain_props";

/// The values of the entity's formula properties, by property name, as value
/// objects (`{"number":..}`, `{"string":..}`, `{"boolean":..}`); a formula that
/// gives no value is absent. `audience` answers who may read each of the
/// entity's own properties: a formula reads only values that everyone
/// reading its own value may read too ([`context::evaluate`]).
pub async fn evaluate(
    conn: &mut AsyncPgConnection,
    db: &str,
    id: &str,
    rows: &[ValueRow],
    definitions: &HashMap<String, PropertyDefinition>,
    audience: &(dyn Fn(&str) -> Audience + Sync),
) -> diesel::QueryResult<Vec<(String, Vec<Json>)>> {
    let formulas = context::formulas_of(definitions);
    let mut loaded: HashMap<FieldRef, Vec<Related>> = HashMap::new();
    for reference in formulas.iter().flat_map(|(_, formula)| formula.references()) {
        if loaded.contains_key(&reference) {
            continue;
        }
        let found = match &reference {
            FieldRef::Id | FieldRef::Own(_) => continue,
            FieldRef::Child { entity_type, .. } => {
                related_entities(
                    conn,
                    "FROM entities e LEFT JOIN entities t ON t.db = e.db AND t.id = e.type_id \
                     WHERE e.db = $1 AND e.parent_ids @> $2 AND e.deleted_at IS NULL \
                     AND ($3::text IS NULL OR t.name = $3) ORDER BY e.id",
                    db,
                    vec![id.to_owned()],
                    entity_type.as_deref(),
                )
                .await?
            }
            FieldRef::Referrer { entity_type, .. } => {
                related_entities(
                    conn,
                    "FROM entities e LEFT JOIN entities t ON t.db = e.db AND t.id = e.type_id \
                     WHERE e.db = $1 AND e.deleted_at IS NULL AND ($3::text IS NULL OR t.name = $3) \
                     AND e.id IN (SELECT v.entity_id FROM property_values v WHERE v.db = $1 \
                     AND v.reference = ANY($2) AND v.deleted_at IS NULL AND v.prop NOT LIKE '\\_%') ORDER BY e.id",
                    db,
                    vec![id.to_owned()],
                    entity_type.as_deref(),
                )
                .await?
            }
            FieldRef::Reference { via, entity_type, .. } => {
                let targets: Vec<String> = rows
                    .iter()
                    .filter(|row| &row.prop == via)
                    .filter_map(|row| row.reference.clone())
                    .collect();
                related_entities(
                    conn,
                    "FROM entities e LEFT JOIN entities t ON t.db = e.db AND t.id = e.type_id \
                     WHERE e.db = $1 AND e.id = ANY($2) AND e.deleted_at IS NULL \
                     AND ($3::text IS NULL OR t.name = $3) ORDER BY e.id",
                    db,
                    targets,
                    entity_type.as_deref(),
                )
                .await?
            }
        };
        loaded.insert(reference, found);
    }
    let related: HashMap<FieldRef, Vec<RelatedEntity>> = loaded
        .iter()
        .map(|(reference, rows)| {
            let entities = rows
                .iter()
                .map(|row| RelatedEntity {
                    id: &row.id,
                    doc: &row.doc,
                    visibility: row.access.visibility(),
                })
                .collect();
            (reference.clone(), entities)
        })
        .collect();
    let stored = |own: &str| {
        rows.iter()
            .filter(|row| row.prop == own)
            .filter_map(|row| FormulaValue::from_value_json(&Json::Object(row.stored_json())))
            .collect()
    };
    let inputs = Inputs {
        id,
        stored: &stored,
        related: &related,
        audience,
    };
    Ok(context::evaluate(&formulas, &inputs))
}

/// The related entities a statement's `FROM ...` part finds (`e` the
/// related entity; `$2` the ids, `$3` the type name or NULL).
async fn related_entities(
    conn: &mut AsyncPgConnection,
    from: &'static str,
    db: &str,
    ids: Vec<String>,
    entity_type: Option<&str>,
) -> diesel::QueryResult<Vec<Related>> {
    diesel::sql_query(format!("SELECT {RELATED_COLUMNS} {from}"))
        .bind::<Text, _>(db)
        .bind::<Array<Text>, _>(ids)
        .bind::<Nullable<Text>, _>(entity_type)
        .load(conn)
        .await
}

#[derive(QueryableByName)]
struct Id {
    #[diesel(sql_type = Text)]
    id: String,
}

/// Entities whose formulas may read any of `ids`: their parents (`_child`),
/// the entities they point at (`_referrer`) and those pointing at them
/// (`ref.*.prop`, `_parent.*.prop`), where their type defines a formula.
/// `parents_and_targets` are candidates as they are: what the first two
/// find, given for an entity whose value rows are not written yet.
pub async fn dependents(
    conn: &mut AsyncPgConnection,
    db: &str,
    ids: &[String],
    parents_and_targets: Vec<String>,
) -> diesel::QueryResult<Vec<String>> {
    let types = formula_types(conn, db).await?;
    if types.is_empty() || (ids.is_empty() && parents_and_targets.is_empty()) {
        return Ok(Vec::new());
    }
    // The candidates come first and are few; their types are checked after.
    let found: Vec<Id> = diesel::sql_query(
        "SELECT e.id FROM entities e WHERE e.db = $1 AND e.deleted_at IS NULL AND e.type_id = ANY($4) \
         AND e.id IN (SELECT unnest($2::text[]) \
              UNION ALL SELECT unnest(x.parent_ids) FROM entities x WHERE x.db = $1 AND x.id = ANY($3) \
              UNION ALL SELECT v.reference FROM property_values v WHERE v.db = $1 AND v.entity_id = ANY($3) \
                  AND v.deleted_at IS NULL AND v.reference IS NOT NULL AND v.prop NOT LIKE '\\_%' \
              UNION ALL SELECT v.entity_id FROM property_values v WHERE v.db = $1 AND v.reference = ANY($3) \
                  AND v.deleted_at IS NULL AND v.reference IS NOT NULL \
                  AND (v.prop NOT LIKE '\\_%' OR v.prop = '_parent'))",
    )
    .bind::<Text, _>(db)
    .bind::<Array<Text>, _>(parents_and_targets)
    .bind::<Array<Text>, _>(ids)
    .bind::<Array<Text>, _>(types)
    .load(conn)
    .await?;
    let mut found: Vec<String> = found.into_iter().map(|row| row.id).collect();
    found.sort_unstable();
    found.dedup();
    Ok(found)
}

/// Removes the formula values of `ids` and of what reads them in turn, at
/// once: what they read has become readable by fewer (or their own readers
/// more), so a value computed before may now show what it must not. The
/// formula queue computes them again. Answers every entity stripped.
pub async fn strip(conn: &mut AsyncPgConnection, db: &str, ids: Vec<String>) -> diesel::QueryResult<Vec<String>> {
    let mut stripped: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    let mut next = dependents(conn, db, &ids, Vec::new()).await?;
    while !next.is_empty() {
        diesel::sql_query(
            "UPDATE entities e SET doc = e.doc - ARRAY(SELECT d.name FROM entities d \
                 WHERE d.db = e.db AND d.parent_ids @> ARRAY[e.type_id] AND d.deleted_at IS NULL \
                 AND d.name IS NOT NULL AND d.doc ? 'formula') \
             WHERE e.db = $1 AND e.id = ANY($2)",
        )
        .bind::<Text, _>(db)
        .bind::<Array<Text>, _>(&next)
        .execute(conn)
        .await?;
        let fresh: Vec<String> = next.into_iter().filter(|id| stripped.insert(id.clone())).collect();
        next = if fresh.is_empty() {
            Vec::new()
        } else {
            dependents(conn, db, &fresh, Vec::new())
                .await?
                .into_iter()
                .filter(|id| !stripped.contains(id))
                .collect()
        };
    }
    Ok(stripped.into_iter().collect())
}

/// Those of `ids` whose type defines a formula.
pub async fn with_formulas(conn: &mut AsyncPgConnection, db: &str, ids: &[String]) -> diesel::QueryResult<Vec<String>> {
    let types = formula_types(conn, db).await?;
    if types.is_empty() || ids.is_empty() {
        return Ok(Vec::new());
    }
    let found: Vec<Id> = diesel::sql_query(
        "SELECT id FROM entities WHERE db = $1 AND id = ANY($2) AND type_id = ANY($3) AND deleted_at IS NULL",
    )
    .bind::<Text, _>(db)
    .bind::<Array<Text>, _>(ids)
    .bind::<Array<Text>, _>(types)
    .load(conn)
    .await?;
    Ok(found.into_iter().map(|row| row.id).collect())
}

/// The entity types of the database with a formula property. The property
/// type's ids are looked up first so that the definitions are found through
/// the type index: in a single statement the planner scans every entity.
async fn formula_types(conn: &mut AsyncPgConnection, db: &str) -> diesel::QueryResult<Vec<String>> {
    let property_types: Vec<Id> =
        diesel::sql_query("SELECT id FROM entities WHERE db = $1 AND name = $2 AND deleted_at IS NULL")
            .bind::<Text, _>(db)
            .bind::<Text, _>(PROPERTY_TYPE)
            .load(conn)
            .await?;
    if property_types.is_empty() {
        return Ok(Vec::new());
    }
    let types: Vec<Id> = diesel::sql_query(
        "SELECT DISTINCT t.type_id AS id FROM entities d CROSS JOIN unnest(d.parent_ids) AS t(type_id) \
         WHERE d.db = $1 AND d.type_id = ANY($2) AND d.deleted_at IS NULL AND d.doc ? 'formula'",
    )
    .bind::<Text, _>(db)
    .bind::<Array<Text>, _>(property_types.into_iter().map(|row| row.id).collect::<Vec<_>>())
    .load(conn)
    .await?;
    Ok(types.into_iter().map(|row| row.id).collect())
}
