//! Copies of an entity (`POST .../duplicate`) and a person's activity
//! (`GET .../activity`), the original service's routes its web app calls.

use std::collections::HashSet;

use serde_json::{Map, Value as Json};

use crate::db::activity::{self, Event};
use crate::error::{ApiError, ErrorCode};
use crate::model::json::format_datetime;
use crate::service::bodies::duplicate_activity::Activity;
use crate::service::bodies::writes::Written;
use crate::service::paging::{Page, Paging};
use crate::service::{Caller, Service};
use crate::view::access;
use crate::write::{Duplication, WriteOp, WriteOutcome};

/// Most copies one duplicate makes.
const MAX_COPIES: u64 = 100;
/// Most changes one activity page returns.
const MAX_ACTIVITY_PAGE: usize = 1000;
/// Most changes an activity page may skip: a deeper page reads as many rows.
const MAX_ACTIVITY_SKIP: usize = 10_000;

/// Makes the copies `body` asks for (`{"count","ignoredProperties"}`, both
/// optional; no body is `{}`) of entity `entity_id`, all in one write;
/// answers each copy as a create answers its entity.
pub async fn duplicate(
    service: &Service,
    caller: &Caller,
    db: &str,
    entity_id: String,
    body: &[u8],
) -> Result<Vec<Written>, ApiError> {
    caller.require_person(db)?;
    let (count, ignored) = duplicate_body(body)?;
    super::webhooks::check_copies(service, db, &entity_id, count).await?;
    let duplication = Duplication {
        entity_id,
        count,
        ignored,
        max_values: service.max_values_per_write,
    };
    let outcome = service
        .write_as(caller, db, WriteOp::DuplicateEntity(duplication), None)
        .await?;
    let WriteOutcome::Copies(copies) = outcome.first() else {
        return Err(ApiError::internal("write", "a duplicate answered another outcome"));
    };
    let mut answers = Vec::with_capacity(copies.len());
    for copy in copies {
        let WriteOutcome::Written { entity_id, values } = copy else {
            return Err(ApiError::internal("write", "a copy answered another outcome"));
        };
        // files are not copied: no value waits for an upload
        answers.push(Written::signed(&service.files, db, entity_id, &values, &HashSet::new()).await?);
    }
    Ok(answers)
}

/// The copies' count and the properties they leave out; 400 `invalid_body`
/// for a body of another shape.
fn duplicate_body(body: &[u8]) -> Result<(usize, Vec<String>), ApiError> {
    let invalid = |message: &'static str| ApiError::new(ErrorCode::InvalidBody, message);
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok((1, Vec::new()));
    }
    let Ok(Json::Object(fields)) = serde_json::from_slice::<Json>(body) else {
        return Err(invalid("The body is a JSON object: {\"count\",\"ignoredProperties\"}"));
    };
    let count = match fields.get("count") {
        None => 1,
        Some(count) => count
            .as_u64()
            .filter(|count| (1..=MAX_COPIES).contains(count))
            .ok_or_else(|| invalid("count is an integer from 1 to 100"))? as usize,
    };
    let ignored = match fields.get("ignoredProperties") {
        None => Vec::new(),
        Some(Json::Array(names)) => names
            .iter()
            .map(|name| name.as_str().map(str::to_owned))
            .collect::<Option<Vec<String>>>()
            .ok_or_else(|| invalid("ignoredProperties is an array of strings"))?,
        Some(_) => return Err(invalid("ignoredProperties is an array of strings")),
    };
    Ok((count, ignored))
}

/// A page of the values person `person_id` wrote or deleted, newest first,
/// on the entities the caller may read in full (as `history` needs).
pub async fn activity(
    service: &Service,
    caller: &Caller,
    db: &str,
    person_id: &str,
    paging: &Paging,
) -> Result<Activity, ApiError> {
    let reader = caller.require_person(db)?;
    let Page { limit, skip } = paging.strict(MAX_ACTIVITY_PAGE, MAX_ACTIVITY_SKIP)?;
    service.require_database(db).await?;
    let mut conn = service.pool_for(db)?.get().await?;
    access::entity_level(&mut conn, db, person_id, Some(reader)).await?;
    // a change holds at most two events: a value deleted, one written
    let needed = 2 * (skip + limit) as i64;
    let events = activity::newest_events(&mut conn, db, person_id, reader, needed).await?;
    Ok(Activity {
        changes: changes(person_id, &events).into_iter().skip(skip).take(limit).collect(),
    })
}

/// The changes of `events` (in [`activity::newest_events`] order) by
/// `person`, as `history` makes them: values of one property of one entity
/// deleted and written at one moment form one change (an overwrite carries
/// both `old` and `new`), credentials show their hidden form.
fn changes(person: &str, events: &[Event]) -> Vec<Json> {
    let same_change =
        |a: &Event, b: &Event| a.at == b.at && a.value.entity_id == b.value.entity_id && a.value.prop == b.value.prop;
    let mut changes = Vec::new();
    for group in events.chunk_by(same_change) {
        let first = &group[0];
        let mut entity = Map::new();
        entity.insert("_id".into(), Json::String(first.value.entity_id.clone()));
        if let Some(name) = &first.entity_name {
            entity.insert("name".into(), Json::String(name.clone()));
        }
        let (old, new): (Vec<&Event>, Vec<&Event>) = group.iter().partition(|event| event.removal);
        for index in 0..old.len().max(new.len()) {
            let mut change = Map::new();
            change.insert("entity".into(), Json::Object(entity.clone()));
            change.insert("type".into(), Json::String(first.value.prop.clone()));
            change.insert("at".into(), Json::String(format_datetime(first.at)));
            change.insert("by".into(), Json::String(person.to_owned()));
            if let Some(event) = old.get(index) {
                change.insert("old".into(), Json::Object(event.value.stored_json()));
            }
            if let Some(event) = new.get(index) {
                change.insert("new".into(), Json::Object(event.value.stored_json()));
            }
            changes.push(Json::Object(change));
        }
    }
    changes
}
