//! Writes: validation, rights, the values and the re-projection, all in one
//! transaction. The per-database writer actor runs these in order; the entity
//! row lock taken first keeps them correct across processes too.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use actix_web::http::StatusCode;
use chrono::{DateTime, Utc};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection};
use serde_json::Value as Json;
use tracing::{Instrument, Span};

use crate::auth::api_key::{self, GeneratedKey};
use crate::db::Pool;
use crate::db::formula_queue;
use crate::db::projection::{self, NewEntity, TypeCache, TypeInfo};
use crate::db::values::{self, EntityRow, NewValue};
use crate::error::ApiError;
use crate::model::counter;
use crate::model::definition::{SystemProperty, is_billing_property};
use crate::model::ids::new_id;
use crate::model::stored::ValueRow;
use crate::model::value::{Value, ValueInput};
use crate::model::{API_KEY_PROPERTY, LOGIN_PROPERTY};
use crate::rights::{Right, RightsLists, Sharing, can_read, has_right};

/// One write, on behalf of `actor` (a person of database `db`).
#[derive(Debug, Clone)]
pub struct WriteRequest {
    pub db: String,
    pub actor: String,
    pub op: WriteOp,
}

#[derive(Debug, Clone)]
pub enum WriteOp {
    CreateEntity {
        values: Vec<ValueInput>,
    },
    AddValues {
        entity_id: String,
        values: Vec<ValueInput>,
    },
    DeleteValue {
        value_id: String,
    },
    DeleteEntity {
        entity_id: String,
    },
    /// Re-computes an entity's formulas and those of entities depending on it.
    Aggregate {
        entity_id: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum WriteOutcome {
    /// Values written on an entity; `values` as the creation response shows them.
    Written {
        entity_id: String,
        values: Vec<Json>,
    },
    Deleted,
    /// Formulas re-computed; `queued` other entities were re-computed with it.
    Aggregated {
        queued: usize,
    },
}

/// Applies one write in its own transaction, outside any writer actor.
pub async fn apply(pool: &Pool, request: WriteRequest) -> Result<WriteOutcome, ApiError> {
    let keys = prepare_keys(pool, &request).await?;
    apply_batch(pool, vec![(request, keys, tracing::Span::current())])
        .await
        .pop()
        .unwrap_or_else(|| Err(ApiError::internal("write", "no outcome")))
}

/// Applies writes, each with the API keys it asks for ([`prepare_keys`]), in
/// order in one transaction (group commit: one commit, and one wait for the
/// disk, for the whole batch). A refused write leaves no trace and does not
/// disturb the others. Answers one outcome per request, in order. Each write
/// runs (and logs) under the span it came with.
pub async fn apply_batch(
    pool: &Pool,
    batch: Vec<(WriteRequest, Vec<GeneratedKey>, Span)>,
) -> Vec<Result<WriteOutcome, ApiError>> {
    let applied = match pool.get().await {
        // Most batches pass whole: try without the cost of a savepoint per
        // write, and only when one is refused run them again, each isolated.
        Ok(mut conn) => match run_batch(&mut conn, &batch, batch.len() == 1).await {
            Err(_) if batch.len() > 1 => run_batch(&mut conn, &batch, true).await,
            result => result,
        },
        Err(error) => Err(error.into()),
    };
    match applied {
        Ok(outcomes) => outcomes,
        Err(error) => vec![Err(error); batch.len()],
    }
}

/// Runs writes in one transaction. With `isolated`, each runs in a savepoint
/// and a refusal is its outcome; without, the first refusal rolls back all.
async fn run_batch(
    conn: &mut AsyncPgConnection,
    batch: &[(WriteRequest, Vec<GeneratedKey>, Span)],
    isolated: bool,
) -> Result<Vec<Result<WriteOutcome, ApiError>>, ApiError> {
    conn.transaction(|conn| {
        async move {
            let mut learned = Learned::default();
            let mut outcomes = Vec::with_capacity(batch.len());
            for (request, keys, span) in batch {
                let (request, keys) = (request.clone(), keys.clone());
                if !isolated {
                    let outcome = apply_one(conn, &mut learned, request, keys).instrument(span.clone());
                    outcomes.push(Ok(outcome.await?));
                    continue;
                }
                let learning = &mut learned;
                let outcome = conn
                    .transaction(|conn| {
                        apply_one(conn, learning, request, keys)
                            .instrument(span.clone())
                            .scope_boxed()
                    })
                    .await;
                if outcome.is_err() {
                    // what it learned may have been rolled back with it
                    learned = Learned::default();
                }
                outcomes.push(outcome);
            }
            Ok(outcomes)
        }
        .scope_boxed()
    })
    .await
}

/// What the writes of one transaction learned and may reuse.
#[derive(Default)]
struct Learned {
    types: TypeCache,
    /// Actors already found to be persons of the database.
    persons: HashSet<String>,
    /// The last number of each counter this transaction holds the lock of.
    counters: HashMap<String, Option<(String, f64)>>,
}

async fn apply_one(
    conn: &mut AsyncPgConnection,
    learned: &mut Learned,
    request: WriteRequest,
    keys: Vec<GeneratedKey>,
) -> Result<WriteOutcome, ApiError> {
    let (db, actor) = (request.db.as_str(), request.actor.as_str());
    if !learned.persons.contains(actor) {
        require_person(conn, db, actor).await?;
        learned.persons.insert(actor.to_owned());
    }
    let now = Utc::now();
    match request.op {
        WriteOp::CreateEntity { values } => create_entity(conn, learned, db, actor, now, values, keys).await,
        WriteOp::AddValues { entity_id, values } => {
            add_values(conn, learned, db, actor, now, &entity_id, values, keys).await
        }
        WriteOp::DeleteValue { value_id } => {
            // deletes are rare: forget everything rather than track what they change
            *learned = Learned::default();
            delete_value(conn, &mut learned.types, db, actor, now, &value_id).await
        }
        WriteOp::DeleteEntity { entity_id } => {
            *learned = Learned::default();
            delete_entity(conn, &mut learned.types, db, actor, now, &entity_id).await
        }
        WriteOp::Aggregate { entity_id } => aggregate(conn, &mut learned.types, db, actor, &entity_id).await,
    }
}

/// API keys one write may ask for: each costs a deliberately slow hash.
const MAX_KEYS_PER_WRITE: usize = 10;

/// Bounds what one write may cost, before anything else is done with it: at
/// most `max_values` values (`limits.max_values_per_write`) and
/// [`MAX_KEYS_PER_WRITE`] API keys; more → 413 `too_many_values`.
pub fn check_size(values: &[ValueInput], max_values: usize) -> Result<(), ApiError> {
    let too_many = |message: String| Err(ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too_many_values", message));
    if values.len() > max_values {
        return too_many(format!("A write holds at most {max_values} values"));
    }
    if values.iter().filter(|v| v.prop == API_KEY_PROPERTY).count() > MAX_KEYS_PER_WRITE {
        return too_many(format!(
            "A write holds at most {MAX_KEYS_PER_WRITE} {API_KEY_PROPERTY} values"
        ));
    }
    Ok(())
}

/// API keys asked for by the write, generated before it is applied because
/// hashing is slow: off the async workers, and never in a writer's turn. A
/// caller who may not add them is refused first (read-only, on a pooled
/// connection) so that a refused write costs no hashing; the transaction
/// checks again, under the entity's lock.
pub async fn prepare_keys(pool: &Pool, request: &WriteRequest) -> Result<Vec<GeneratedKey>, ApiError> {
    let (entity_id, values) = match &request.op {
        WriteOp::CreateEntity { values } => (None, values),
        WriteOp::AddValues { entity_id, values } => (Some(entity_id), values),
        _ => return Ok(Vec::new()),
    };
    let wanted = values.iter().filter(|v| v.prop == API_KEY_PROPERTY).count();
    if wanted == 0 {
        return Ok(Vec::new());
    }
    {
        let mut conn = pool.get().await?;
        require_person(&mut conn, &request.db, &request.actor).await?;
        // a new entity is its creator's: they may add keys to it
        if let Some(entity_id) = entity_id {
            may_add_keys(&mut conn, &request.db, &request.actor, entity_id).await?;
        }
    }
    tokio::task::spawn_blocking(move || (0..wanted).map(|_| api_key::generate()).collect())
        .await
        .map_err(|e| ApiError::internal("key generation failed", e))
}

/// What `add_values` and `check_property` answer a caller adding an API key:
/// 404 when they cannot see the entity, 403 unless they own it or are it.
async fn may_add_keys(conn: &mut AsyncPgConnection, db: &str, actor: &str, entity_id: &str) -> Result<(), ApiError> {
    let entity = values::live_entity(conn, db, entity_id, false)
        .await?
        .ok_or_else(ApiError::entity_not_found)?;
    if actor == entity_id {
        return Ok(());
    }
    let lists = entity.lists();
    if !can_read(entity.sharing(), &lists, Some(actor)) {
        return Err(ApiError::entity_not_found());
    }
    if !has_right(&lists, actor, Right::Owner) {
        return Err(ApiError::forbidden(format!(
            "Missing rights to write {API_KEY_PROPERTY}"
        )));
    }
    Ok(())
}

async fn require_person(conn: &mut AsyncPgConnection, db: &str, actor: &str) -> Result<(), ApiError> {
    if values::entity_exists(conn, db, actor).await? {
        Ok(())
    } else {
        Err(ApiError::forbidden("The caller is not a person of this database"))
    }
}

/// What validation needs to know about the entity being written.
struct Target<'a> {
    db: &'a str,
    actor: &'a str,
    now: DateTime<Utc>,
    entity_id: &'a str,
    lists: RightsLists,
    is_new: bool,
    /// The entity's type.
    kind: Arc<TypeInfo>,
    live: Vec<ValueRow>,
}

async fn create_entity(
    conn: &mut AsyncPgConnection,
    learned: &mut Learned,
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
            _ => return Err(ApiError::bad_request("invalid_type", "_type takes a reference value")),
        },
        [] => {
            return Err(ApiError::bad_request(
                "type_required",
                "A new entity needs a _type property",
            ));
        }
        _ => return Err(ApiError::bad_request("invalid_type", "An entity has exactly one _type")),
    };
    if inputs.iter().any(|v| v.replaces.is_some()) {
        return Err(ApiError::bad_request(
            "invalid_id",
            "A new entity has no values to overwrite",
        ));
    }
    let entity_id = new_id();
    let kind = learned.types.get(conn, db, &type_id).await?;
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
        kind: kind.clone(),
        live: Vec::new(),
    };
    let (mut rows, plain_keys) = validate(conn, learned, &target, &inputs, keys).await?;
    let response = response_values(&rows, &plain_keys);
    let creator_is_owner = inputs
        .iter()
        .any(|v| v.prop == "_owner" && v.value == Value::Reference(actor.to_owned()));
    if !creator_is_owner {
        rows.push(new_row(&target, "_owner", &Value::Reference(actor.to_owned()), None));
    }
    let mut created = new_row(&target, "_created", &Value::Reference(actor.to_owned()), None);
    created.datetime = Some(now);
    rows.push(created);
    let entity = NewEntity {
        id: entity_id.clone(),
        created_at: now,
        created_by: actor.to_owned(),
        rows: rows.iter().map(ValueRow::from).collect(),
    };
    projection::project_new(conn, &mut learned.types, db, entity).await?;
    values::insert_values(conn, &rows).await?;
    if kind.describes_types() {
        learned.types.clear();
    }
    Ok(WriteOutcome::Written {
        entity_id,
        values: response,
    })
}

