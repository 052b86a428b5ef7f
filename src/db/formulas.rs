//! Formula values: computed in the projection from the entity's own values,
//! its children, its referrers and the entities it references. They live only
//! in the projection, never in the value rows or the history.

use std::collections::HashMap;

use diesel::QueryableByName;
use diesel::sql_types::{Array, Jsonb, Nullable, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value as Json;

use crate::db::values::ValueRow;
use crate::formula::{FieldRef, Formula, FormulaValue};
use crate::model::PROPERTY_TYPE;
use crate::model::definition::PropertyDefinition;
use crate::view;

#[derive(QueryableByName)]
struct Related {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Jsonb)]
    doc: Json,
}

/// The values of the entity's formula properties, by property name, as value
/// objects (`{"number":..}`, `{"string":..}`, `{"boolean":..}`); a formula that
/// gives no value is absent.
pub async fn evaluate(
    conn: &mut AsyncPgConnection,
    db: &str,
    id: &str,
    rows: &[ValueRow],
    definitions: &HashMap<String, PropertyDefinition>,
) -> diesel::QueryResult<Vec<(String, Vec<Json>)>> {
    let mut formulas: Vec<(&String, Formula)> = definitions
        .iter()
        .filter_map(|(prop, definition)| Some((prop, Formula::parse(definition.formula.as_deref()?).ok()?)))
        .collect();
    formulas.sort_by(|a, b| a.0.cmp(b.0));
    let mut results: Vec<(String, Vec<Json>)> = Vec::new();
    for (prop, formula) in formulas {
        let mut inputs: HashMap<FieldRef, Vec<FormulaValue>> = HashMap::new();
        for reference in formula.references() {
            let values = match &reference {
                FieldRef::Id => vec![FormulaValue::Text(id.to_owned())],
                FieldRef::Own(own) => match results.iter().find(|(name, _)| name == own) {
                    Some((_, computed)) => computed.iter().filter_map(FormulaValue::from_value_json).collect(),
                    None => rows
                        .iter()
                        .filter(|row| &row.prop == own)
                        .filter_map(|row| FormulaValue::from_value_json(&Json::Object(view::stored_value_json(row))))
                        .collect(),
                },
                FieldRef::Child { entity_type, prop } => {
                    let related = related(
                        conn,
                        "SELECT c.id, c.doc FROM entities c LEFT JOIN entities t ON t.db = c.db AND t.id = c.type_id \
                         WHERE c.db = $1 AND c.parent_ids @> ARRAY[$2] AND c.deleted_at IS NULL \
                         AND ($3::text IS NULL OR t.name = $3) ORDER BY c.id",
                        db,
                        vec![id.to_owned()],
                        entity_type.as_deref(),
                    )
                    .await?;
                    values_of(&related, prop)
                }
                FieldRef::Referrer { entity_type, prop } => {
                    let related = related(
                        conn,
                        "SELECT r.id, r.doc FROM entities r LEFT JOIN entities t ON t.db = r.db AND t.id = r.type_id \
                         WHERE r.db = $1 AND r.deleted_at IS NULL AND ($3::text IS NULL OR t.name = $3) \
                         AND r.id IN (SELECT v.entity_id FROM property_values v WHERE v.db = $1 \
                         AND v.reference = ANY($2) AND v.deleted_at IS NULL AND v.prop NOT LIKE '\\_%') ORDER BY r.id",
                        db,
                        vec![id.to_owned()],
                        entity_type.as_deref(),
                    )
                    .await?;
                    values_of(&related, prop)
                }
                FieldRef::Reference { via, entity_type, prop } => {
                    let targets: Vec<String> = rows
                        .iter()
                        .filter(|row| &row.prop == via)
                        .filter_map(|row| row.reference.clone())
                        .collect();
                    let related = related(
                        conn,
                        "SELECT e.id, e.doc FROM entities e LEFT JOIN entities t ON t.db = e.db AND t.id = e.type_id \
                         WHERE e.db = $1 AND e.id = ANY($2) AND e.deleted_at IS NULL \
                         AND ($3::text IS NULL OR t.name = $3) ORDER BY e.id",
                        db,
                        targets,
                        entity_type.as_deref(),
                    )
                    .await?;
                    values_of(&related, prop)
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

async fn related(
    conn: &mut AsyncPgConnection,
    sql: &'static str,
    db: &str,
    ids: Vec<String>,
    entity_type: Option<&str>,
) -> diesel::QueryResult<Vec<Related>> {
    diesel::sql_query(sql)
        .bind::<Text, _>(db)
        .bind::<Array<Text>, _>(ids)
        .bind::<Nullable<Text>, _>(entity_type)
        .load(conn)
        .await
}

/// The values of `prop` (or the ids, for `_id`) of related entities, as their
/// projections show them (credentials masked, formula results included).
fn values_of(related: &[Related], prop: &str) -> Vec<FormulaValue> {
    related
        .iter()
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

/// Entities whose formulas may read entity `id`: its parents, the entities it
/// references and those referencing it, where their type defines a formula.
pub async fn dependents(
    conn: &mut AsyncPgConnection,
    db: &str,
    id: &str,
    near: Vec<String>,
) -> diesel::QueryResult<Vec<String>> {
    let types = formula_types(conn, db).await?;
    if types.is_empty() {
        return Ok(Vec::new());
    }
    // The candidates come first and are few; their types are checked after.
    let found: Vec<Id> = diesel::sql_query(
        "SELECT e.id FROM entities e WHERE e.db = $1 AND e.deleted_at IS NULL AND e.type_id = ANY($4) \
         AND e.id IN (SELECT unnest($2::text[]) UNION ALL SELECT v.entity_id FROM property_values v \
              WHERE v.db = $1 AND v.reference = $3 AND v.deleted_at IS NULL AND v.reference IS NOT NULL \
              AND v.prop NOT LIKE '\\_%')",
    )
    .bind::<Text, _>(db)
    .bind::<Array<Text>, _>(near)
    .bind::<Text, _>(id)
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
