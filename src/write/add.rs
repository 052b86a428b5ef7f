//! `AddValues`: new values next to the live ones, or in place of those they
//! overwrite.

use chrono::{DateTime, Utc};
use diesel_async::AsyncPgConnection;

use super::access::{self, Reach};
use super::cache::TransactionCache;
use super::validate::{self, Target};
use super::{WriteOutcome, WrittenValue, replaced};
use crate::auth::api_key::GeneratedKey;
use crate::db::projection;
use crate::db::values;
use crate::error::ApiError;
use crate::model::value::ValueInput;

#[allow(clippy::too_many_arguments)]
pub(super) async fn add_values(
    conn: &mut AsyncPgConnection,
    cache: &mut TransactionCache,
    db: &str,
    actor: &str,
    now: DateTime<Utc>,
    entity_id: &str,
    inputs: Vec<ValueInput>,
    keys: Vec<GeneratedKey>,
) -> Result<WriteOutcome, ApiError> {
    // the rights to write each value are checked with the values
    let reach = Reach {
        sees_itself: true,
        ..Reach::WRITTEN
    };
    let entity = access::seen_entity(conn, db, actor, entity_id, reach).await?;
    let lists = entity.lists();
    let entity_type = match &entity.type_id {
        Some(type_id) => cache.types.get(conn, db, type_id).await?,
        None => Default::default(),
    };
    let target = Target {
        db,
        actor,
        now,
        entity_id,
        lists,
        is_new: false,
        entity_type: entity_type.clone(),
        live: values::live_values(conn, db, entity_id).await?,
    };
    let (rows, plain_keys) = validate::validate(conn, cache, &target, &inputs, keys).await?;
    let mut removed: Vec<String> = inputs.iter().filter_map(|v| v.replaces.clone()).collect();
    removed.extend(replaced::replaced_rights(&target.live, &rows));
    removed.extend(replaced::replaced_single_values(&target.live, &rows));
    replaced::keep_an_owner(&target.live, &removed, &rows)?;
    values::soft_delete_values(conn, db, &removed, now, actor).await?;
    values::insert_values(conn, &rows).await?;
    projection::project(conn, &mut cache.types, db, entity_id).await?;
    if entity_type.describes_types() {
        cache.types.clear();
    }
    Ok(WriteOutcome::Written {
        entity_id: entity_id.to_owned(),
        values: WrittenValue::all(&rows, plain_keys),
    })
}
