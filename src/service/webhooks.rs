//! Webhooks as the REST routes and MCP tools meet them: the rules a write
//! to a webhook must pass before it is sent to the writer (at most
//! `webhooks.max_per_database` of them, an http(s) `url` not at a refused
//! literal address, known `events`), and the attempts its owners read.

use serde::Serialize;
use utoipa::ToSchema;

use crate::db::values;
use crate::db::webhooks::{self, WEBHOOK_TYPE};
use crate::error::{ApiError, ErrorCode};
use crate::model::json::format_datetime;
use crate::model::value::{Value, ValueInput};
use crate::rights::{Right, can_read, has_right};
use crate::service::paging::Paging;
use crate::service::{Caller, Service};
use crate::webhooks::url_refusal;

/// The events a webhook may ask for.
const EVENTS: [&str; 3] = ["create", "update", "delete"];
/// Most attempts one page lists.
const MAX_PAGE: usize = 1000;

/// Checks a write of `values` to database `db` against the webhook rules:
/// on a new entity (`entity_id` `None`) of the webhook type the count
/// limit, the `url` and `events` of a webhook, new or not, and that no
/// token of the OAuth server writes its `secret`. Other
/// writes cost a lookup only when they name one of those properties.
pub async fn check_write(
    service: &Service,
    caller: &Caller,
    db: &str,
    entity_id: Option<&str>,
    values: &[ValueInput],
) -> Result<(), ApiError> {
    let writes_secret = values.iter().any(|v| v.prop == "secret");
    let names_settings = writes_secret || values.iter().any(|v| v.prop == "url" || v.prop == "events");
    let type_id = values.iter().find_map(|v| match (&v.prop[..], &v.value) {
        ("_type", Value::Reference(id)) => Some(id.clone()),
        _ => None,
    });
    if entity_id.is_some() && !names_settings || entity_id.is_none() && type_id.is_none() {
        return Ok(());
    }
    let mut conn = service.pool_for(db)?.get().await?;
    let is_webhook = match (entity_id, &type_id) {
        (Some(id), _) => webhooks::type_name_of(&mut conn, db, id).await?,
        (None, Some(type_id)) => service.webhooks.type_name(&mut conn, db, type_id).await?,
        (None, None) => None,
    }
    .is_some_and(|name| name == WEBHOOK_TYPE);
    if !is_webhook {
        return Ok(());
    }
    // the secret is a credential, as an API key is
    if writes_secret {
        caller.refuse_oauth_credentials()?;
    }
    if entity_id.is_none() && webhooks::count(&mut conn, db).await? >= service.webhooks.settings.max_per_database as i64
    {
        return Err(ApiError::forbidden(format!(
            "A database holds at most {} webhooks",
            service.webhooks.settings.max_per_database
        )));
    }
    check_settings(service, values)
}

/// Checks values a batch adds to the entity an earlier operation of it
/// creates with `created`, against the webhook rules as [`check_write`]
/// checks those added to a webhook (its count was checked at its create).
pub async fn check_write_to_created(
    service: &Service,
    caller: &Caller,
    db: &str,
    created: &[ValueInput],
    values: &[ValueInput],
) -> Result<(), ApiError> {
    let writes_secret = values.iter().any(|v| v.prop == "secret");
    let names_settings = writes_secret || values.iter().any(|v| v.prop == "url" || v.prop == "events");
    // the add's own `_type`, if any, overwrites the create's
    let type_id = values
        .iter()
        .chain(created)
        .find_map(|v| match (&v.prop[..], &v.value) {
            ("_type", Value::Reference(id)) => Some(id.clone()),
            _ => None,
        });
    let Some(type_id) = type_id.filter(|_| names_settings) else {
        return Ok(());
    };
    let mut conn = service.pool_for(db)?.get().await?;
    if service.webhooks.type_name(&mut conn, db, &type_id).await?.as_deref() != Some(WEBHOOK_TYPE) {
        return Ok(());
    }
    if writes_secret {
        caller.refuse_oauth_credentials()?;
    }
    check_settings(service, values)
}

