//! What the token answers of the sign-in routes read of the accounts: the
//! API keys a credential may be, and a person's name.

use crate::db::placement::Clusters;
use crate::db::values;
use crate::error::ApiError;

pub use crate::db::placement_reads::api_key_candidates;

/// The name of person `person` in database `db`, if it has one.
pub async fn person_name(clusters: &Clusters, db: &str, person: &str) -> Result<Option<String>, ApiError> {
    let conn = &mut *clusters.pool_for(db)?.get().await?;
    let named = values::names_and_types(conn, db, &[person.to_owned()]).await?;
    Ok(named.into_iter().next().and_then(|(_, name, _)| name))
}
