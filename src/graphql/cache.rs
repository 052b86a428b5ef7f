//! Built schemas, kept per database and view. A caller's view is keyed as
//! the list answer cache keys it (the database's generation and the
//! caller's person there); a changed generation re-reads the types, and a
//! schema is rebuilt only when the types and definitions the caller sees
//! changed (their digest), so writes to other entities cost two list reads.

use async_graphql::dynamic::Schema;
use dashmap::DashMap;
use sha2::{Digest, Sha256};

use super::schema;
use crate::error::ApiError;
use crate::service::{Caller, Service, lookups, types};

/// Most schemas (and most views) kept; past it the map starts over.
const MOST: usize = 1000;

#[derive(Default)]
pub struct SchemaCache {
    /// (database, person) → the generation it was looked up at, and its schema.
    by_view: DashMap<(String, Option<String>), (i64, Schema)>,
    /// (database, digest of the types the view sees) → schema.
    by_types: DashMap<(String, [u8; 32]), Schema>,
}

impl SchemaCache {
    /// The schema of `db` as `caller` sees it; 404 for an unknown database.
    pub async fn schema(&self, service: &Service, caller: &Caller, db: &str) -> Result<Schema, ApiError> {
        let generation = lookups::generation(service, db).await?;
        let view = (db.to_owned(), caller.person_in(db).map(str::to_owned));
        if let Some(kept) = self.by_view.get(&view).filter(|kept| kept.0 == generation) {
            return Ok(kept.1.clone());
        }
        let types = types::entity_types(service, caller, db, None).await?;
        let digest: [u8; 32] = Sha256::digest(types.to_string().as_bytes()).into();
        let by_types = (db.to_owned(), digest);
        let built = self.by_types.get(&by_types).map(|kept| kept.clone());
        let schema = match built {
            Some(schema) => schema,
            None => {
                let schema = schema::build(&types).map_err(|error| ApiError::internal("graphql schema", error))?;
                bounded(&self.by_types).insert(by_types, schema.clone());
                schema
            }
        };
        bounded(&self.by_view).insert(view, (generation, schema.clone()));
        Ok(schema)
    }
}

/// `map`, emptied first when full: a bound on memory that keeps no order.
fn bounded<K: Eq + std::hash::Hash, V>(map: &DashMap<K, V>) -> &DashMap<K, V> {
    if map.len() >= MOST {
        map.clear();
    }
    map
}
