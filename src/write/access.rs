//! Who may write at all: a person of the database, holding the right the
//! operation needs on an entity they can see.

use diesel_async::AsyncPgConnection;

use crate::db::values::{self, EntityRow};
use crate::error::ApiError;
use crate::rights::{Right, can_read, has_right};

pub(super) async fn require_person(conn: &mut AsyncPgConnection, db: &str, actor: &str) -> Result<(), ApiError> {
    if values::entity_exists(conn, db, actor).await? {
        Ok(())
    } else {
        Err(ApiError::forbidden("The caller is not a person of this database"))
    }
}

/// Locks a live entity for this transaction and checks that `actor` holds
/// `needed` on it: 404 when the actor cannot see it, 403 without the right.
pub(super) async fn lock_with_right(
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

/// Taking an entity from under a parent (deleting or overwriting its
/// `_parent` value) needs `_expander` on that parent, as putting it there
/// did. A parent deleted since protects nothing and asks for nothing.
pub(super) async fn may_leave_parent(
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
