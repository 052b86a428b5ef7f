//! `DuplicateEntity`: copies of an entity's live values, each copy created
//! as `CreateEntity` creates an entity, all in the write's transaction.

use chrono::{DateTime, Utc};
use diesel_async::AsyncPgConnection;

use super::access::{self, Reach};
use super::cache::TransactionCache;
use super::{WriteOutcome, create};
use crate::db::projection::TypeInfo;
use crate::db::values;
use crate::error::{ApiError, ErrorCode};
use crate::model::definition::is_billing_property;
use crate::model::stored::ValueRow;
use crate::model::value::{Value, ValueInput, ValueType};
use crate::model::{API_KEY_PROPERTY, LOGIN_PROPERTY};
use crate::rights::Right;

/// What to copy: `count` copies of entity `entity_id`, without the values
/// of the `ignored` properties; at most `max_values` values in all.
#[derive(Debug, Clone)]
pub struct Duplication {
    pub entity_id: String,
    pub count: usize,
    pub ignored: Vec<String>,
    pub max_values: usize,
}

pub(super) async fn duplicate_entity(
    conn: &mut AsyncPgConnection,
    cache: &mut TransactionCache,
    db: &str,
    actor: &str,
    now: DateTime<Utc>,
    duplication: &Duplication,
) -> Result<WriteOutcome, ApiError> {
    let (source_id, refusal) = (&duplication.entity_id, "Only an _owner may duplicate the entity");
    let source = access::entity_with_right(conn, db, actor, source_id, Reach::READ, Right::Owner, refusal).await?;
    let entity_type = cache
        .types
        .get(conn, db, source.type_id.as_deref().unwrap_or_default())
        .await?;
    let inputs: Vec<ValueInput> = values::live_values(conn, db, &source.id)
        .await?
        .iter()
        .filter(|row| !duplication.ignored.contains(&row.prop))
        .filter_map(|row| copied(row, &entity_type))
        .collect();
    let max_values = duplication.max_values.saturating_mul(10);
    if duplication.count.saturating_mul(inputs.len()) > max_values {
        return Err(ApiError::new(
            ErrorCode::TooManyValues,
            format!("A duplicate writes at most {max_values} values in all copies"),
        ));
    }
    let mut copies = Vec::with_capacity(duplication.count);
    for _ in 0..duplication.count {
        copies.push(create::create_entity(conn, cache, db, actor, now, inputs.clone(), Vec::new()).await?);
    }
    Ok(WriteOutcome::Copies(copies))
}

/// The value a copy gets of `row`, if any: never a file, a credential, a
/// `billing_*` or `_created` value, nor one of a formula (computed afresh);
/// a counter takes the next number of its sequence.
fn copied(row: &ValueRow, entity_type: &TypeInfo) -> Option<ValueInput> {
    let prop = row.prop.as_str();
    let left_out = [API_KEY_PROPERTY, LOGIN_PROPERTY, "_created"].contains(&prop)
        || is_billing_property(prop)
        || super::webhook::is_secret(entity_type, prop)
        || row.filename.is_some();
    let definition = entity_type.definitions.get(prop);
    if left_out || definition.is_some_and(|definition| definition.formula.is_some()) {
        return None;
    }
    let value = if definition.is_some_and(|definition| definition.value_type == Some(ValueType::Counter)) {
        Value::Counter { step: 1.0 }
    } else {
        stored_value(row)?
    };
    Some(ValueInput {
        language: row.language.clone(),
        ..ValueInput::new(prop, value)
    })
}

/// The value a stored row holds, in the field it is stored in.
fn stored_value(row: &ValueRow) -> Option<Value> {
    Some(match row {
        ValueRow {
            string: Some(string),
            number: Some(number),
            ..
        } => Value::CounterString {
            string: string.clone(),
            number: *number,
        },
        ValueRow {
            string: Some(string), ..
        } => Value::String(string.clone()),
        ValueRow {
            number: Some(number), ..
        } => Value::Number(*number),
        ValueRow {
            boolean: Some(flag), ..
        } => Value::Boolean(*flag),
        ValueRow { date: Some(date), .. } => Value::Date(*date),
        ValueRow { datetime: Some(at), .. } => Value::Datetime(*at),
        ValueRow {
            reference: Some(id), ..
        } => Value::Reference(id.clone()),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::definition::PropertyDefinition;
    use crate::model::stored::tests::value;

    fn type_with(name: &str, definition: serde_json::Value) -> TypeInfo {
        TypeInfo {
            definitions: [(name.to_owned(), PropertyDefinition::from_doc(&definition))].into(),
            ..TypeInfo::default()
        }
    }

    #[test]
    fn files_credentials_billing_and_created_are_not_copied() {
        let plain = TypeInfo::default();
        let mut file = value("f", "photo");
        file.filename = Some("a.png".into());
        for mut row in [
            value("k", API_KEY_PROPERTY),
            value("l", LOGIN_PROPERTY),
            value("b", "billing_entities_limit"),
            value("c", "_created"),
            file,
        ] {
            row.string = Some("x".into());
            assert_eq!(copied(&row, &plain), None, "{}", row.prop);
        }
        let mut title = value("t", "title");
        title.string = Some("Dune".into());
        title.language = Some("en".into());
        let copy = copied(&title, &plain).unwrap();
        assert_eq!(
            (copy.value, copy.language),
            (Value::String("Dune".into()), Some("en".into()))
        );
    }

    #[test]
    fn a_counter_takes_the_next_number_and_a_formula_is_computed_afresh() {
        let mut row = value("n", "number");
        row.string = Some("A-7".into());
        row.number = Some(7.0);
        let counter = type_with("number", serde_json::json!({"type": [{"string": "counter"}]}));
        assert_eq!(copied(&row, &counter).unwrap().value, Value::Counter { step: 1.0 });
        let formula = type_with("number", serde_json::json!({"formula": [{"string": "1 2 SUM"}]}));
        assert_eq!(copied(&row, &formula), None);
        let undefined = copied(&row, &TypeInfo::default()).unwrap().value;
        assert_eq!(
            undefined,
            Value::CounterString {
                string: "A-7".into(),
                number: 7.0
            }
        );
    }
}
