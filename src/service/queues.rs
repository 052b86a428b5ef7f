//! The background queues' lengths, for the metrics: shared by every
//! process, so counted in the database.

use crate::db::{formula_queue, reprojection_queue};
use crate::service::Service;

/// Formula queue entries pending and parked, and types waiting for re-projection.
pub async fn counts(service: &Service) -> Result<(i64, i64, i64), String> {
    let mut conn = service.pool.get().await.map_err(|e| e.to_string())?;
    let pending = formula_queue::pending(&mut conn).await.map_err(|e| e.to_string())?;
    let parked = formula_queue::parked(&mut conn).await.map_err(|e| e.to_string())?;
    let types = reprojection_queue::pending(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    Ok((pending, parked, types))
}
