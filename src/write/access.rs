//! Who may write at all, and the one write-side access rule: an entity the
//! writer cannot see answers 404, as if it were not there (a write never
//! tells them it exists), and only then one they see without the right the
//! write needs answers 403.

use std::borrow::Cow;

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

/// How a write reaches the entity it checks.
#[derive(Clone, Copy)]
pub(super) struct Reach {
    /// Locks the row until the transaction ends (the entity is written), or
    /// only reads it (a check before the write's turn, a copy's source).
    pub lock: bool,
    /// An entity reaches itself whatever its sharing (a person adding their
    /// own API key).
    pub sees_itself: bool,
    /// The 404 for an entity the writer cannot see.
    pub unseen: fn() -> ApiError,
}

impl Reach {
    /// The entity the write changes, locked.
    pub const WRITTEN: Reach = Reach {
        lock: true,
        sees_itself: false,
        unseen: ApiError::entity_not_found,
    };
    /// An entity only read.
    pub const READ: Reach = Reach {
        lock: false,
        ..Reach::WRITTEN
    };
}

/// Live entity `entity_id` as `actor`'s write reaches it: `reach.unseen`
/// when it is gone or the actor cannot see it.
pub(super) async fn seen_entity(
    conn: &mut AsyncPgConnection,
    db: &str,
    actor: &str,
    entity_id: &str,
    reach: Reach,
) -> Result<EntityRow, ApiError> {
    values::live_entity(conn, db, entity_id, reach.lock)
        .await?
        .filter(|entity| sees(entity, actor, reach))
        .ok_or_else(reach.unseen)
}

/// [`seen_entity`], then 403 `refusal` unless `actor` holds `needed` on it.
pub(super) async fn entity_with_right(
    conn: &mut AsyncPgConnection,
    db: &str,
    actor: &str,
    entity_id: &str,
    reach: Reach,
    needed: Right,
    refusal: &'static str,
) -> Result<EntityRow, ApiError> {
    let entity = seen_entity(conn, db, actor, entity_id, reach).await?;
    require_right(&entity, actor, needed, refusal)?;
    Ok(entity)
}

/// 403 `refusal` unless `actor` holds `needed` on an entity they see.
pub(super) fn require_right(
    entity: &EntityRow,
    actor: &str,
    needed: Right,
    refusal: impl Into<Cow<'static, str>>,
) -> Result<(), ApiError> {
    if has_right(&entity.lists(), actor, needed) {
        Ok(())
    } else {
        Err(ApiError::forbidden(refusal))
    }
}

/// Whether `actor`'s write reaches `entity` at all.
pub(super) fn sees(entity: &EntityRow, actor: &str, reach: Reach) -> bool {
    (reach.sees_itself && entity.id == actor) || can_read(entity.sharing(), &entity.lists(), Some(actor))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn entity(id: &str, sharing: &str, owners: &[&str], viewers: &[&str]) -> EntityRow {
        let list = |persons: &[&str]| persons.iter().map(|person| person.to_string()).collect();
        EntityRow {
            id: id.into(),
            type_id: None,
            parent_ids: Vec::new(),
            name: None,
            sharing: sharing.into(),
            owners: list(owners),
            editors: Vec::new(),
            expanders: Vec::new(),
            viewers: list(viewers),
            noaccess: Vec::new(),
            doc: serde_json::json!({}),
            public_props: Vec::new(),
            domain_props: Vec::new(),
        }
    }

    #[test]
    fn a_writer_sees_what_they_may_read_and_an_entity_itself_only_where_the_write_allows() {
        let private = entity("p", "private", &["o"], &["o", "v"]);
        assert!(sees(&private, "v", Reach::WRITTEN));
        assert!(!sees(&private, "stranger", Reach::WRITTEN));
        assert!(sees(&entity("p", "domain", &[], &[]), "stranger", Reach::READ));
        let lone = entity("p", "private", &[], &[]);
        assert!(!sees(&lone, "p", Reach::WRITTEN));
        let own_keys = Reach {
            sees_itself: true,
            ..Reach::READ
        };
        assert!(sees(&lone, "p", own_keys));
        assert!(!sees(&lone, "someone else", own_keys));
    }

    #[test]
    fn a_seen_entity_without_the_right_answers_403_with_the_writes_own_message() {
        let shared = entity("e", "domain", &["o"], &["o", "v"]);
        assert!(require_right(&shared, "o", Right::Owner, "Only an _owner").is_ok());
        let refused = require_right(&shared, "v", Right::Owner, "Only an _owner").unwrap_err();
        assert_eq!(
            (refused.code, refused.message.as_ref()),
            (ErrorCode::Forbidden, "Only an _owner")
        );
    }
}
