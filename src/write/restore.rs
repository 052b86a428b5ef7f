//! `Restore`: an entity's values as they were at a moment of its history.
//! Values live then but not now are written again as new values, values
//! live now but not then are soft-deleted: history only grows. A deleted
//! entity is undeleted, its `_created` with it. Credentials, billing limits
//! and a live entity's `_created` are never touched, so a revoked key never
//! comes back.

use std::collections::HashSet;

use chrono::{DateTime, Duration, Utc};
use diesel_async::AsyncPgConnection;

use super::access::may_leave_parent;
use super::cache::TransactionCache;
use super::{WriteOutcome, WrittenValue, replaced};
use crate::db::history::{self, EntityLifetime};
use crate::db::projection;
use crate::db::values::{self, ValueRecord};
use crate::error::{ApiError, ErrorCode};
use crate::model::definition::{SystemProperty, is_billing_property};
use crate::model::ids::new_id;
use crate::model::stored::ValueRow;
use crate::model::{API_KEY_PROPERTY, LOGIN_PROPERTY};
use crate::rights::{Right, can_read, has_right};

/// The type whose `secret` property is a credential.
const WEBHOOK_TYPE: &str = "webhook";

pub(super) async fn restore(
    conn: &mut AsyncPgConnection,
    cache: &mut TransactionCache,
    db: &str,
    actor: &str,
    now: DateTime<Utc>,
    entity_id: &str,
    at: Option<DateTime<Utc>>,
) -> Result<WriteOutcome, ApiError> {
    // rights are judged on the row as it is (a deleted one: as when deleted)
    let entity = history::entity_locked(conn, db, entity_id)
        .await?
        .filter(|found| can_read(found.row.sharing(), &found.row.lists(), Some(actor)))
        .ok_or_else(ApiError::entity_not_found)?;
    let moment = restored_moment(&entity, at, now)?;
    let all = values::all_values(conn, db, entity_id).await?;
    let credential_types = webhook_types(conn, cache, db, &all, moment).await?;
    let deleted = entity.deleted_at.is_some();
    let kept = |row: &&ValueRow| !never_restored(row, credential_types, deleted);
    let then: Vec<&ValueRow> = all.iter().filter(|row| live_at(row, moment)).filter(kept).collect();
    let live: Vec<ValueRow> = all.iter().filter(|row| row.deleted_at.is_none()).cloned().collect();
    let then_ids: HashSet<&str> = then.iter().map(|row| row.id.as_str()).collect();
    let live_ids: HashSet<&str> = live.iter().map(|row| row.id.as_str()).collect();
    let again: Vec<&ValueRow> = then
        .into_iter()
        .filter(|row| !live_ids.contains(row.id.as_str()))
        .collect();
    let gone: Vec<&ValueRow> = live
        .iter()
        .filter(|row| !then_ids.contains(row.id.as_str()))
        .filter(kept)
        .collect();

    let changes_rights = again.iter().chain(&gone).any(|row| needs_owner(&row.prop));
    let needed = if deleted || changes_rights {
        Right::Owner
    } else {
        Right::Editor
    };
    if !has_right(&entity.row.lists(), actor, needed) {
        return Err(ApiError::forbidden(match needed {
            Right::Owner => "Restoring a deleted entity or its rights needs _owner",
            _ => "Restoring an entity needs _editor",
        }));
    }
    // an undeleted webhook (or an entity made one again) counts against the
    // database's bound, checked as the write ends
    cache.new_webhooks |= credential_types && (deleted || again.iter().any(|row| row.prop == "_type"));
    for row in &again {
        check_written_again(conn, cache, db, actor, row).await?;
    }
    for parent in gone.iter().filter(|row| row.prop == "_parent") {
        if let Some(parent) = &parent.reference {
            may_leave_parent(conn, db, actor, parent).await?;
        }
    }
    let removed: Vec<String> = gone.iter().map(|row| row.id.clone()).collect();
    let rows: Vec<ValueRecord> = again.iter().map(|row| written_again(db, actor, now, row)).collect();
    replaced::keep_an_owner(&live, &removed, &rows)?;
    for row in rows.iter().filter(|row| is_counted(row)) {
        let number = row.number.unwrap_or_default();
        if history::number_taken(conn, db, &row.prop, number, &removed).await? {
            return Err(ApiError::new(
                ErrorCode::CounterTaken,
                format!(
                    "{} {} is held by another value now",
                    row.prop,
                    row.string.as_deref().unwrap_or("")
                ),
            ));
        }
        cache.counters.forget(&row.prop);
    }

    if rows.is_empty() && removed.is_empty() && !deleted {
        return Ok(written(entity_id, &rows));
    }
    if deleted {
        history::undelete_entity(conn, db, entity_id).await?;
    }
    values::soft_delete_values(conn, db, &removed, now, actor).await?;
    values::insert_values(conn, &rows).await?;
    if deleted {
        projection::project_undeleted(conn, &mut cache.types, db, entity_id).await?;
    } else {
        projection::project(conn, &mut cache.types, db, entity_id).await?;
    }
    Ok(written(entity_id, &rows))
}

