//! `LinkLogin`: an invitation accepted. The service, not the caller, writes
//! the login method: the pending invitation is used up (soft-deleted) and a
//! `service_user` value holding the login takes its place.

use chrono::{DateTime, Utc};
use diesel_async::AsyncPgConnection;

use super::batch::TransactionCache;
use super::{WriteOutcome, WrittenValue};
use crate::auth::login::Login;
use crate::db::values::{self, ValueRecord};
use crate::db::{projection, sign_in};
use crate::error::{ApiError, ErrorCode};
use crate::model::LOGIN_PROPERTY;

/// The answer to an invitation that is not (or no longer) pending.
pub fn invalid_invite() -> ApiError {
    ApiError::new(ErrorCode::InvalidInvite, "Invalid or expired invite")
}

/// Uses up invitation `invitation` on person `entity_id` and, with `login`,
/// stores that login on the person.
pub(super) async fn link_login(
    conn: &mut AsyncPgConnection,
    cache: &mut TransactionCache,
    db: &str,
    now: DateTime<Utc>,
    entity_id: &str,
    invitation: &str,
    login: Option<Login>,
) -> Result<WriteOutcome, ApiError> {
    values::live_entity(conn, db, entity_id, true)
        .await?
        .ok_or_else(invalid_invite)?;
    let pending = values::live_values(conn, db, entity_id)
        .await?
        .into_iter()
        .any(|value| value.id == invitation && value.prop == LOGIN_PROPERTY && value.login_provider.is_none());
    if !pending {
        return Err(invalid_invite());
    }
    values::soft_delete_values(conn, db, &[invitation.to_owned()], now, entity_id).await?;
    let rows: Vec<ValueRecord> = login
        .iter()
        .map(|login| sign_in::login_value(db, entity_id, login, now))
        .collect();
    values::insert_values(conn, &rows).await?;
    projection::project(conn, &mut cache.types, db, entity_id).await?;
    Ok(WriteOutcome::Written {
        entity_id: entity_id.to_owned(),
        values: WrittenValue::all(&rows, Default::default()),
    })
}
