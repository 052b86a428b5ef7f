//! Each value of a write checked against rights, the system properties'
//! rules, the type's definitions and the live values, and turned into the
//! row it will be. Nothing is written here.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use diesel_async::AsyncPgConnection;

use super::access::may_leave_parent;
use super::cache::TransactionCache;
use super::keys::MAX_KEYS_PER_WRITE;
use super::replaced::SINGLE_VALUED;
use crate::auth::api_key::GeneratedKey;
use crate::db::projection::{TypeCache, TypeInfo};
use crate::db::values::{self, ValueRecord};
use crate::error::{ApiError, ErrorCode};
use crate::model::definition::{PropertyDefinition, SystemProperty, is_billing_property};
use crate::model::ids::new_id;
use crate::model::stored::ValueRow;
use crate::model::value::{Value, ValueInput};
use crate::model::{API_KEY_PROPERTY, LOGIN_PROPERTY};
use crate::rights::{Right, RightsLists, Sharing, has_right};

/// Bounds what one write may cost, before anything else is done with it: at
/// most `max_values` values (`limits.max_values_per_write`),
/// `MAX_KEYS_PER_WRITE` API keys and one invitation (each is a mail);
/// more → 413 `too_many_values`.
pub fn check_size(values: &[ValueInput], max_values: usize) -> Result<(), ApiError> {
    let too_many = |message: String| Err(ApiError::new(ErrorCode::TooManyValues, message));
    if values.len() > max_values {
        return too_many(format!("A write holds at most {max_values} values"));
    }
    if values.iter().filter(|v| v.prop == API_KEY_PROPERTY).count() > MAX_KEYS_PER_WRITE {
        return too_many(format!(
            "A write holds at most {MAX_KEYS_PER_WRITE} {API_KEY_PROPERTY} values"
        ));
    }
    if values.iter().filter(|v| v.prop == LOGIN_PROPERTY).count() > 1 {
        return too_many(format!(
            "A write holds at most one {LOGIN_PROPERTY} value (an invitation)"
        ));
    }
    Ok(())
}

/// What validation needs to know about the entity being written.
pub(super) struct Target<'a> {
    pub db: &'a str,
    pub actor: &'a str,
    pub now: DateTime<Utc>,
    pub entity_id: &'a str,
    pub lists: RightsLists,
    pub is_new: bool,
    pub entity_type: Arc<TypeInfo>,
    pub live: Vec<ValueRow>,
}

impl Target<'_> {
    /// A new row of this entity holding `value`, written now by the actor.
    pub fn new_row(&self, prop: &str, value: &Value, language: Option<String>) -> ValueRecord {
        let mut row = ValueRecord {
            db: self.db.to_owned(),
            id: new_id(),
            entity_id: self.entity_id.to_owned(),
            prop: prop.to_owned(),
            language,
            created_at: self.now,
            created_by: Some(self.actor.to_owned()),
            ..ValueRecord::default()
        };
        match value.clone() {
            Value::String(text) => row.string = Some(text),
            Value::Number(number) => row.number = Some(number),
            Value::Boolean(flag) => row.boolean = Some(flag),
            Value::Date(date) => row.date = Some(date),
            Value::Datetime(at) => row.datetime = Some(at),
            Value::Reference(id) => row.reference = Some(id),
            Value::File {
                filename,
                filesize,
                filetype,
            } => {
                row.filename = Some(filename);
                row.filesize = Some(filesize);
                row.filetype = Some(filetype);
            }
            Value::CounterString { string, number } => {
                row.string = Some(string);
                row.number = Some(number);
            }
            // numbered in `validate`, under the counter's lock
            Value::Counter { .. } => {}
        }
        row
    }
}

