//! Formula values: computed in the projection from the entity's own values,
//! its children, its referrers and the entities it references. They live only
//! in the projection, never in the value rows or the history.
//!
//! A formula reads a value only where everyone who may read the formula's
//! value may also read that value (docs/formulas.md, "Who sees what"):
//! otherwise a formula would show what the rights rules hide.

use std::collections::HashMap;

use diesel::QueryableByName;
use diesel::sql_types::{Array, Jsonb, Nullable, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value as Json;

use crate::db::values::AccessColumns;
use crate::formula::{FieldRef, Formula, FormulaValue};
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
/// reading its own value may read too.
pub async fn evaluate(
    conn: &mut AsyncPgConnection,
    db: &str,
    id: &str,
    rows: &[ValueRow],
    definitions: &HashMap<String, PropertyDefinition>,
    audience: &(dyn Fn(&str) -> Audience + Sync),
) -> diesel::QueryResult<Vec<(String, Vec<Json>)>> {
    let mut formulas: Vec<(&String, Formula)> = definitions
        .iter()
        .filter_map(|(prop, definition)| Some((prop, Formula::parse(definition.formula.as_deref()?).ok()?)))
        .collect();
    formulas.sort_by(|a, b| a.0.cmp(b.0));
    let mut results: Vec<(String, Vec<Json>)> = Vec::new();
    for (prop, formula) in formulas {
        let readers = audience(prop);
        let mut inputs: HashMap<FieldRef, Vec<FormulaValue>> = HashMap::new();
        for reference in formula.references() {
            let values = match &reference {
                FieldRef::Id => vec![FormulaValue::Text(id.to_owned())],
                FieldRef::Own(own) if !readers.within(&audience(own)) => Vec::new(),
                FieldRef::Own(own) => match results.iter().find(|(name, _)| name == own) {
                    Some((_, computed)) => computed.iter().filter_map(FormulaValue::from_value_json).collect(),
                    None => rows
                        .iter()
                        .filter(|row| &row.prop == own)
                        .filter_map(|row| FormulaValue::from_value_json(&Json::Object(row.stored_json())))
                        .collect(),
                },
                FieldRef::Child { entity_type, prop } => {
                    let related = related(
                        conn,
                        "FROM entities e LEFT JOIN entities t ON t.db = e.db AND t.id = e.type_id \
                         WHERE e.db = $1 AND e.parent_ids @> $2 AND e.deleted_at IS NULL \
                         AND ($3::text IS NULL OR t.name = $3) ORDER BY e.id",
                        db,
                        vec![id.to_owned()],
                        entity_type.as_deref(),
                    )
                    .await?;
                    values_of(&related, prop, &readers)
                }
                FieldRef::Referrer { entity_type, prop } => {
                    let related = related(
                        conn,
                        "FROM entities e LEFT JOIN entities t ON t.db = e.db AND t.id = e.type_id \
                         WHERE e.db = $1 AND e.deleted_at IS NULL AND ($3::text IS NULL OR t.name = $3) \
                         AND e.id IN (SELECT v.entity_id FROM property_values v WHERE v.db = $1 \
                         AND v.reference = ANY($2) AND v.deleted_at IS NULL AND v.prop NOT LIKE '\\_%') ORDER BY e.id",
                        db,
                        vec![id.to_owned()],
                        entity_type.as_deref(),
                    )
                    .await?;
                    values_of(&related, prop, &readers)
                }
                FieldRef::Reference { via, entity_type, prop } => {
                    let targets: Vec<String> = rows
                        .iter()
                        .filter(|row| &row.prop == via)
                        .filter_map(|row| row.reference.clone())
                        .collect();
                    let related = related(
                        conn,
                        "FROM entities e LEFT JOIN entities t ON t.db = e.db AND t.id = e.type_id \
                         WHERE e.db = $1 AND e.id = ANY($2) AND e.deleted_at IS NULL \
                         AND ($3::text IS NULL OR t.name = $3) ORDER BY e.id",
                        db,
                        targets,
                        entity_type.as_deref(),
                    )
                    .await?;
                    values_of(&related, prop, &readers)
                }
            };
            inputs.insert(reference, values);
        }
        let computed = formula.evaluate_all(&|reference| inputs.get(reference).cloned().unwrap_or_default());
        if !computed.is_empty() {
            results.push((prop.clone(), computed.iter().map(FormulaValue::to_value_json).collect()));
        }
    }
    Ok(results)
}

/// The related entities a statement's `FROM ...` part finds (`e` the
/// related entity; `$2` the ids, `$3` the type name or NULL).
async fn related(
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

/// The values of `prop` (or the ids, for `_id`) of related entities, as their
/// projections show them (credentials masked, formula results included),
/// from the entities where everyone in `readers` may read them: the others
/// count as absent, so not even their number shows.
fn values_of(related: &[Related], prop: &str, readers: &Audience) -> Vec<FormulaValue> {
    related
        .iter()
        .filter(|entity| readers.within(&entity.access.visibility().audience(prop)))
        .flat_map(|entity| {
            if prop == "_id" {
                return vec![FormulaValue::Text(entity.id.clone())];
            }
            entity.doc[prop]
                .as_array()
                .map(|values| values.iter().filter_map(FormulaValue::from_value_json).collect())
                .unwrap_or_default()
        })
        .collect()
}

/// Puts formula results into an entity document, in place of any stored values.
pub fn apply(doc: &mut Json, results: Vec<(String, Vec<Json>)>) {
    if let Some(object) = doc.as_object_mut() {
        for (prop, values) in results {
            object.insert(prop, Json::Array(values));
        }
    }
}

#[derive(QueryableByName)]
struct Id {
    #[diesel(sql_type = Text)]
    id: String,
}

/// Entities whose formulas may read any of `ids`: their parents (`_child`),
/// the entities they point at (`_referrer`) and those pointing at them
/// (`ref.*.prop`, `_parent.*.prop`), where their type defines a formula.
/// `near` adds what the first two find for an entity whose value rows are
/// not written yet.
pub async fn dependents(
    conn: &mut AsyncPgConnection,
    db: &str,
    ids: &[String],
    near: Vec<String>,
) -> diesel::QueryResult<Vec<String>> {
    let types = formula_types(conn, db).await?;
    if types.is_empty() || (ids.is_empty() && near.is_empty()) {
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
    .bind::<Array<Text>, _>(near)
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
