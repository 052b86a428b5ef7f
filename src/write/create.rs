//! `CreateEntity`: a new entity from its values, owned by its creator.

use chrono::{DateTime, Utc};
use diesel_async::AsyncPgConnection;

use super::cache::TransactionCache;
use super::validate::{self, Target};
use super::{WriteOutcome, WrittenValue};
use crate::auth::api_key::GeneratedKey;
use crate::db::projection::{self, NewEntity};
use crate::db::values;
use crate::error::{ApiError, ErrorCode};
use crate::model::ids::new_id;
use crate::model::stored::ValueRow;
use crate::model::value::{Value, ValueInput};
use crate::rights::RightsLists;

pub(super) async fn create_entity(
    conn: &mut AsyncPgConnection,
    cache: &mut TransactionCache,
    db: &str,
    actor: &str,
    now: DateTime<Utc>,
    inputs: Vec<ValueInput>,
    keys: Vec<GeneratedKey>,
) -> Result<WriteOutcome, ApiError> {
    let type_inputs: Vec<&ValueInput> = inputs.iter().filter(|v| v.prop == "_type").collect();
    let type_id = match type_inputs.as_slice() {
        [one] => match &one.value {
            Value::Reference(id) => id.clone(),
            _ => return Err(ApiError::new(ErrorCode::InvalidType, "_type takes a reference value")),
        },
        [] => {
            return Err(ApiError::new(
                ErrorCode::TypeRequired,
                "A new entity needs a _type property",
            ));
        }
        _ => return Err(ApiError::new(ErrorCode::InvalidType, "An entity has exactly one _type")),
    };
    if inputs.iter().any(|v| v.replaces.is_some()) {
        return Err(ApiError::new(
            ErrorCode::InvalidId,
            "A new entity has no values to overwrite",
        ));
    }
    let entity_id = new_id();
    let entity_type = cache.types.get(conn, db, &type_id).await?;
    let target = Target {
        db,
        actor,
        now,
        entity_id: &entity_id,
        lists: RightsLists::effective(
            &RightsLists {
                owners: [actor.to_owned()].into(),
                ..RightsLists::default()
            },
            &[],
        ),
        is_new: true,
        entity_type: entity_type.clone(),
        live: Vec::new(),
    };
    let (mut rows, plain_keys) = validate::validate(conn, cache, &target, &inputs, keys).await?;
    let written = WrittenValue::all(&rows, plain_keys);
    let creator_is_owner = inputs
        .iter()
        .any(|v| v.prop == "_owner" && v.value == Value::Reference(actor.to_owned()));
    if !creator_is_owner {
        rows.push(target.new_row("_owner", &Value::Reference(actor.to_owned()), None));
    }
    let mut created = target.new_row("_created", &Value::Reference(actor.to_owned()), None);
    created.datetime = Some(now);
    rows.push(created);
    let entity = NewEntity {
        id: entity_id.clone(),
        created_at: now,
        created_by: actor.to_owned(),
        rows: rows.iter().map(ValueRow::from).collect(),
    };
    let kept = cache.pending.keep(conn, &mut cache.types, db, entity, rows).await?;
    if let Some((entity, rows)) = kept {
        // what it reads, and what follows it, must see those kept before
        cache.pending.store(conn, db).await?;
        projection::project_new(conn, &mut cache.types, db, entity).await?;
        values::insert_values_of_new_entities(conn, &rows).await?;
    }
    if entity_type.describes_types() {
        cache.types.clear();
    }
    Ok(WriteOutcome::Written {
        entity_id,
        values: written,
    })
}
