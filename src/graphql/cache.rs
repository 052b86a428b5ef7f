//! Built schemas, kept per database and view. A caller's view is keyed as
//! the list answer cache keys it (the database's generation and the
//! caller's person there); a changed generation re-reads the types, and a
//! schema is rebuilt only when the types and definitions the caller sees
//! changed (their digest), so writes to other entities cost two list reads.
//! Answers to introspection-only documents are kept with their schema: they
//! depend on nothing else, and running one over 200 types took 40 ms.

use std::sync::Arc;

use async_graphql::dynamic::Schema;
use bytes::Bytes;
use dashmap::DashMap;
use sha2::{Digest, Sha256};

use super::schema;
use crate::error::ApiError;
use crate::service::{Caller, Service, lookups, types};

/// Most schemas (and most views) kept; past it the map starts over.
const MOST: usize = 1000;
/// Most introspection answers kept per schema (GraphiQL asks one query).
const MOST_INTROSPECTIONS: usize = 16;

/// A schema, and the answers to introspection documents run against it.
pub struct Built {
    pub schema: Schema,
    /// Digest of (document, variables, operation name) → the answer's JSON.
    introspections: DashMap<[u8; 32], Bytes>,
}

impl Built {
    /// The kept answer to the introspection document of digest `key`.
    pub fn introspection(&self, key: &[u8; 32]) -> Option<Bytes> {
        self.introspections.get(key).map(|answer| answer.clone())
    }

    /// Keeps `answer` to the introspection document of digest `key`.
    pub fn keep_introspection(&self, key: [u8; 32], answer: Bytes) {
        bounded(&self.introspections, MOST_INTROSPECTIONS).insert(key, answer);
    }
}

#[derive(Default)]
pub struct SchemaCache {
    /// (database, person) → the generation it was looked up at, and its schema.
    by_view: DashMap<(String, Option<String>), (i64, Arc<Built>)>,
    /// (database, digest of the types the view sees) → schema.
    by_types: DashMap<(String, [u8; 32]), Arc<Built>>,
}

impl SchemaCache {
    /// The schema of `db` as `caller` sees it; 404 for an unknown database.
    pub async fn schema(&self, service: &Service, caller: &Caller, db: &str) -> Result<Arc<Built>, ApiError> {
        let generation = lookups::generation(service, db).await?;
        let view = (db.to_owned(), caller.person_in(db).map(str::to_owned));
        if let Some(kept) = self.by_view.get(&view).filter(|kept| kept.0 == generation) {
            return Ok(kept.1.clone());
        }
        let types = types::entity_types(service, caller, db, None).await?;
        let digest: [u8; 32] = Sha256::digest(types.to_string().as_bytes()).into();
        let by_types = (db.to_owned(), digest);
        let built = self.by_types.get(&by_types).map(|kept| kept.clone());
        let built = match built {
            Some(built) => built,
            None => {
                let schema = schema::build(&types).map_err(|error| ApiError::internal("graphql schema", error))?;
                let built = Arc::new(Built {
                    schema,
                    introspections: DashMap::new(),
                });
                bounded(&self.by_types, MOST).insert(by_types, built.clone());
                built
            }
        };
        bounded(&self.by_view, MOST).insert(view, (generation, built.clone()));
        Ok(built)
    }
}

/// `map`, emptied first when it holds `most`: a bound on memory that keeps no order.
fn bounded<K: Eq + std::hash::Hash, V>(map: &DashMap<K, V>, most: usize) -> &DashMap<K, V> {
    if map.len() >= most {
        map.clear();
    }
    map
}