/// Checks every input against rights, definitions and the live values, and
/// turns them into rows. Nothing is written here. New API keys come back
/// apart, by value id: only their hash is stored.
pub(super) async fn validate(
    conn: &mut AsyncPgConnection,
    cache: &mut TransactionCache,
    target: &Target<'_>,
    inputs: &[ValueInput],
    mut keys: Vec<GeneratedKey>,
) -> Result<(Vec<ValueRecord>, HashMap<String, String>), ApiError> {
    let mut rows = Vec::with_capacity(inputs.len());
    let mut plain_keys = HashMap::new();
    one_of_each_single_valued(inputs)?;
    if target.is_new && super::webhook::is_webhook(&target.entity_type) {
        cache.new_webhooks = true;
    }
    for input in inputs {
        let needed = check_property(conn, &mut cache.types, target, input).await?;
        if needed.is_some_and(|needed| !has_right(&target.lists, target.actor, needed)) {
            return Err(ApiError::forbidden(format!("Missing rights to write {}", input.prop)));
        }
        if let Some(replaced) = &input.replaces {
            let live = overwritten(&target.live, inputs, input, replaced)?;
            if input.prop == "_parent"
                && let Some(parent) = &live.reference
            {
                may_leave_parent(conn, target.db, target.actor, parent).await?;
            }
        } else if input.prop == "_type" && !target.is_new {
            return Err(ApiError::new(
                ErrorCode::InvalidType,
                "An entity has exactly one _type; change it by overwriting that value by its _id",
            ));
        }
        // `_type` and `_parent` targets were checked with their rules above
        if let Value::Reference(referenced) = &input.value
            && referenced != target.entity_id
            && !matches!(input.prop.as_str(), "_type" | "_parent")
            && !cache.live.contains(referenced)
        {
            if !values::entity_exists(conn, target.db, referenced).await? {
                return Err(ApiError::new(
                    ErrorCode::InvalidReference,
                    format!("{}: entity {referenced} not found", input.prop),
                ));
            }
            cache.live.insert(referenced.clone());
        }
        let mut row = target.new_row(&input.prop, &input.value, input.language.clone());
        if let Value::Counter { step } = input.value {
            // the sequence goes on from numbers of new entities not stored yet
            cache.pending.store(conn, target.db).await?;
            let (string, number) = cache.counters.next(conn, target.db, &input.prop, step).await?;
            row.string = Some(string);
            row.number = Some(number);
        } else {
            cache.counters.forget(&input.prop);
        }
        if input.prop == API_KEY_PROPERTY {
            let key = keys
                .pop()
                .ok_or_else(|| ApiError::internal("key generation", "too few keys"))?;
            row.string = None;
            plain_keys.insert(row.id.clone(), key.plain);
            row.secret = Some(key.hash);
            row.secret_lookup = Some(key.lookup);
        } else if super::webhook::is_secret(&target.entity_type, &input.prop) {
            super::webhook::generate_secret(&target.lists, target.actor, &mut row, &mut plain_keys)?;
        }
        rows.push(row);
    }
    Ok((rows, plain_keys))
}

/// A write holds at most one value of each single-valued property.
fn one_of_each_single_valued(inputs: &[ValueInput]) -> Result<(), ApiError> {
    for prop in SINGLE_VALUED {
        if inputs.iter().filter(|input| input.prop == prop).count() > 1 {
            return Err(ApiError::new(
                ErrorCode::InvalidValue,
                format!("An entity has exactly one {prop}; write one value"),
            ));
        }
    }
    Ok(())
}

/// The live value `input` overwrites (`replaced`, its `_id`): one of this
/// property, and overwritten by no other input of the write.
fn overwritten<'a>(
    live: &'a [ValueRow],
    inputs: &[ValueInput],
    input: &ValueInput,
    replaced: &str,
) -> Result<&'a ValueRow, ApiError> {
    let twice = inputs
        .iter()
        .filter(|other| other.replaces.as_deref() == Some(replaced))
        .count()
        > 1;
    live.iter()
        .find(|row| row.id == replaced && row.prop == input.prop)
        .filter(|_| !twice)
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidValueId,
                format!("{replaced} is not a live {} value of this entity", input.prop),
            )
        })
}

