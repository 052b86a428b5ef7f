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

/// Entities whose formulas may read entity `id`: its parents, the entities it
/// references and those referencing it, where their type defines a formula.
pub async fn dependents(
    conn: &mut AsyncPgConnection,
    db: &str,
    id: &str,
    near: Vec<String>,
) -> diesel::QueryResult<Vec<String>> {
    #[derive(QueryableByName)]
    struct Id {
        #[diesel(sql_type = Text)]
        id: String,
    }
    let found: Vec<Id> = diesel::sql_query(
        "SELECT e.id FROM entities e WHERE e.db = $1 AND e.deleted_at IS NULL \
         AND (e.id = ANY($2) OR e.id IN (SELECT v.entity_id FROM property_values v WHERE v.db = $1 \
              AND v.reference = $3 AND v.deleted_at IS NULL AND v.prop NOT LIKE '\\_%')) \
         AND EXISTS (SELECT 1 FROM entities d JOIN entities k ON k.db = d.db AND k.id = d.type_id \
              AND k.name = 'property' WHERE d.db = e.db AND d.parent_ids @> ARRAY[e.type_id] \
              AND d.deleted_at IS NULL AND d.doc ? 'formula')",
    )
    .bind::<Text, _>(db)
    .bind::<Array<Text>, _>(near)
    .bind::<Text, _>(id)
    .load(conn)
    .await?;
    Ok(found.into_iter().map(|row| row.id).collect())
}