#[allow(clippy::too_many_arguments)]
async fn add_values(
    conn: &mut AsyncPgConnection,
    learned: &mut Learned,
    db: &str,
    actor: &str,
    now: DateTime<Utc>,
    entity_id: &str,
    inputs: Vec<ValueInput>,
    keys: Vec<GeneratedKey>,
) -> Result<WriteOutcome, ApiError> {
    let entity = values::live_entity(conn, db, entity_id, true)
        .await?
        .ok_or_else(ApiError::entity_not_found)?;
    let lists = entity.lists();
    // An entity may always reach itself (a person adding their own API key).
    if actor != entity_id && !can_read(entity.sharing(), &lists, Some(actor)) {
        return Err(ApiError::entity_not_found());
    }
    let kind = match &entity.type_id {
        Some(type_id) => learned.types.get(conn, db, type_id).await?,
        None => Default::default(),
    };
    let target = Target {
        db,
        actor,
        now,
        entity_id,
        lists,
        is_new: false,
        kind: kind.clone(),
        live: values::live_values(conn, db, entity_id).await?,
    };
    let (rows, plain_keys) = validate(conn, learned, &target, &inputs, keys).await?;
    let mut replaced: Vec<String> = inputs.iter().filter_map(|v| v.replaces.clone()).collect();
    replaced.extend(replaced_rights(&target.live, &rows));
    replaced.extend(replaced_single_values(&target.live, &rows));
    let owners_left = target
        .live
        .iter()
        .filter(|row| row.prop == "_owner" && !replaced.contains(&row.id))
        .count()
        + rows.iter().filter(|row| row.prop == "_owner").count();
    if owners_left == 0 {
        return Err(ApiError::forbidden("An entity keeps at least one _owner"));
    }
    values::soft_delete_values(conn, db, &replaced, now, actor).await?;
    values::insert_values(conn, &rows).await?;
    projection::project(conn, &mut learned.types, db, entity_id).await?;
    if kind.describes_types() {
        learned.types.clear();
    }
    Ok(WriteOutcome::Written {
        entity_id: entity_id.to_owned(),
        values: response_values(&rows, &plain_keys),
    })
}

