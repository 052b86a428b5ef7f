//! What the health and metrics routes ask of the service: whether its
//! database and storage answer, and the background queues' lengths.

use diesel_async::RunQueryDsl;

use crate::db::{formula_queue, reprojection_queue};
use crate::service::Service;

/// Whether PostgreSQL and the object storage answer.
pub struct Readiness {
    pub database: bool,
    pub storage: bool,
}

/// Asks PostgreSQL and the object storage whether they answer.
pub async fn readiness(service: &Service) -> Readiness {
    let database = match service.pool.get().await {
        Ok(mut conn) => diesel::sql_query("SELECT 1").execute(&mut conn).await.is_ok(),
        Err(_) => false,
    };
    let storage = service.files.store.check().await.is_ok();
    Readiness { database, storage }
}

/// Formula queue entries pending and parked, and types waiting for
/// re-projection: shared by every process, so counted in the database.
pub async fn queue_counts(service: &Service) -> Result<(i64, i64, i64), String> {
    let mut conn = service.pool.get().await.map_err(|e| e.to_string())?;
    let pending = formula_queue::pending(&mut conn).await.map_err(|e| e.to_string())?;
    let parked = formula_queue::parked(&mut conn).await.map_err(|e| e.to_string())?;
    let types = reprojection_queue::pending(&mut conn)
        .await
        .map_err(|e| e.to_string())?;
    Ok((pending, parked, types))
}
