//! Login methods, written by the service, never by a caller:
//! - `LinkLogin`: an invitation accepted: the pending invitation is used up
//!   (soft-deleted) and a `service_user` value holding the login takes its
//!   place; or a passkey a signed-in person adds to themselves;
//! - `AddUser`: a new login's person, created where its database says.

use chrono::{DateTime, Utc};
use diesel_async::AsyncPgConnection;

use super::cache::TransactionCache;
use super::{WriteOutcome, WrittenValue};
use crate::auth::login::Login;
use crate::db::projection::{self, NewEntity};
use crate::db::sign_in;
use crate::db::values::{self, ValueRecord};
use crate::error::{ApiError, ErrorCode};
use crate::model::LOGIN_PROPERTY;
use crate::model::ids::new_id;
use crate::model::stored::ValueRow;

/// The answer to an invitation that is not (or no longer) pending.
pub fn invalid_invite() -> ApiError {
    ApiError::new(ErrorCode::InvalidInvite, "Invalid or expired invite")
}

/// Uses up invitation `invitation` (if any) on person `entity_id` and,
/// with `login`, stores that login on the person.
pub(super) async fn link_login(
    conn: &mut AsyncPgConnection,
    cache: &mut TransactionCache,
    db: &str,
    now: DateTime<Utc>,
    entity_id: &str,
    invitation: Option<&str>,
    login: Option<Login>,
) -> Result<WriteOutcome, ApiError> {
    let person = values::live_entity(conn, db, entity_id, true).await?;
    if let Some(invitation) = invitation {
        person.ok_or_else(invalid_invite)?;
        let pending = values::live_values(conn, db, entity_id)
            .await?
            .into_iter()
            .any(|value| value.id == invitation && value.prop == LOGIN_PROPERTY && value.login_provider.is_none());
        if !pending {
            return Err(invalid_invite());
        }
        values::soft_delete_values(conn, db, &[invitation.to_owned()], now, entity_id).await?;
    } else {
        person.ok_or_else(|| ApiError::not_found("The person is deleted"))?;
    }
    let rows: Vec<ValueRecord> = login
        .iter()
        .map(|login| values::login_value(db, entity_id, login, now))
        .collect();
    values::insert_values(conn, &rows).await?;
    projection::project(conn, &mut cache.types, db, entity_id).await?;
    Ok(WriteOutcome::Written {
        entity_id: entity_id.to_owned(),
        values: WrittenValue::all(&rows, Default::default()),
    })
}

/// Where a new login's person goes: under `parent` (its database's
/// `add_user` entity), of type `person_type`.
pub(super) struct Placement<'a> {
    pub parent: &'a str,
    pub person_type: &'a str,
}

/// The refusal of a person for a new login: the database no longer places
/// new persons where the look-up before the write found it did.
fn no_place_for_new_persons() -> ApiError {
    ApiError::unauthorized("No accessible accounts")
}

/// Creates person `person_id` for `login` where `placement` says, inheriting
/// its parent's rights, `_editor` of itself, with the provider's name and
/// e-mail and the login. The placement is checked again here, under the
/// database's write lock: an owner who lost their rights since the look-up
/// places no one.
pub(super) async fn add_user(
    conn: &mut AsyncPgConnection,
    cache: &mut TransactionCache,
    db: &str,
    now: DateTime<Utc>,
    person_id: &str,
    placement: Placement<'_>,
    login: &Login,
) -> Result<WriteOutcome, ApiError> {
    let current = sign_in::add_user_target(conn, db).await?;
    if !current.is_some_and(|target| target.parent == placement.parent && target.person_type == placement.person_type) {
        return Err(no_place_for_new_persons());
    }
    let row = |prop: &str| ValueRecord {
        db: db.to_owned(),
        id: new_id(),
        entity_id: person_id.to_owned(),
        prop: prop.to_owned(),
        created_at: now,
        created_by: Some(person_id.to_owned()),
        ..ValueRecord::default()
    };
    let reference = |prop: &str, target: &str| ValueRecord {
        reference: Some(target.to_owned()),
        ..row(prop)
    };
    let text = |prop: &str, text: &str| ValueRecord {
        string: Some(text.to_owned()),
        ..row(prop)
    };
    let mut rows = vec![
        reference("_type", placement.person_type),
        reference("_parent", placement.parent),
        ValueRecord {
            boolean: Some(true),
            ..row("_inheritrights")
        },
        reference("_editor", person_id),
        ValueRecord {
            datetime: Some(now),
            ..reference("_created", person_id)
        },
        values::login_value(db, person_id, login, now),
    ];
    rows.extend(login.name.as_deref().map(|name| text("name", name)));
    rows.extend(login.email.as_deref().map(|email| text("email", email)));
    let entity = NewEntity {
        id: person_id.to_owned(),
        created_at: now,
        created_by: person_id.to_owned(),
        rows: rows.iter().map(ValueRow::from).collect(),
    };
    projection::project_new(conn, &mut cache.types, db, entity).await?;
    values::insert_values(conn, &rows).await?;
    Ok(WriteOutcome::Written {
        entity_id: person_id.to_owned(),
        values: WrittenValue::all(&rows, Default::default()),
    })
}
