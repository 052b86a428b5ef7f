//! `DeleteValue` and `DeleteEntity`: soft deletes, kept for history.

use chrono::{DateTime, Utc};
use diesel_async::AsyncPgConnection;

use super::access::{self, Reach, may_leave_parent};
use super::{WriteOutcome, replaced};
use crate::db::projection::{self, TypeCache};
use crate::db::values;
use crate::error::ApiError;
use crate::model::definition::{SystemProperty, is_billing_property};
use crate::rights::Right;

pub(super) async fn delete_value(
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
    // a value of an entity the writer cannot see is not there for them either
    let reach = Reach {
        unseen: ApiError::property_not_found,
        ..Reach::WRITTEN
    };
    let entity = access::seen_entity(conn, db, actor, &value.entity_id, reach).await?;
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
    access::require_right(&entity, actor, needed, "Missing rights on this entity")?;
    let removed = [value_id.to_owned()];
    if value.prop == "_owner" {
        replaced::keep_an_owner(&live, &removed, &[])?;
    }
    if value.prop == "_parent"
        && let Some(parent) = &value.reference
    {
        may_leave_parent(conn, db, actor, parent).await?;
    }
    values::soft_delete_values(conn, db, &removed, now, actor).await?;
    projection::project(conn, types, db, &value.entity_id).await?;
    Ok(WriteOutcome::Deleted)
}

pub(super) async fn delete_entity(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    actor: &str,
    now: DateTime<Utc>,
    entity_id: &str,
) -> Result<WriteOutcome, ApiError> {
    let refusal = "Only an _owner may delete an entity";
    let entity = access::entity_with_right(conn, db, actor, entity_id, Reach::WRITTEN, Right::Owner, refusal).await?;
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
