//! A webhook's `secret`: written only by the webhook's `_owner`, any string
//! written stands for a new signing secret, generated here and shown once.
//! The row keeps it in its credential column (the server signs with it)
//! and `***` as its string, so every read shows the mask. And the bound on
//! webhooks a database holds, checked in the transaction that creates them.

use std::collections::HashMap;

use diesel_async::AsyncPgConnection;

use super::cache::TransactionCache;
use crate::db::projection::TypeInfo;
use crate::db::values::ValueRecord;
use crate::db::webhooks::{self, SECRET_PROPERTY, WEBHOOK_TYPE};
use crate::error::ApiError;
use crate::rights::{Right, RightsLists, has_right};
use crate::webhooks::post::new_secret;

/// What every read shows of a secret.
const MASK: &str = "***";

/// Whether entities of `entity_type` are webhooks.
pub(super) fn is_webhook(entity_type: &TypeInfo) -> bool {
    entity_type.name.as_deref() == Some(WEBHOOK_TYPE)
}

/// Whether `prop` of an entity of `entity_type` is a webhook's secret.
pub(super) fn is_secret(entity_type: &TypeInfo, prop: &str) -> bool {
    prop == SECRET_PROPERTY && is_webhook(entity_type)
}

/// 403 when the webhooks the transaction created (stored by now) take
/// database `db` over `max` (`webhooks.max_per_database`; `None`: no
/// bound). Counted under the database's write lock, so two writes racing
/// past the check made before them cannot both pass.
pub(super) async fn check_count(
    conn: &mut AsyncPgConnection,
    cache: &mut TransactionCache,
    db: &str,
    max: Option<usize>,
) -> Result<(), ApiError> {
    let Some(max) = max else { return Ok(()) };
    if !std::mem::take(&mut cache.new_webhooks) {
        return Ok(());
    }
    if webhooks::live_count(conn, db).await? > i64::try_from(max).unwrap_or(i64::MAX) {
        return Err(ApiError::forbidden(format!("A database holds at most {max} webhooks")));
    }
    Ok(())
}

/// Turns `row`, a webhook's new `secret`, into a generated one: 403 unless
/// `actor` owns the webhook (its effective `lists`). Its plain text goes to
/// `plain_keys`, shown in this write's answer only.
pub(super) fn generate_secret(
    lists: &RightsLists,
    actor: &str,
    row: &mut ValueRecord,
    plain_keys: &mut HashMap<String, String>,
) -> Result<(), ApiError> {
    if !has_right(lists, actor, Right::Owner) {
        return Err(ApiError::forbidden(format!(
            "Only the webhook's _owner may write {SECRET_PROPERTY}"
        )));
    }
    let secret = new_secret();
    row.string = Some(MASK.to_owned());
    row.secret = Some(secret.clone());
    plain_keys.insert(row.id.clone(), secret);
    Ok(())
}