fn written(entity_id: &str, rows: &[ValueRecord]) -> WriteOutcome {
    WriteOutcome::Written {
        entity_id: entity_id.to_owned(),
        values: WrittenValue::all(rows, Default::default()),
    }
}

/// The moment restored: `at`, or the moment before a deleted entity's
/// deletion (also for an `at` after it: the entity had no values then).
fn restored_moment(
    entity: &EntityLifetime,
    at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<DateTime<Utc>, ApiError> {
    let before_deletion = entity.deleted_at.map(|deleted| deleted - Duration::microseconds(1));
    let moment = match (at, before_deletion) {
        (Some(at), _) if at > now => return Err(invalid_at("`at` is in the future")),
        (Some(at), _) if at < entity.created_at => {
            return Err(invalid_at("`at` is before the entity was created"));
        }
        (Some(at), Some(before)) => at.min(before),
        (Some(at), None) => at,
        (None, Some(before)) => before,
        (None, None) => return Err(invalid_at("A live entity is restored to a moment: give `at`")),
    };
    Ok(moment)
}

fn invalid_at(message: &'static str) -> ApiError {
    ApiError::new(ErrorCode::InvalidBody, message)
}

fn live_at(row: &ValueRow, moment: DateTime<Utc>) -> bool {
    row.created_at <= moment && row.deleted_at.is_none_or(|deleted| deleted > moment)
}

/// Whether the entity was a webhook then or is one now: its `secret` is a
/// credential either way.
async fn webhook_types(
    conn: &mut AsyncPgConnection,
    cache: &mut TransactionCache,
    db: &str,
    all: &[ValueRow],
    moment: DateTime<Utc>,
) -> Result<bool, ApiError> {
    let types: HashSet<&str> = all
        .iter()
        .filter(|row| row.prop == "_type" && (row.deleted_at.is_none() || live_at(row, moment)))
        .filter_map(|row| row.reference.as_deref())
        .collect();
    for type_id in types {
        if cache.types.get(conn, db, type_id).await?.name.as_deref() == Some(WEBHOOK_TYPE) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Values a restore neither writes again nor deletes: credentials (API
/// keys, logins, a webhook's `secret`), billing limits and, but for an
/// undelete (the deletion took it with the rest), `_created`.
fn never_restored(row: &ValueRow, is_webhook: bool, undeleting: bool) -> bool {
    matches!(row.prop.as_str(), API_KEY_PROPERTY | LOGIN_PROPERTY)
        || (row.prop == "_created" && !undeleting)
        || is_billing_property(&row.prop)
        || (is_webhook && row.prop == "secret")
}

/// Rights lists, sharing, inheritance and the parent: an `_owner`'s to change.
fn needs_owner(prop: &str) -> bool {
    SystemProperty::parse(prop).is_some_and(SystemProperty::needs_owner)
}

/// A counter's value holds its number beside its text.
fn is_counted(row: &ValueRecord) -> bool {
    row.string.is_some() && row.number.is_some()
}

/// The rules a value written again meets as a new one would: `_type` names
/// an entity type, `_parent` needs `_expander` on its target.
async fn check_written_again(
    conn: &mut AsyncPgConnection,
    cache: &mut TransactionCache,
    db: &str,
    actor: &str,
    row: &ValueRow,
) -> Result<(), ApiError> {
    match (row.prop.as_str(), &row.reference) {
        ("_type", Some(type_id)) if !cache.types.get(conn, db, type_id).await?.is_entity_type() => Err(ApiError::new(
            ErrorCode::InvalidType,
            "The _type restored is no longer an entity type",
        )),
        ("_parent", Some(parent_id)) => {
            let parent = values::live_entity(conn, db, parent_id, false).await?;
            if parent.is_some_and(|parent| has_right(&parent.lists(), actor, Right::Expander)) {
                Ok(())
            } else {
                Err(ApiError::forbidden("_parent needs _expander on the parent entity"))
            }
        }
        _ => Ok(()),
    }
}

/// `row` written again now by `actor`, under a new id; a file value keeps
/// its content in the stored object of the value it restores.
fn written_again(db: &str, actor: &str, now: DateTime<Utc>, row: &ValueRow) -> ValueRecord {
    ValueRecord {
        db: db.to_owned(),
        id: new_id(),
        entity_id: row.entity_id.clone(),
        prop: row.prop.clone(),
        string: row.string.clone(),
        number: row.number,
        boolean: row.boolean,
        date: row.date,
        datetime: row.datetime,
        reference: row.reference.clone(),
        filename: row.filename.clone(),
        filesize: row.filesize,
        filetype: row.filetype.clone(),
        language: row.language.clone(),
        created_at: now,
        created_by: Some(actor.to_owned()),
        object_id: row.filename.is_some().then(|| row.object_value_id().to_owned()),
        ..ValueRecord::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::stored::tests::value;

    #[test]
    fn credentials_billing_and_created_are_never_restored() {
        for prop in [API_KEY_PROPERTY, LOGIN_PROPERTY, "_created", "billing_entities_limit"] {
            assert!(never_restored(&value("v", prop), false, false), "{prop}");
        }
        assert!(never_restored(&value("v", "secret"), true, false));
        assert!(!never_restored(&value("v", "secret"), false, false));
        assert!(!never_restored(&value("v", "title"), false, false));
    }

    #[test]
    fn an_undelete_brings_back_created_but_no_credential() {
        assert!(!never_restored(&value("v", "_created"), false, true));
        for prop in [API_KEY_PROPERTY, LOGIN_PROPERTY, "billing_entities_limit"] {
            assert!(never_restored(&value("v", prop), false, true), "{prop}");
        }
        assert!(never_restored(&value("v", "secret"), true, true));
    }

    #[test]
    fn a_value_is_live_from_its_creation_until_its_deletion() {
        let mut row = value("v", "title");
        let created = row.created_at;
        row.deleted_at = Some(created + Duration::seconds(10));
        assert!(!live_at(&row, created - Duration::microseconds(1)));
        assert!(live_at(&row, created));
        assert!(live_at(&row, created + Duration::seconds(9)));
        assert!(!live_at(&row, created + Duration::seconds(10)));
    }

    #[test]
    fn a_restored_file_value_points_at_the_first_stored_object() {
        let mut file = value("v1", "photo");
        file.filename = Some("a.png".into());
        let again = written_again("demo", "p2", file.created_at, &file);
        assert_eq!(again.object_id.as_deref(), Some("v1"));
        assert_ne!(again.id, "v1");
        let twice = written_again("demo", "p2", file.created_at, &ValueRow::from(&again));
        assert_eq!(twice.object_id.as_deref(), Some("v1"));
        assert_eq!(
            written_again("demo", "p2", file.created_at, &value("v2", "title")).object_id,
            None
        );
    }
}
