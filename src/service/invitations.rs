//! Invitation mails: a `string` written to `service_user` on an existing
//! entity mails an invitation link to the entity's `email`. Each is charged
//! to the mail limits (per recipient, per client address) and to the
//! entity's cooldown before the write, so a refused one writes nothing, and
//! the charge is given back when no mail goes out after all.

use crate::db::{idempotency, values};
use crate::error::{ApiError, ErrorCode};
use crate::mail;
use crate::model::LOGIN_PROPERTY;
use crate::model::stored::ValueRow;
use crate::model::value::{Value, ValueInput};
use crate::service::rate_limits::Charged;
use crate::service::{Caller, Service};
use crate::view::access;
use crate::write::{IdempotencyKey, WriteOp, WriteOutcome};

/// Charges the invitation mail a write of `values` on entity `entity_id`
/// would send; `None` when it sends none. A write the writer will refuse
/// anyway (no person in `db`, an entity the caller cannot see, no `email`)
/// and a repeat of a recorded write are not charged: they mail nothing.
pub async fn charge(
    service: &Service,
    caller: &Caller,
    db: &str,
    entity_id: &str,
    written: &[ValueInput],
    retry: Option<&IdempotencyKey>,
) -> Result<Option<Charged>, ApiError> {
    let invites = written
        .iter()
        .any(|value| value.prop == LOGIN_PROPERTY && matches!(value.value, Value::String(_)));
    let Some(person) = caller.person_in(db).filter(|_| invites) else {
        return Ok(None);
    };
    let mut conn = service.pool_for(db)?.get().await?;
    if let Some(key) = retry
        && idempotency::recorded(&mut conn, db, person, &key.key, service.clock.now())
            .await?
            .is_some()
    {
        return Ok(None);
    }
    // what the caller cannot see answers 404 from the writer: no limit may tell it apart
    match access::entity_level(&mut conn, db, entity_id, Some(person)).await {
        Err(error) if error.code == ErrorCode::NotFound => return Ok(None),
        result => result?,
    };
    let live = values::live_values(&mut conn, db, entity_id).await?;
    drop(conn);
    let Some(to) = recipient(&live, written).and_then(|email| mail::address(&email).ok()) else {
        return Ok(None);
    };
    let entity = format!("{db}/{entity_id}");
    service
        .limits
        .charge_invitation(&entity, to.as_ref(), &caller.ip)
        .map(Some)
}

/// As [`charge`], for an invitation a batch writes on an entity it creates
/// from `created` (the create's values): the mail goes to an `email` among
/// those or the write's own. The new entity has had no invitation, so its
/// cooldown is its own.
pub fn charge_new(
    service: &Service,
    caller: &Caller,
    db: &str,
    created: &[ValueInput],
    written: &[ValueInput],
) -> Result<Option<Charged>, ApiError> {
    let invites = written
        .iter()
        .any(|value| value.prop == LOGIN_PROPERTY && matches!(value.value, Value::String(_)));
    if !invites || caller.person_in(db).is_none() {
        return Ok(None);
    }
    let values: Vec<ValueInput> = created.iter().chain(written).cloned().collect();
    let Some(to) = recipient(&[], &values).and_then(|email| mail::address(&email).ok()) else {
        return Ok(None);
    };
    let entity = format!("{db}/{}", crate::model::ids::new_id());
    service
        .limits
        .charge_invitation(&entity, to.as_ref(), &caller.ip)
        .map(Some)
}

/// Where the invitation of a write goes: the entity's first live `email`
/// the write leaves in place, else the first one it writes.
fn recipient(live: &[ValueRow], written: &[ValueInput]) -> Option<String> {
    let replaced = |id: &str| written.iter().any(|value| value.replaces.as_deref() == Some(id));
    let kept = live
        .iter()
        .filter(|value| value.prop == "email" && !replaced(&value.id))
        .find_map(|value| value.string.clone());
    kept.or_else(|| {
        written.iter().find_map(|value| match &value.value {
            Value::String(email) if value.prop == "email" => Some(email.clone()),
            _ => None,
        })
    })
}

/// Mails the invitations a write stored on an existing entity. When a mail
/// cannot be sent, its invitation is deleted again: no invitation stays
/// pending that nobody was told of. What was charged and not mailed is
/// given back.
pub async fn mail(
    service: &Service,
    caller: &Caller,
    db: &str,
    outcome: &WriteOutcome,
    charged: Option<Charged>,
) -> Result<(), ApiError> {
    let mut conn = service.pool_for(db)?.get().await?;
    let mailed = service
        .sign_in
        .mail_invitations(&mut conn, &service.jwt, db, outcome, service.clock.now())
        .await;
    drop(conn);
    let invited = match outcome {
        WriteOutcome::Written { values, .. } => values
            .iter()
            .any(|value| value.row.prop == LOGIN_PROPERTY && value.row.login_provider.is_none()),
        _ => false,
    };
    if let Some(charged) = charged
        && (!invited || mailed.is_err())
    {
        service.limits.refund(charged);
    }
    if mailed.is_err()
        && let WriteOutcome::Written { values, .. } = outcome
    {
        for value in values.iter().filter(|value| value.row.prop == LOGIN_PROPERTY) {
            let op = WriteOp::DeleteValue {
                value_id: value.row.id.clone(),
            };
            service.write_as(caller, db, op, None).await?;
        }
    }
    mailed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::stored::tests::value;

    fn email(id: &str, address: &str) -> ValueRow {
        let mut row = value(id, "email");
        row.string = Some(address.into());
        row
    }

    fn invitation() -> ValueInput {
        ValueInput::new(LOGIN_PROPERTY, Value::String("welcome".into()))
    }

    #[test]
    fn an_invitation_goes_to_the_first_email_the_write_leaves_in_place() {
        let live = [
            value("v0", "name"),
            email("v1", "ann@example.com"),
            email("v2", "bob@example.com"),
        ];
        assert_eq!(recipient(&live, &[invitation()]).as_deref(), Some("ann@example.com"));
        let mut overwrite = ValueInput::new("email", Value::String("new@example.com".into()));
        overwrite.replaces = Some("v1".into());
        assert_eq!(
            recipient(&live, &[overwrite.clone(), invitation()]).as_deref(),
            Some("bob@example.com")
        );
        assert_eq!(
            recipient(&live[..2], &[overwrite, invitation()]).as_deref(),
            Some("new@example.com")
        );
        assert_eq!(recipient(&live[..1], &[invitation()]), None);
    }
}