/// A webhook's `url` and `events` among `values`.
fn check_settings(service: &Service, values: &[ValueInput]) -> Result<(), ApiError> {
    for value in values {
        let refusal = match (&value.prop[..], &value.value) {
            ("url", Value::String(url)) => url_refusal(url, service.webhooks.settings.allow_private_targets),
            ("url", _) => Some("url takes a string value"),
            ("events", Value::String(event)) if EVENTS.contains(&event.as_str()) => None,
            ("events", _) => Some("events are create, update or delete"),
            _ => None,
        };
        if let Some(refusal) = refusal {
            return Err(ApiError::new(ErrorCode::InvalidBody, refusal));
        }
    }
    Ok(())
}

/// 403 when `count` copies of entity `id`, a webhook, would take database
/// `db` over `webhooks.max_per_database`.
pub async fn check_copies(service: &Service, db: &str, id: &str, count: usize) -> Result<(), ApiError> {
    let mut conn = service.pool_for(db)?.get().await?;
    if webhooks::type_name_of(&mut conn, db, id).await?.as_deref() != Some(WEBHOOK_TYPE) {
        return Ok(());
    }
    let max = service.webhooks.settings.max_per_database;
    if webhooks::count(&mut conn, db).await? + count as i64 > max as i64 {
        return Err(ApiError::forbidden(format!("A database holds at most {max} webhooks")));
    }
    Ok(())
}

/// `GET /api/{db}/entity/{id}/deliveries`: a webhook's attempts, newest first.
#[derive(Serialize, ToSchema)]
pub struct Deliveries {
    pub deliveries: Vec<Delivery>,
    /// All attempts, regardless of `limit` and `skip`.
    pub count: i64,
}

/// One delivery attempt of an event.
#[derive(Serialize, ToSchema)]
pub struct Delivery {
    /// The event's id: its `Webhook-Id`, the same on every attempt.
    pub id: String,
    /// `create`, `update` or `delete`.
    pub event: String,
    /// The attempt's number for this event, from 1.
    pub attempt: i32,
    /// When the attempt was made.
    pub at: String,
    /// The answer's HTTP status, when there was an answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<i32>,
    pub duration_ms: i32,
    /// Why it failed, when it did (a webhook parked says so here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Webhook `id`'s attempts for one of its `_owner`s: 404 when the caller
/// does not see the entity, 403 when they see it without owning it.
pub async fn deliveries(
    service: &Service,
    caller: &Caller,
    db: &str,
    id: &str,
    paging: &Paging,
) -> Result<Deliveries, ApiError> {
    let person = caller.require_person(db)?;
    service.require_database(db).await?;
    let mut conn = service.pool_for(db)?.get().await?;
    let entity = values::live_entity(&mut conn, db, id, false)
        .await?
        .filter(|entity| can_read(entity.sharing(), &entity.lists(), Some(person)))
        .ok_or_else(|| ApiError::not_found("Entity not found"))?;
    if !has_right(&entity.lists(), person, Right::Owner) {
        return Err(ApiError::forbidden("Deliveries are for the webhook's _owner"));
    }
    let page = paging.lenient(MAX_PAGE);
    let (limit, skip) = (page.limit as i64, page.skip as i64);
    let (attempts, count) = webhooks::attempts(&mut conn, db, id, limit, skip).await?;
    let deliveries = attempts
        .into_iter()
        .map(|attempt| Delivery {
            id: attempt.message_id,
            event: attempt.event,
            attempt: attempt.attempt,
            at: format_datetime(attempt.at),
            status: attempt.status,
            duration_ms: attempt.duration_ms,
            error: attempt.error,
        })
        .collect();
    Ok(Deliveries { deliveries, count })
}

/// Webhooks parked in every database, on every cluster, for `/metrics`.
pub async fn parked(service: &Service) -> Result<i64, ApiError> {
    let mut parked = 0;
    for (_, pool) in service.clusters.all() {
        parked += webhooks::parked(&mut *pool.get().await?).await?;
    }
    Ok(parked)
}