/// A person holds one right per entity: a new right value for a person
/// replaces the live rights values that name them.
fn replaced_rights(live: &[ValueRow], rows: &[NewValue]) -> Vec<String> {
    let granted: Vec<&str> = rows
        .iter()
        .filter(|row| RIGHTS.contains(&row.prop.as_str()))
        .filter_map(|row| row.reference.as_deref())
        .collect();
    live.iter()
        .filter(|row| RIGHTS.contains(&row.prop.as_str()))
        .filter(|row| row.reference.as_deref().is_some_and(|person| granted.contains(&person)))
        .map(|row| row.id.clone())
        .collect()
}

/// The properties that grant (or, `_noaccess`, deny) a person's access.
const RIGHTS: [&str; 5] = ["_owner", "_editor", "_expander", "_viewer", "_noaccess"];

/// Properties an entity holds one value of: a new value replaces the live one
/// (soft-deleted, as an overwrite by `_id` is), so the latest always governs.
const SINGLE_VALUED: [&str; 2] = ["_sharing", "_inheritrights"];

/// The live values that new single-valued values replace.
fn replaced_single_values(live: &[ValueRow], rows: &[NewValue]) -> Vec<String> {
    live.iter()
        .filter(|row| SINGLE_VALUED.contains(&row.prop.as_str()))
        .filter(|row| rows.iter().any(|new| new.prop == row.prop))
        .map(|row| row.id.clone())
        .collect()
}

