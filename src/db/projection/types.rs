//! What the projection and validation know about entity types, loaded
//! once per transaction.

use std::collections::HashMap;
use std::sync::Arc;

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::db::schema::entities;
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
/// entity of type `property` whose `_parent` is the type.
async fn definitions_of_type(
    conn: &mut AsyncPgConnection,
    db: &str,
    type_id: &str,
) -> QueryResult<Vec<(Option<String>, serde_json::Value)>> {
    let (definition, kind) = diesel::alias!(entities as definition, entities as kind);
    definition
        .inner_join(
            kind.on(kind.field(entities::db).eq(definition.field(entities::db)).and(
                kind.field(entities::id)
                    .nullable()
                    .eq(definition.field(entities::type_id)),
            )),
        )
        .filter(definition.field(entities::db).eq(db))
        .filter(
            definition
                .field(entities::parent_ids)
                .contains(vec![type_id.to_owned()]),
        )
        .filter(definition.field(entities::deleted_at).is_null())
        .filter(kind.field(entities::name).eq(PROPERTY_TYPE))
        .select((definition.field(entities::name), definition.field(entities::doc)))
        .load(conn)
        .await
}
