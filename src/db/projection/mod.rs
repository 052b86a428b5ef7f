//! The per-entity read projection, stored in `entities`: the entity's JSON,
//! name, type, parents, sharing, effective rights, views and search text,
//! rebuilt from its live values inside the transaction of every write that
//! touches it. Building it is pure ([`crate::model::projection`]); here it is
//! loaded, stored and followed.

mod bulk;
mod follow;
mod many;
mod one;
mod pending;
mod rebuild;
mod store;
mod types;

use diesel::prelude::*;
use diesel_async::AsyncPgConnection;

pub use self::bulk::{Before, Followers, Loaded, insert_plain, reproject_plain};
use self::follow::follow;
pub use self::follow::referrers;
pub use self::many::project_many;
pub use self::one::NewEntity;
use self::one::{Changes, project_one};
pub use self::pending::PendingCreates;
pub use self::rebuild::rebuild;
pub use self::types::{TypeCache, TypeInfo};
use crate::db::formulas;
use crate::db::values::{self, EntityRow};
use crate::model::projection::references_in;
use crate::model::{ENTITY_TYPE, PROPERTY_TYPE};

/// Re-projects entity `id` and what must follow it at once: inheriting
/// descendants when its effective rights change, referrers when its name or
/// who may read it changes (their search text holds its name), and the
/// entities of a type when one of its property definitions or its own
/// sharing changes. Entities whose formulas read a changed entity are queued
/// (`formula_queue`); where who may read it changed, their formula values
/// are removed at once, so a narrowing never lags (see [`formulas::strip`]).
/// Answers how many entities it queued.
pub async fn project(conn: &mut AsyncPgConnection, types: &mut TypeCache, db: &str, id: &str) -> QueryResult<usize> {
    project_from(conn, types, db, id, None, 0).await
}

/// As [`project`], for an entity created in this transaction: it is inserted
/// (its values go in after it), nothing is read back, and nothing can
/// inherit from or refer to it yet.
pub async fn project_new(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    mut entity: NewEntity,
) -> QueryResult<usize> {
    entity.rows.sort_by(|a, b| a.id.cmp(&b.id)); // as `live_values` orders them
    let id = entity.id.clone();
    project_from(conn, types, db, &id, Some(entity), 0).await
}

/// As [`project`], for an entity taken off the formula queue `hops`
/// re-computations after the write that started it.
pub async fn project_after(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    id: &str,
    hops: i32,
) -> QueryResult<usize> {
    project_from(conn, types, db, id, None, hops).await
}

/// Brings up to date what depended on entity `id`, just soft-deleted (its
/// row read before as `previous`): inheriting children lose its rights,
/// referrers its name, a type's entities the definition or the type, and
/// formulas reading it their values.
pub async fn project_deleted(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    previous: &EntityRow,
) -> QueryResult<usize> {
    let kind = match &previous.type_id {
        Some(type_id) => types.get(conn, db, type_id).await?.name.clone(),
        None => None,
    };
    let types_to_reproject = match kind.as_deref() {
        Some(PROPERTY_TYPE) => previous.parent_ids.clone(),
        Some(ENTITY_TYPE) => vec![previous.id.clone()],
        _ => Vec::new(),
    };
    types.clear();
    let mut near = previous.parent_ids.clone();
    near.extend(references_in(&previous.doc));
    let changes = Changes {
        dependents: formulas::dependents(conn, db, std::slice::from_ref(&previous.id), near).await?,
        rights: true,
        name: true,
        narrowed: true,
        types_to_reproject,
        types_narrowed: true,
    };
    follow(conn, types, db, &previous.id, changes, 0).await
}

/// Re-projects entity `id`, just undeleted, and brings back what depended
/// on it as [`project_deleted`] took it away: inheriting children its
/// rights, referrers its name, a type's entities the definition or the
/// type, and formulas reading it their values.
pub async fn project_undeleted(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    id: &str,
) -> QueryResult<usize> {
    types.clear();
    let mut changes = project_one(conn, types, db, id, None).await?;
    let Some(entity) = values::live_entity(conn, db, id, false).await? else {
        return Ok(0);
    };
    let kind = match &entity.type_id {
        Some(type_id) => types.get(conn, db, type_id).await?.name.clone(),
        None => None,
    };
    match kind.as_deref() {
        Some(PROPERTY_TYPE) => changes.types_to_reproject.extend(entity.parent_ids.clone()),
        Some(ENTITY_TYPE) => changes.types_to_reproject.push(entity.id.clone()),
        _ => {}
    }
    let mut near = entity.parent_ids.clone();
    near.extend(references_in(&entity.doc));
    changes
        .dependents
        .extend(formulas::dependents(conn, db, std::slice::from_ref(&entity.id), near).await?);
    changes.rights = true;
    changes.name = true;
    follow(conn, types, db, id, changes, 0).await
}

async fn project_from(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    id: &str,
    new_entity: Option<NewEntity>,
    hops: i32,
) -> QueryResult<usize> {
    let changes = project_one(conn, types, db, id, new_entity).await?;
    follow(conn, types, db, id, changes, hops).await
}