/// Validates one input's property and value; answers the right it needs
/// (none when the entity itself adds its own API key).
async fn check_property(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    target: &Target<'_>,
    input: &ValueInput,
) -> Result<Option<Right>, ApiError> {
    let prop = input.prop.as_str();
    if is_billing_property(prop) {
        return Err(ApiError::forbidden("billing_* values are managed by the service"));
    }
    if let Some(system) = SystemProperty::parse(prop) {
        if !system.is_writable() {
            return Err(ApiError::forbidden(format!("{prop} is set by the service")));
        }
        if input.value.field() != system.field() {
            return Err(wrong_field(prop, system.field().name()));
        }
        match (system, &input.value) {
            (SystemProperty::Type, Value::Reference(type_id))
                if !types.get(conn, target.db, type_id).await?.is_entity_type() =>
            {
                return Err(ApiError::new(
                    ErrorCode::InvalidType,
                    "_type must reference an entity type",
                ));
            }
            (SystemProperty::Parent, Value::Reference(parent_id)) => {
                // Missing, invisible and merely visible parents answer alike:
                // the answer must not tell whether the parent exists.
                let parent = values::live_entity(conn, target.db, parent_id, false).await?;
                if !parent.is_some_and(|parent| has_right(&parent.lists(), target.actor, Right::Expander)) {
                    return Err(ApiError::forbidden("_parent needs _expander on the parent entity"));
                }
            }
            (SystemProperty::Sharing, Value::String(sharing)) if Sharing::parse(sharing).is_none() => {
                return Err(ApiError::new(
                    ErrorCode::InvalidSharing,
                    "_sharing is one of public, domain, private",
                ));
            }
            _ => {}
        }
        if input.language.is_some() {
            return Err(not_multilingual(prop));
        }
        return Ok(Some(if system.needs_owner() {
            Right::Owner
        } else {
            Right::Editor
        }));
    }
    if prop.starts_with('_') {
        return Err(ApiError::new(
            ErrorCode::UnknownSystemProperty,
            format!("{prop} is not a system property"),
        ));
    }
    match prop {
        API_KEY_PROPERTY => {
            if !matches!(input.value, Value::String(_)) {
                return Err(wrong_field(prop, "string"));
            }
            // Only the entity's owner or the entity itself may add a key.
            return Ok((target.actor != target.entity_id).then_some(Right::Owner));
        }
        LOGIN_PROPERTY => {
            // A string here is an invitation; on an existing entity its link
            // is mailed to the entity's e-mail address.
            if !matches!(input.value, Value::String(_)) {
                return Err(wrong_field(prop, "string"));
            }
            let has_email = target.live.iter().any(|v| v.prop == "email" && v.string.is_some());
            if !target.is_new && !has_email {
                return Err(ApiError::new(ErrorCode::NoEmail, "No email"));
            }
            // Only the entity's owner or the person itself may invite a login to it.
            return Ok((target.actor != target.entity_id).then_some(Right::Owner));
        }
        _ => {}
    }
    if let Some(definition) = target.entity_type.definitions.get(prop) {
        check_definition(definition, input)?;
    }
    Ok(Some(Right::Editor))
}

/// A value of a defined property: of its type's field, and with a language
/// only when it is multilingual.
fn check_definition(definition: &PropertyDefinition, input: &ValueInput) -> Result<(), ApiError> {
    if let Some(value_type) = definition.value_type
        && value_type.field() != input.value.field()
    {
        return Err(wrong_field(&input.prop, value_type.field().name()));
    }
    if input.language.is_some() && !definition.multilingual {
        return Err(not_multilingual(&input.prop));
    }
    Ok(())
}

fn wrong_field(prop: &str, field: &str) -> ApiError {
    ApiError::new(ErrorCode::InvalidValue, format!("{prop} takes a `{field}` value"))
}