/// Taking an entity from under a parent (deleting or overwriting its
/// `_parent` value) needs `_expander` on that parent, as putting it there
/// did. A parent deleted since protects nothing and asks for nothing.
async fn may_leave_parent(
    conn: &mut AsyncPgConnection,
    db: &str,
    actor: &str,
    parent_id: &str,
) -> Result<(), ApiError> {
    let parent = values::live_entity(conn, db, parent_id, false).await?;
    if parent.is_some_and(|parent| !has_right(&parent.lists(), actor, Right::Expander)) {
        return Err(ApiError::forbidden(
            "Removing _parent needs _expander on the parent entity",
        ));
    }
    Ok(())
}

async fn delete_value(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    actor: &str,
    now: DateTime<Utc>,
    value_id: &str,
) -> Result<WriteOutcome, ApiError> {
    let value = values::find_value(conn, db, value_id)
        .await?
        .ok_or_else(ApiError::property_not_found)?;
    let entity = values::live_entity(conn, db, &value.entity_id, true)
        .await?
        .ok_or_else(ApiError::property_not_found)?;
    let lists = entity.lists();
    if !can_read(entity.sharing(), &lists, Some(actor)) {
        return Err(ApiError::property_not_found());
    }
    // Read again under the entity lock: a concurrent write may have replaced it.
    let live = values::live_values(conn, db, &value.entity_id).await?;
    if !live.iter().any(|row| row.id == value_id) {
        return Err(ApiError::property_not_found());
    }
    let needed = match SystemProperty::parse(&value.prop) {
        Some(SystemProperty::Type) => return Err(ApiError::forbidden("_type cannot be deleted")),
        Some(system) if !system.is_deletable() => {
            return Err(ApiError::forbidden(format!("{} cannot be deleted", value.prop)));
        }
        Some(system) if system.needs_owner() => Right::Owner,
        _ if is_billing_property(&value.prop) => {
            return Err(ApiError::forbidden("billing_* values are managed by the service"));
        }
        _ => Right::Editor,
    };
    if !has_right(&lists, actor, needed) {
        return Err(ApiError::forbidden("Missing rights on this entity"));
    }
    if value.prop == "_owner" && live.iter().filter(|row| row.prop == "_owner").count() <= 1 {
        return Err(ApiError::forbidden("The last _owner cannot be deleted"));
    }
    if value.prop == "_parent"
        && let Some(parent) = &value.reference
    {
        may_leave_parent(conn, db, actor, parent).await?;
    }
    values::soft_delete_values(conn, db, &[value_id.to_owned()], now, actor).await?;
    projection::project(conn, types, db, &value.entity_id).await?;
    Ok(WriteOutcome::Deleted)
}

