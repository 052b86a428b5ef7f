//! A batch's body read into its operations, bounded and checked before any
//! work: its shape, its limits, and that every `$name` is defined by an
//! earlier create.

use std::collections::HashSet;

use serde_json::{Map, Value as Json};

use crate::error::{ApiError, ErrorCode};
use crate::model::API_KEY_PROPERTY;
use crate::model::value::parse_values;
use crate::write::keys::MAX_KEYS_PER_WRITE;
use crate::write::validate;
use crate::write::{Batch, BatchOp, EntityId, RefUse};

/// What one batch may hold: `limits.max_batch_operations` operations, and
/// `limits.max_values_per_write` values in each (ten times that in all).
pub struct BatchLimits {
    pub operations: usize,
    pub values_per_write: usize,
}

/// Stands for an entity a `$name` names until the writer knows its id.
const UNRESOLVED: &str = "000000000000000000000000";

/// The batch `body` asks for: 400 `invalid_body` for a body of another
/// shape (with `operation` when one operation is at fault), 413
/// `too_many_values` over the limits.
pub fn parse(body: &Json, limits: &BatchLimits) -> Result<Batch, ApiError> {
    let Json::Object(fields) = body else {
        return Err(invalid(
            "The body is a JSON object: {\"operations\":[...],\"dry_run\"?:bool}",
        ));
    };
    let dry_run = match fields.get("dry_run") {
        None | Some(Json::Null) => false,
        Some(Json::Bool(dry_run)) => *dry_run,
        Some(_) => return Err(invalid("dry_run is a boolean")),
    };
    let operations = match fields.get("operations") {
        Some(Json::Array(operations)) if !operations.is_empty() => operations,
        _ => return Err(invalid("operations is a non-empty array")),
    };
    check_limits(operations, limits)?;
    let mut defined = HashSet::new();
    let operations = operations
        .iter()
        .enumerate()
        .map(|(index, operation)| {
            parse_operation(operation, &mut defined)
                .and_then(|operation| {
                    validate::check_size(operation.values(), limits.values_per_write)?;
                    Ok(operation)
                })
                .map_err(|error| error.in_operation(index))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Batch { operations, dry_run })
}

/// More operations than allowed, more values in all than ten writes hold,
/// or more API keys than one write may ask for (each is a slow hash) → 413,
/// counted on the body as it is, before anything is read further.
fn check_limits(operations: &[Json], limits: &BatchLimits) -> Result<(), ApiError> {
    let too_many = |message: String| Err(ApiError::new(ErrorCode::TooManyValues, message));
    if operations.len() > limits.operations {
        return too_many(format!("A batch holds at most {} operations", limits.operations));
    }
    let values: Vec<&Json> = operations
        .iter()
        .flat_map(|operation| match &operation["properties"] {
            Json::Array(values) => values.iter().collect(),
            value @ Json::Object(_) => vec![value],
            _ => Vec::new(),
        })
        .collect();
    let most = limits.values_per_write.saturating_mul(10);
    if values.len() > most {
        return too_many(format!("A batch holds at most {most} values"));
    }
    if values.iter().filter(|value| value["type"] == API_KEY_PROPERTY).count() > MAX_KEYS_PER_WRITE {
        return too_many(format!(
            "A batch holds at most {MAX_KEYS_PER_WRITE} {API_KEY_PROPERTY} values"
        ));
    }
    Ok(())
}

fn parse_operation(operation: &Json, defined: &mut HashSet<String>) -> Result<BatchOp, ApiError> {
    let Json::Object(fields) = operation else {
        return Err(invalid("Each operation is a JSON object with `op`"));
    };
    let text = |name: &str| match fields.get(name) {
        Some(Json::String(text)) => Ok(text.clone()),
        _ => Err(invalid(format!("{name} is required: a string"))),
    };
    match fields.get("op").and_then(Json::as_str) {
        Some("create") => {
            let name = match fields.get("ref") {
                None => None,
                Some(Json::String(name)) if is_ref(name) => Some(name.clone()),
                Some(_) => return Err(invalid("ref is `$` and 1 to 64 letters, digits or `_`")),
            };
            let (values, refs) = values_of(fields, defined)?;
            if let Some(name) = &name
                && !defined.insert(name.clone())
            {
                return Err(invalid(format!("{name} is the ref of an earlier create")));
            }
            Ok(BatchOp::Create { name, values, refs })
        }
        Some("add") => {
            let entity = entity_of(&text("entity")?, defined)?;
            let (values, refs) = values_of(fields, defined)?;
            Ok(BatchOp::Add { entity, values, refs })
        }
        Some("delete_property") => Ok(BatchOp::DeleteProperty {
            value_id: text("property")?,
        }),
        Some("delete_entity") => Ok(BatchOp::DeleteEntity {
            entity: entity_of(&text("entity")?, defined)?,
        }),
        _ => Err(invalid("op is one of create, add, delete_property, delete_entity")),
    }
}

/// `^\$[A-Za-z0-9_]{1,64}$`
fn is_ref(name: &str) -> bool {
    name.strip_prefix('$').is_some_and(|rest| {
        (1..=64).contains(&rest.len()) && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

/// An operation's `entity`: a `$name` an earlier create defined, or an id.
fn entity_of(entity: &str, defined: &HashSet<String>) -> Result<EntityId, ApiError> {
    if !entity.starts_with('$') {
        return Ok(EntityId::Id(entity.to_owned()));
    }
    known(entity, defined)?;
    Ok(EntityId::Ref(entity.to_owned()))
}

fn known(name: &str, defined: &HashSet<String>) -> Result<(), ApiError> {
    if !is_ref(name) {
        return Err(invalid(format!(
            "{name} is not a ref: `$` and 1 to 64 letters, digits or `_`"
        )));
    }
    if !defined.contains(name) {
        return Err(invalid(format!("{name} is not defined by an earlier create")));
    }
    Ok(())
}

/// An operation's `properties` as a single write reads them, each `$name`
/// reference noted and left for the writer to resolve.
fn values_of(
    fields: &Map<String, Json>,
    defined: &HashSet<String>,
) -> Result<(Vec<crate::model::value::ValueInput>, Vec<RefUse>), ApiError> {
    let mut values = match fields.get("properties") {
        Some(Json::Array(values)) => values.clone(),
        Some(value @ Json::Object(_)) => vec![value.clone()],
        _ => return Err(invalid("properties is required: an array of values")),
    };
    let mut refs = Vec::new();
    for (index, value) in values.iter_mut().enumerate() {
        if let Some(Json::String(name)) = value.get("reference")
            && name.starts_with('$')
        {
            known(name, defined)?;
            refs.push(RefUse {
                value: index,
                name: name.clone(),
            });
            value["reference"] = Json::String(UNRESOLVED.to_owned());
        }
    }
    Ok((parse_values(&Json::Array(values))?, refs))
}

fn invalid(message: impl Into<std::borrow::Cow<'static, str>>) -> ApiError {
    ApiError::new(ErrorCode::InvalidBody, message)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const LIMITS: BatchLimits = BatchLimits {
        operations: 3,
        values_per_write: 2,
    };

    fn refusal(body: Json) -> (u16, &'static str, Option<usize>) {
        let error = parse(&body, &LIMITS).unwrap_err();
        (error.status().as_u16(), error.code.as_str(), error.operation)
    }

    fn create(name: &str) -> Json {
        json!({"op": "create", "ref": name, "properties": [{"type": "_type", "reference": "6571f3a4c2b9e8d7f6a5b401"}]})
    }

    #[test]
    fn a_ref_is_a_dollar_and_1_to_64_word_characters() {
        assert!(is_ref("$a") && is_ref("$author_2") && is_ref(&format!("${}", "x".repeat(64))));
        for bad in ["a", "$", "$a-b", "$ä", "$$a", &format!("${}", "x".repeat(65))] {
            assert!(!is_ref(bad), "{bad}");
        }
    }

    #[test]
    fn refs_are_noted_and_resolved_later() {
        let batch = parse(
            &json!({"operations": [create("$a"), {"op": "add", "entity": "$a", "properties": [{"type": "x", "reference": "$a"}]}]}),
            &LIMITS,
        )
        .unwrap();
        let BatchOp::Add { entity, refs, values } = &batch.operations[1] else {
            panic!("an add")
        };
        assert_eq!(entity, &EntityId::Ref("$a".into()));
        assert_eq!(
            refs,
            &[RefUse {
                value: 0,
                name: "$a".into()
            }]
        );
        assert_eq!(values.len(), 1);
        assert!(!batch.dry_run);
    }

    #[test]
    fn bad_bodies_are_400_with_the_operation_at_fault() {
        assert_eq!(refusal(json!([])), (400, "invalid_body", None));
        assert_eq!(refusal(json!({"operations": []})), (400, "invalid_body", None));
        assert_eq!(
            refusal(json!({"operations": [{"op": "drop"}]})),
            (400, "invalid_body", Some(0))
        );
        assert_eq!(
            refusal(json!({"operations": [create("$a"), create("$a")]})),
            (400, "invalid_body", Some(1))
        );
        assert_eq!(
            refusal(json!({"operations": [create("a")]})),
            (400, "invalid_body", Some(0))
        );
        let early = json!({"op": "delete_entity", "entity": "$a"});
        assert_eq!(
            refusal(json!({"operations": [early, create("$a")]})),
            (400, "invalid_body", Some(0))
        );
    }

    #[test]
    fn limits_are_413_before_the_operations_are_read() {
        let four = json!({"operations": [{"op": "x"}, {"op": "x"}, {"op": "x"}, {"op": "x"}]});
        assert_eq!(refusal(four), (413, "too_many_values", None));
        let values: Vec<Json> = (0..21).map(|_| json!({"type": "x"})).collect();
        let seven = json!({"operations": [{"op": "x", "properties": values}]});
        assert_eq!(refusal(seven), (413, "too_many_values", None));
        let three = json!({"operations": [{"op": "create", "properties": [{"type": "x", "string": "a"}, {"type": "x", "string": "a"}, {"type": "x", "string": "a"}]}]});
        assert_eq!(refusal(three), (413, "too_many_values", Some(0)));
    }
}
