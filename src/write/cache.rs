//! What the writes of one transaction learn and may reuse, and what a
//! database's writer keeps of it for its next transaction.

use std::collections::HashSet;

use super::counters::CounterCache;
use crate::db::projection::{PendingCreates, TypeCache};

/// What a database's writer learned in its last committed transaction,
/// true as long as the database's generation is the one that transaction
/// left: no transaction since, of this process or another, changed an
/// entity (every change to an entity bumps it).
#[derive(Default)]
pub struct WriterCache {
    generation: Option<i64>,
    types: TypeCache,
    persons: HashSet<String>,
}

/// Persons a writer remembers at most: beyond, it checks them again.
const KNOWN_PERSONS: usize = 10_000;

/// What the writes of one transaction learned and may reuse.
#[derive(Default)]
pub(super) struct TransactionCache {
    pub types: TypeCache,
    /// Actors already found to be persons of the database.
    pub persons: HashSet<String>,
    pub counters: CounterCache,
    /// New entities not stored yet: stored before anything else may read them.
    pub pending: PendingCreates,
    /// Whether webhooks were created since their number was last checked.
    pub new_webhooks: bool,
    /// Entities found live, which a value may reference; forgotten with the
    /// rest on a delete or a restore.
    pub live: HashSet<String>,
}

impl TransactionCache {
    /// Starts from what the writer learned before, when the database is
    /// still at the generation it left (`found`, read under the write lock).
    pub(super) fn after(earlier: WriterCache, found: i64) -> TransactionCache {
        if earlier.generation != Some(found) {
            return TransactionCache::default();
        }
        TransactionCache {
            types: earlier.types,
            persons: earlier.persons,
            ..TransactionCache::default()
        }
    }

    /// What the writer keeps once this transaction committed at `generation`.
    /// Counters are not kept: numbers are taken rarely, read again cheaply.
    pub(super) fn kept(mut self, generation: i64) -> WriterCache {
        if self.persons.len() > KNOWN_PERSONS {
            self.persons.clear();
        }
        WriterCache {
            generation: Some(generation),
            types: self.types,
            persons: self.persons,
        }
    }
}