/// Locks a live entity for this transaction and checks that `actor` holds
/// `needed` on it: 404 when the actor cannot see it, 403 without the right.
async fn lock_with_right(
    conn: &mut AsyncPgConnection,
    db: &str,
    actor: &str,
    entity_id: &str,
    needed: Right,
    refusal: &'static str,
) -> Result<EntityRow, ApiError> {
    let entity = values::live_entity(conn, db, entity_id, true)
        .await?
        .ok_or_else(ApiError::entity_not_found)?;
    let lists = entity.lists();
    if !can_read(entity.sharing(), &lists, Some(actor)) {
        return Err(ApiError::entity_not_found());
    }
    if !has_right(&lists, actor, needed) {
        return Err(ApiError::forbidden(refusal));
    }
    Ok(entity)
}

async fn delete_entity(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    actor: &str,
    now: DateTime<Utc>,
    entity_id: &str,
) -> Result<WriteOutcome, ApiError> {
    let entity = lock_with_right(
        conn,
        db,
        actor,
        entity_id,
        Right::Owner,
        "Only an _owner may delete an entity",
    )
    .await?;
    let live: Vec<String> = values::live_values(conn, db, entity_id)
        .await?
        .into_iter()
        .map(|row| row.id)
        .collect();
    values::soft_delete_values(conn, db, &live, now, actor).await?;
    values::soft_delete_entity(conn, db, entity_id, now, actor).await?;
    projection::project_deleted(conn, types, db, &entity).await?;
    Ok(WriteOutcome::Deleted)
}

async fn aggregate(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    actor: &str,
    entity_id: &str,
) -> Result<WriteOutcome, ApiError> {
    lock_with_right(conn, db, actor, entity_id, Right::Editor, "Aggregating needs _editor").await?;
    let queued = projection::project(conn, types, db, entity_id).await?;
    // computed now: what was parked for it is served
    formula_queue::forget_parked(conn, db, entity_id).await?;
    Ok(WriteOutcome::Aggregated { queued })
}

