//! Entity reads and writes as the REST routes (`src/http/entity.rs`) and
//! the MCP tools answer them: the same checks, the same errors.

use crate::db::values::{self};
use crate::error::ApiError;
use crate::http::{AppState, Caller};
use crate::model::value::{ValueInput, parse_body};
use crate::model::{API_KEY_PROPERTY, LOGIN_PROPERTY};
use crate::query::DEFAULT_LIMIT;
use crate::rights::ViewLevel;
use crate::service::bodies::entities::{EntityRead, History};
use crate::service::bodies::writes::Written;
use crate::service::{invitations, uploads};
use crate::view::{self, access};
use crate::write::validate;
use crate::write::{IdempotencyKey, WriteOp, WriteOutcome};

/// The entity `id` as `caller` may see it, references resolved.
pub async fn read(state: &AppState, caller: &Caller, db: &str, id: &str) -> Result<EntityRead, ApiError> {
    state.require_database(db).await?;
    let mut conn = state.pool.get().await?;
    let person = caller.person_in(db);
    let entity = access::entity_read(&mut conn, db, id, person).await?;
    Ok(EntityRead { entity })
}

/// Creates an entity of the values in `body` (a JSON array of values, or one value).
/// With `retry`, a repeat answers the first write's entity.
pub async fn create(
    state: &AppState,
    caller: &Caller,
    db: &str,
    body: &[u8],
    retry: Option<IdempotencyKey>,
) -> Result<Written, ApiError> {
    let values = parse_body(body)?;
    validate::check_size(&values, state.max_values_per_write)?;
    refuse_oauth_credentials(caller, &values)?;
    let outcome = state
        .write_as(caller, db, WriteOp::CreateEntity { values }, retry)
        .await?;
    written(state, caller, db, outcome).await
}

/// Adds (or, by `_id`, overwrites) the values in `body` on entity `entity_id`,
/// and mails the invitations among them. With `retry`, a repeat answers the
/// first write's values (and mails nothing again).
pub async fn add_values(
    state: &AppState,
    caller: &Caller,
    db: &str,
    entity_id: String,
    body: &[u8],
    retry: Option<IdempotencyKey>,
) -> Result<Written, ApiError> {
    let values = parse_body(body)?;
    validate::check_size(&values, state.max_values_per_write)?;
    refuse_oauth_credentials(caller, &values)?;
    let charged = invitations::charge(state, caller, db, &entity_id, &values, retry.as_ref()).await?;
    let op = WriteOp::AddValues { entity_id, values };
    let outcome = match state.write_as(caller, db, op, retry).await {
        Ok(outcome) => outcome,
        Err(error) => {
            if let Some(charged) = charged {
                state.limits.refund(charged);
            }
            return Err(error);
        }
    };
    invitations::mail(state, caller, db, &outcome, charged).await?;
    written(state, caller, db, outcome).await
}

/// 403 when a token of the OAuth server writes a credential: an API key or a login.
fn refuse_oauth_credentials(caller: &Caller, values: &[ValueInput]) -> Result<(), ApiError> {
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
async fn written(state: &AppState, caller: &Caller, db: &str, outcome: WriteOutcome) -> Result<Written, ApiError> {
    let repeat = matches!(outcome, WriteOutcome::Replayed(_));
    match outcome.first() {
        WriteOutcome::Written { entity_id, values } => {
            let to_sign = uploads::signed_values(state, caller, db, &entity_id, &values, repeat).await?;
            Written::signed(&state.files, db, entity_id, &values, &to_sign).await
        }
        _ => Err(ApiError::internal("write", "a value write answered another outcome")),
    }
}

/// Most changes one history page returns.
const MAX_HISTORY_PAGE: usize = 1000;

/// A page of entity `id`'s changes, newest first, for viewers and up (not for
/// public or domain visibility alone). `limit` and `skip` are taken as the
/// query string gives them: what is not a number is the default.
pub async fn history(
    state: &AppState,
    caller: &Caller,
    db: &str,
    id: &str,
    limit: Option<&str>,
    skip: Option<&str>,
) -> Result<History, ApiError> {
    let person = caller.require_person(db)?;
    state.require_database(db).await?;
    let mut conn = state.pool.get().await?;
    if access::entity_level(&mut conn, db, id, Some(person)).await? != ViewLevel::Full {
        return Err(ApiError::forbidden("History needs _viewer or higher"));
    }
    let changes = view::history::changes(&values::all_values(&mut conn, db, id).await?);
    let number = |text: Option<&str>| text.and_then(|t| t.trim().parse::<usize>().ok());
    let limit = number(limit)
        .filter(|limit| *limit > 0)
        .unwrap_or(DEFAULT_LIMIT as usize)
        .min(MAX_HISTORY_PAGE);
    let skip = number(skip).unwrap_or(0);
    let count = changes.len();
    Ok(History {
        changes: changes.into_iter().skip(skip).take(limit).collect(),
        count: count as u64,
    })
}
