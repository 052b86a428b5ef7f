//! Entity reads and writes as the REST routes (`src/http/entity.rs`) and
//! the MCP tools answer them: the same checks, the same errors.

use crate::db::values::{self};
use crate::error::ApiError;
use crate::model::value::ValueInput;
use crate::model::{API_KEY_PROPERTY, LOGIN_PROPERTY};
use crate::rights::ViewLevel;
use crate::service::bodies::entities::{EntityRead, History};
use crate::service::bodies::writes::{Aggregated, Deleted, Written};
use crate::service::paging::Paging;
use crate::service::{Caller, Service};
use crate::service::{invitations, uploads, webhooks};
use crate::view::{self, access};
use crate::write::validate;
use crate::write::{IdempotencyKey, WriteOp, WriteOutcome};

/// The entity `id` as `caller` may see it, references resolved.
pub async fn read(service: &Service, caller: &Caller, db: &str, id: &str) -> Result<EntityRead, ApiError> {
    service.require_database(db).await?;
    let person = caller.person_in(db);
    let entity = service
        .read_route(db, caller)?
        .run(|pool| async move { access::entity_read(&mut *pool.get().await?, db, id, person).await })
        .await?;
    Ok(EntityRead { entity })
}

/// Creates an entity of `values`. With `retry`, a repeat answers the first
/// write's entity.
pub async fn create(
    service: &Service,
    caller: &Caller,
    db: &str,
    values: Vec<ValueInput>,
    retry: Option<IdempotencyKey>,
) -> Result<Written, ApiError> {
    validate::check_size(&values, service.max_values_per_write)?;
    refuse_oauth_credentials(caller, &values)?;
    webhooks::check_write(service, caller, db, None, &values).await?;
    let outcome = service
        .write_as(caller, db, WriteOp::CreateEntity { values }, retry)
        .await?;
    written(service, caller, db, outcome).await
}

/// Adds (or, by `_id`, overwrites) `values` on entity `entity_id`, and
/// mails the invitations among them. With `retry`, a repeat answers the
/// first write's values (and mails nothing again).
pub async fn add_values(
    service: &Service,
    caller: &Caller,
    db: &str,
    entity_id: String,
    values: Vec<ValueInput>,
    retry: Option<IdempotencyKey>,
) -> Result<Written, ApiError> {
    // a read-only token is refused before an invitation mail is charged
    caller.require_write()?;
    validate::check_size(&values, service.max_values_per_write)?;
    refuse_oauth_credentials(caller, &values)?;
    webhooks::check_write(service, caller, db, Some(&entity_id), &values).await?;
    let charged = invitations::charge(service, caller, db, &entity_id, &values, retry.as_ref()).await?;
    let op = WriteOp::AddValues { entity_id, values };
    let outcome = match service.write_as(caller, db, op, retry).await {
        Ok(outcome) => outcome,
        Err(error) => {
            if let Some(charged) = charged {
                service.limits.refund(charged);
            }
            return Err(error);
        }
    };
    invitations::mail(service, caller, db, &outcome, charged).await?;
    written(service, caller, db, outcome).await
}

/// 403 when a token of the OAuth server writes a credential: an API key or a login.
pub(super) fn refuse_oauth_credentials(caller: &Caller, values: &[ValueInput]) -> Result<(), ApiError> {
    if values
        .iter()
        .any(|value| value.prop == API_KEY_PROPERTY || value.prop == LOGIN_PROPERTY)
    {
        caller.refuse_oauth_credentials()?;
    }
    Ok(())
}

/// The answer to values written: what the write stored, file values signed
/// (on a repeat, only those whose upload is still open to the caller).
async fn written(service: &Service, caller: &Caller, db: &str, outcome: WriteOutcome) -> Result<Written, ApiError> {
    let repeat = matches!(outcome, WriteOutcome::Replayed(_));
    match outcome.first() {
        WriteOutcome::Written { entity_id, values } => {
            let to_sign = uploads::signed_values(service, caller, db, &entity_id, &values, repeat).await?;
            Written::signed(&service.files, db, entity_id, &values, &to_sign).await
        }
        _ => Err(ApiError::internal("write", "a value write answered another outcome")),
    }
}

/// Soft-deletes entity `entity_id` (with `retry`, a repeat answers the same).
pub async fn delete(
    service: &Service,
    caller: &Caller,
    db: &str,
    entity_id: String,
    retry: Option<IdempotencyKey>,
) -> Result<Deleted, ApiError> {
    service
        .write_as(caller, db, WriteOp::DeleteEntity { entity_id }, retry)
        .await?;
    Ok(Deleted { deleted: true })
}

/// Re-computes entity `entity_id`'s formulas now (after external changes)
/// and queues those of its dependents.
pub async fn aggregate(
    service: &Service,
    caller: &Caller,
    db: &str,
    entity_id: String,
) -> Result<Aggregated, ApiError> {
    let op = WriteOp::Aggregate {
        entity_id: entity_id.clone(),
    };
    let queued = match service.write_as(caller, db, op, None).await? {
        WriteOutcome::Aggregated { queued } => queued,
        _ => 0,
    };
    Ok(Aggregated {
        id: entity_id,
        queued: queued as u64,
    })
}

/// Most changes one history page returns.
const MAX_HISTORY_PAGE: usize = 1000;

/// A page of entity `id`'s changes, newest first, for viewers and up (not for
/// public or domain visibility alone). `limit` and `skip` are taken as the
/// query string gives them: what is not a number is the default.
pub async fn history(
    service: &Service,
    caller: &Caller,
    db: &str,
    id: &str,
    paging: &Paging,
) -> Result<History, ApiError> {
    let person = caller.require_person(db)?;
    service.require_database(db).await?;
    let values = service
        .read_route(db, caller)?
        .run(|pool| async move {
            let mut conn = pool.get().await?;
            if access::entity_level(&mut conn, db, id, Some(person)).await? != ViewLevel::Full {
                return Err(ApiError::forbidden("History needs _viewer or higher"));
            }
            Ok(values::all_values(&mut conn, db, id).await?)
        })
        .await?;
    let changes = view::history::changes(&values);
    let page = paging.lenient(MAX_HISTORY_PAGE);
    let count = changes.len();
    Ok(History {
        changes: changes.into_iter().skip(page.skip).take(page.limit).collect(),
        count: count as u64,
    })
}