/// Checks every input against rights, definitions and the live values, and
/// turns them into rows. Nothing is written here. New API keys come back
/// apart, by value id: only their hash is stored.
async fn validate(
    conn: &mut AsyncPgConnection,
    learned: &mut Learned,
    target: &Target<'_>,
    inputs: &[ValueInput],
    mut keys: Vec<GeneratedKey>,
) -> Result<(Vec<NewValue>, HashMap<String, String>), ApiError> {
    let mut rows = Vec::with_capacity(inputs.len());
    let mut plain_keys = HashMap::new();
    // One sequence per property name and database: lock each (in name order,
    // so two writes never wait on each other crosswise) until commit, and
    // read its last number once per transaction.
    let mut counters: Vec<&str> = inputs
        .iter()
        .filter(|input| matches!(input.value, Value::Counter { .. }))
        .map(|input| input.prop.as_str())
        .filter(|prop| !learned.counters.contains_key(*prop))
        .collect();
    counters.sort_unstable();
    counters.dedup();
    for prop in SINGLE_VALUED {
        if inputs.iter().filter(|input| input.prop == prop).count() > 1 {
            return Err(ApiError::bad_request(
                "invalid_value",
                format!("An entity has exactly one {prop}; write one value"),
            ));
        }
    }
    for prop in counters {
        values::lock_counter(conn, target.db, prop).await?;
        let last = values::largest_number(conn, target.db, prop).await?;
        learned.counters.insert(prop.to_owned(), last);
    }
    for input in inputs {
        let needed = check_property(conn, &mut learned.types, target, input).await?;
        if needed.is_some_and(|needed| !has_right(&target.lists, target.actor, needed)) {
            return Err(ApiError::forbidden(format!("Missing rights to write {}", input.prop)));
        }
        if let Some(replaced) = &input.replaces {
            let live = target
                .live
                .iter()
                .find(|row| &row.id == replaced && row.prop == input.prop);
            let twice = inputs
                .iter()
                .filter(|other| other.replaces.as_ref() == Some(replaced))
                .count()
                > 1;
            let Some(live) = live.filter(|_| !twice) else {
                return Err(ApiError::bad_request(
                    "invalid_value_id",
                    format!("{replaced} is not a live {} value of this entity", input.prop),
                ));
            };
            if input.prop == "_parent"
                && let Some(parent) = &live.reference
            {
                may_leave_parent(conn, target.db, target.actor, parent).await?;
            }
        } else if input.prop == "_type" && !target.is_new {
            return Err(ApiError::bad_request(
                "invalid_type",
                "An entity has exactly one _type; change it by overwriting that value by its _id",
            ));
        }
        // `_type` and `_parent` targets were checked with their rules above
        if let Value::Reference(referenced) = &input.value
            && referenced != target.entity_id
            && !matches!(input.prop.as_str(), "_type" | "_parent")
            && !values::entity_exists(conn, target.db, referenced).await?
        {
            return Err(ApiError::bad_request(
                "invalid_reference",
                format!("{}: entity {referenced} not found", input.prop),
            ));
        }
        let mut row = new_row(target, &input.prop, &input.value, input.language.clone());
        if let Value::Counter { step } = input.value {
            let last = match learned.counters.get(&input.prop) {
                Some(last) => last.clone(),
                None => {
                    values::lock_counter(conn, target.db, &input.prop).await?;
                    values::largest_number(conn, target.db, &input.prop).await?
                }
            };
            let (string, number) = counter::next(last.as_ref().map(|(s, n)| (s.as_str(), *n)), step);
            row.string = Some(string.clone());
            row.number = Some(number);
            learned.counters.insert(input.prop.clone(), Some((string, number)));
        } else {
            // a number written or overwritten by hand: read the sequence again
            learned.counters.remove(&input.prop);
        }
        if input.prop == API_KEY_PROPERTY {
            let key = keys
                .pop()
                .ok_or_else(|| ApiError::internal("key generation", "too few keys"))?;
            row.string = None;
            plain_keys.insert(row.id.clone(), key.plain);
            row.secret = Some(key.hash);
            row.secret_lookup = Some(key.lookup);
        }
        rows.push(row);
    }
    Ok((rows, plain_keys))
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
                return Err(ApiError::bad_request(
                    "invalid_type",
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
                return Err(ApiError::bad_request(
                    "invalid_sharing",
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
        return Err(ApiError::bad_request(
            "unknown_system_property",
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
            return Err(ApiError::bad_request(
                "login_fields_reserved",
                "service_user values are set by the service at sign-in",
            ));
        }
        _ => {}
    }
    if let Some(definition) = target.kind.definitions.get(prop) {
        if let Some(value_type) = definition.value_type
            && value_type.field() != input.value.field()
        {
            return Err(wrong_field(prop, value_type.field().name()));
        }
        if input.language.is_some() && !definition.multilingual {
            return Err(not_multilingual(prop));
        }
    }
    Ok(Some(Right::Editor))
}

fn wrong_field(prop: &str, field: &str) -> ApiError {
    ApiError::bad_request("invalid_value", format!("{prop} takes a `{field}` value"))
}

fn not_multilingual(prop: &str) -> ApiError {
    ApiError::bad_request("invalid_language", format!("{prop} is not multilingual"))
}

fn new_row(target: &Target<'_>, prop: &str, value: &Value, language: Option<String>) -> NewValue {
    let mut row = NewValue {
        db: target.db.to_owned(),
        id: new_id(),
        entity_id: target.entity_id.to_owned(),
        prop: prop.to_owned(),
        language,
        created_at: target.now,
        created_by: Some(target.actor.to_owned()),
        ..NewValue::default()
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

/// The written values as the response shows them: with `type`, and a new API
/// key in plain text (the only time it is ever shown).
fn response_values(rows: &[NewValue], plain_keys: &HashMap<String, String>) -> Vec<Json> {
    rows.iter()
        .map(|row| {
            let mut value = ValueRow::from(row).stored_json();
            value.insert("type".into(), Json::String(row.prop.clone()));
            if let Some(plain) = plain_keys.get(&row.id) {
                value.insert("string".into(), Json::String(plain.clone()));
            }
            Json::Object(value)
        })
        .collect()
}
