//! Databases: whether a name is free, and a new one for a signed-in login.

use crate::db::{databases, placement_reads};
use crate::error::{ApiError, ErrorCode};
use crate::service::{Caller, Service};

pub use crate::db::databases::name_problem;

/// Why `name` cannot name a new database (`format`, `reserved`, `taken`);
/// `None` when it can.
pub async fn unavailable(service: &Service, name: &str) -> Result<Option<&'static str>, ApiError> {
    if let Some(problem) = name_problem(name) {
        return Ok(Some(problem));
    }
    // a name is taken on whichever cluster holds it
    Ok(placement_reads::exists_anywhere(&service.clusters, name)
        .await?
        .then_some("taken"))
}

/// Creates database `name` with the caller's login as its owner person:
/// 401 without a token, 403 for a token that is not a provider login's.
pub async fn create(service: &Service, caller: &Caller, name: &str) -> Result<(), ApiError> {
    caller.require_write()?;
    let claims = caller.claims.as_ref().ok_or_else(ApiError::token_required)?;
    let login = claims
        .login()
        .ok_or_else(|| ApiError::forbidden("Only a person signed in with a provider can create a database"))?;
    // created where it is placed; a name no cluster holds yet
    if placement_reads::exists_anywhere(&service.clusters, name).await? {
        return Err(ApiError::new(
            ErrorCode::DatabaseExists,
            format!("Database {name} exists"),
        ));
    }
    databases::create_for_login(
        &service.pool_for(name)?,
        name,
        &login,
        service.new_databases_per_day,
        service.clock.now(),
    )
    .await?;
    Ok(())
}
