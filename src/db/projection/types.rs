//! What the projection and validation know about entity types, loaded
//! once per transaction.

use std::collections::HashMap;
use std::sync::Arc;

use diesel::prelude::*;
use diesel::sql_types::{Jsonb, Nullable, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::db::prepared::Prepared;
use crate::db::values;
use crate::model::definition::PropertyDefinition;
use crate::model::{ENTITY_TYPE, PROPERTY_TYPE};
use crate::rights::Sharing;

/// What the projection and validation need to know about one entity type.
#[derive(Debug, Default)]
pub struct TypeInfo {
    /// Its property definitions, by name.
    pub definitions: HashMap<String, PropertyDefinition>,
    /// Its own `_sharing` (None when the type does not exist).
    pub sharing: Option<Sharing>,
    pub name: Option<String>,
    /// The name of the type's own type: `entity` for an entity type.
    pub kind: Option<String>,
}

impl TypeInfo {
    pub fn is_entity_type(&self) -> bool {
        self.kind.as_deref() == Some(ENTITY_TYPE)
    }

    /// Whether writing an entity of this type may change what other entities'
    /// types say (a definition, or a type itself).
    pub fn describes_types(&self) -> bool {
        matches!(self.name.as_deref(), Some(PROPERTY_TYPE | ENTITY_TYPE))
    }
}

/// Type information learned by the writes of one transaction, so a batch of
/// writes to one type loads it once. Clear it after a write that may change a
/// type or a definition, and after a write that was rolled back.
#[derive(Default)]
pub struct TypeCache {
    types: HashMap<String, Arc<TypeInfo>>,
}

impl TypeCache {
    pub async fn get(&mut self, conn: &mut AsyncPgConnection, db: &str, type_id: &str) -> QueryResult<Arc<TypeInfo>> {
        if let Some(info) = self.types.get(type_id) {
            return Ok(info.clone());
        }
        let definitions = definitions_of_type(conn, db, type_id)
            .await?
            .into_iter()
            .filter_map(|(name, doc)| Some((name?, PropertyDefinition::from_doc(&doc))))
            .collect();
        let sharing = values::live_entity(conn, db, type_id, false)
            .await?
            .map(|row| row.sharing());
        let (name, kind) = values::names_and_types(conn, db, &[type_id.to_owned()])
            .await?
            .into_iter()
            .next()
            .map(|(_, name, kind)| (name, kind))
            .unwrap_or_default();
        let info = Arc::new(TypeInfo {
            definitions,
            sharing,
            name,
            kind,
        });
        self.types.insert(type_id.to_owned(), info.clone());
        Ok(info)
    }

    pub fn clear(&mut self) {
        self.types.clear();
    }
}

/// Property definitions of an entity type: `(name, projection)` of every live
/// entity of type `property` with a live `_parent` value naming the type,
/// found through the (database, property, reference) index: the projected
/// `parent_ids` have only a GIN index, whose pending entries every search
/// reads, and a busy database keeps many pending (every entity update adds
/// some), which made this lookup on every write cost milliseconds.
async fn definitions_of_type(
    conn: &mut AsyncPgConnection,
    db: &str,
    type_id: &str,
) -> QueryResult<Vec<(Option<String>, serde_json::Value)>> {
    #[derive(QueryableByName)]
    struct Definition {
        #[diesel(sql_type = Nullable<Text>)]
        name: Option<String>,
        #[diesel(sql_type = Jsonb)]
        doc: serde_json::Value,
    }
    let found: Vec<Definition> = Prepared::kept(
        diesel::sql_query(
            "SELECT d.name, d.doc FROM entities d JOIN entities k ON k.db = d.db AND k.id = d.type_id \
             WHERE d.db = $1 AND d.deleted_at IS NULL AND k.name = $3 AND d.id IN (SELECT p.entity_id \
             FROM property_values p WHERE p.db = $1 AND p.prop = '_parent' AND p.reference = $2 \
             AND p.deleted_at IS NULL AND p.reference IS NOT NULL)",
        )
        .bind::<Text, _>(db)
        .bind::<Text, _>(type_id)
        .bind::<Text, _>(PROPERTY_TYPE),
    )
    .load(conn)
    .await?;
    Ok(found.into_iter().map(|row| (row.name, row.doc)).collect())
}
