//! `Aggregate`: an entity's formulas computed again, now.

use diesel_async::AsyncPgConnection;

use super::WriteOutcome;
use super::access::{self, Reach};
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
    let refusal = "Aggregating needs _editor";
    access::entity_with_right(conn, db, actor, entity_id, Reach::WRITTEN, Right::Editor, refusal).await?;
    let queued = projection::project(conn, types, db, entity_id).await?;
    // computed now: what was parked for it is served
    formula_queue::forget_parked(conn, db, entity_id).await?;
    Ok(WriteOutcome::Aggregated { queued })
}