fn not_multilingual(prop: &str) -> ApiError {
    ApiError::new(ErrorCode::InvalidLanguage, format!("{prop} is not multilingual"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn text(prop: &str) -> ValueInput {
        ValueInput::new(prop, Value::String("a".into()))
    }

    fn refusal(result: Result<impl std::fmt::Debug, ApiError>) -> (u16, String) {
        let error = result.unwrap_err();
        (error.status().as_u16(), error.message.into_owned())
    }

    #[test]
    fn a_write_is_bounded_in_values_and_api_keys() {
        let titles: Vec<ValueInput> = (0..3).map(|_| text("title")).collect();
        assert!(check_size(&titles, 3).is_ok());
        assert_eq!(
            refusal(check_size(&titles, 2)),
            (413, "A write holds at most 2 values".into())
        );
        let keys: Vec<ValueInput> = (0..=MAX_KEYS_PER_WRITE).map(|_| text(API_KEY_PROPERTY)).collect();
        assert!(check_size(&keys[1..], 100).is_ok());
        assert_eq!(
            refusal(check_size(&keys, 100)),
            (413, format!("A write holds at most 10 {API_KEY_PROPERTY} values"))
        );
        let invitations = [text(LOGIN_PROPERTY), text(LOGIN_PROPERTY)];
        assert!(check_size(&invitations[1..], 100).is_ok());
        assert_eq!(
            refusal(check_size(&invitations, 100)),
            (
                413,
                format!("A write holds at most one {LOGIN_PROPERTY} value (an invitation)")
            )
        );
    }

    #[test]
    fn a_write_holds_one_value_of_each_single_valued_property() {
        assert!(one_of_each_single_valued(&[text("_sharing"), text("title"), text("title")]).is_ok());
        assert_eq!(
            refusal(one_of_each_single_valued(&[text("_sharing"), text("_sharing")])),
            (400, "An entity has exactly one _sharing; write one value".into())
        );
    }

    #[test]
    fn an_overwrite_names_a_live_value_of_its_property_once() {
        let live = [ValueRow::from(&ValueRecord {
            id: "v1".into(),
            prop: "title".into(),
            ..ValueRecord::default()
        })];
        let overwrite = |prop: &str| ValueInput {
            replaces: Some("v1".into()),
            ..text(prop)
        };
        assert_eq!(overwritten(&live, &[], &overwrite("title"), "v1").unwrap().id, "v1");
        let not_live = (400, "v1 is not a live name value of this entity".to_owned());
        assert_eq!(refusal(overwritten(&live, &[], &overwrite("name"), "v1")), not_live);
        let twice = [overwrite("title"), overwrite("title")];
        assert_eq!(
            refusal(overwritten(&live, &twice, &twice[0], "v1")),
            (400, "v1 is not a live title value of this entity".into())
        );
    }

    #[test]
    fn a_defined_property_takes_its_field_and_a_language_only_when_multilingual() {
        let pages = PropertyDefinition::from_doc(&json!({"type": [{"string": "number"}]}));
        assert!(check_definition(&pages, &ValueInput::new("pages", Value::Number(3.0))).is_ok());
        assert_eq!(
            refusal(check_definition(&pages, &text("pages"))),
            (400, "pages takes a `number` value".into())
        );
        let in_english = ValueInput {
            language: Some("en".into()),
            ..text("title")
        };
        let title = PropertyDefinition::from_doc(&json!({"type": [{"string": "string"}]}));
        assert_eq!(
            refusal(check_definition(&title, &in_english)),
            (400, "title is not multilingual".into())
        );
        let multilingual =
            PropertyDefinition::from_doc(&json!({"type": [{"string": "string"}], "multilingual": [{"boolean": true}]}));
        assert!(check_definition(&multilingual, &in_english).is_ok());
    }

    #[test]
    fn a_new_row_holds_the_value_in_its_field_written_now_by_the_actor() {
        let target = Target {
            db: "demo",
            actor: "p1",
            now: DateTime::<Utc>::UNIX_EPOCH,
            entity_id: "e1",
            lists: RightsLists::default(),
            is_new: true,
            entity_type: Arc::default(),
            live: Vec::new(),
        };
        let file = Value::File {
            filename: "a.png".into(),
            filesize: 3,
            filetype: "image/png".into(),
        };
        let row = target.new_row("photo", &file, Some("en".into()));
        assert_eq!(
            (
                row.db.as_str(),
                row.entity_id.as_str(),
                row.prop.as_str(),
                row.created_by.as_deref()
            ),
            ("demo", "e1", "photo", Some("p1"))
        );
        assert_eq!(
            (
                row.filename.as_deref(),
                row.filesize,
                row.filetype.as_deref(),
                row.language.as_deref()
            ),
            (Some("a.png"), Some(3), Some("image/png"), Some("en"))
        );
        assert_eq!(row.id.len(), 24);
        let counted = target.new_row("no", &Value::Counter { step: 1.0 }, None);
        assert_eq!((counted.string, counted.number), (None, None));
        let reference = target.new_row("author", &Value::Reference("p2".into()), None);
        assert_eq!(reference.reference.as_deref(), Some("p2"));
        assert_eq!(reference.string, None);
    }
}
