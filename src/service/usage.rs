//! A database's usage object, for its persons.

use crate::error::ApiError;
use crate::service::{Caller, Service};
use crate::usage::UsageObject;

/// Database `db`'s usage: 401 without a token, 403 with one for other
/// databases, 404 for an unknown database.
pub async fn of(service: &Service, caller: &Caller, db: &str) -> Result<UsageObject, ApiError> {
    caller.require_person(db)?;
    service.require_database(db).await?;
    service.usage.of(&service.clusters, db).await
}
