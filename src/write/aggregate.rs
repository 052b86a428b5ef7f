//! `Aggregate`: an entity's formulas computed again, now.

use diesel_async::AsyncPgConnection;

use super::WriteOutcome;
use super::access::lock_with_right;
use crate::db::formula_queue;
use crate::db::projection::{self, TypeCache};
use crate::error::ApiError;
use crate::rights::Right;

pub(super) async fn aggregate(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    actor: &str,
    entity_id: &str,
) -> Result<WriteOutcome, ApiError> {
    lock_with_right(conn, db, actor, entity_id, Right::Editor, "Aggregating needs _editor").await?;
    let queued = projection::project(conn, types, db, entity_id).await?;
    // computed now: what was parked for it is served
    formula_queue::forget_parked(conn, db, entity_id).await?;
    Ok(WriteOutcome::Aggregated { queued })
}
