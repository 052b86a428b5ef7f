//! The change log's reads and upkeep: the rows after an id (the change
//! feed), a formula recomputation's own row, and the retention sweep.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Bool, Nullable, Text, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::db::prepared::Prepared;
use crate::db::schema::entities;
use crate::db::values::EntityRow;

/// One committed change of one entity.
#[derive(Debug, Clone, QueryableByName)]
pub struct ChangeRow {
    #[diesel(sql_type = BigInt)]
    pub id: i64,
    #[diesel(sql_type = Text)]
    pub entity_id: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub actor: Option<String>,
    #[diesel(sql_type = Text)]
    pub action: String,
    #[diesel(sql_type = Array<Text>)]
    pub properties: Vec<String>,
    #[diesel(sql_type = Timestamptz)]
    pub at: DateTime<Utc>,
}

/// At most `limit` changes of database `db` after id `after`, in id order.
/// Rows are visible only once committed, and every writer holds the
/// database's write lock until its commit, so no lower id can appear later.
pub async fn after(conn: &mut AsyncPgConnection, db: &str, after: i64, limit: i64) -> QueryResult<Vec<ChangeRow>> {
    Prepared::kept(
        diesel::sql_query(
            "SELECT id, entity_id, actor, action, properties, at FROM change_log \
             WHERE db = $1 AND id > $2 ORDER BY id LIMIT $3",
        )
        .bind::<Text, _>(db)
        .bind::<BigInt, _>(after)
        .bind::<BigInt, _>(limit),
    )
    .load(conn)
    .await
}

#[derive(QueryableByName)]
struct LatestId {
    #[diesel(sql_type = Nullable<BigInt>)]
    id: Option<i64>,
}

/// The id of database `db`'s last committed change (0 when it has none).
pub async fn latest(conn: &mut AsyncPgConnection, db: &str) -> QueryResult<i64> {
    let found: LatestId =
        Prepared::kept(diesel::sql_query("SELECT max(id) AS id FROM change_log WHERE db = $1").bind::<Text, _>(db))
            .get_result(conn)
            .await?;
    Ok(found.id.unwrap_or_default())
}

#[derive(QueryableByName)]
struct Kept {
    #[diesel(sql_type = Bool)]
    kept: bool,
}

/// Whether change `id` of database `db` is still in the log: a stream
/// resuming after it misses nothing (the sweep deletes the oldest first).
pub async fn is_kept(conn: &mut AsyncPgConnection, db: &str, id: i64) -> QueryResult<bool> {
    let found: Kept = diesel::sql_query("SELECT EXISTS (SELECT 1 FROM change_log WHERE db = $1 AND id = $2) AS kept")
        .bind::<Text, _>(db)
        .bind::<BigInt, _>(id)
        .get_result(conn)
        .await?;
    Ok(found.kept)
}

/// Logs an `update` of entity `id` naming `properties` (formula values a
/// recomputation changed), by no person, in the caller's transaction, which
/// holds the database's write lock.
pub async fn record_update(conn: &mut AsyncPgConnection, db: &str, id: &str, properties: &[String]) -> QueryResult<()> {
    diesel::sql_query(
        "SELECT record_changes(ARRAY[ROW($1, $2, NULL, 'update', $3::text[], now())::entity_change])::text",
    )
    .bind::<Text, _>(db)
    .bind::<Text, _>(id)
    .bind::<Array<Text>, _>(properties)
    .execute(conn)
    .await
    .map(drop)
}

/// Logs an `update` naming no property of each of entities `ids`, whose
/// rights followed a parent's (inheritance) in the caller's transaction,
/// which holds the database's write lock: a stream that may no longer read
/// one is told `leave` (merged into the entity's own row when the
/// transaction also wrote to it).
pub async fn record_rights_followed(conn: &mut AsyncPgConnection, db: &str, ids: &[String]) -> QueryResult<()> {
    diesel::sql_query(
        "SELECT record_changes(ARRAY(SELECT ROW($1, id, NULL, 'update', '{}'::text[], now())::entity_change \
         FROM unnest($2::text[]) id))::text",
    )
    .bind::<Text, _>(db)
    .bind::<Array<Text>, _>(ids)
    .execute(conn)
    .await
    .map(drop)
}

/// Deletes the changes logged before `before`, all databases together;
/// answers how many.
pub async fn sweep(conn: &mut AsyncPgConnection, before: DateTime<Utc>) -> QueryResult<usize> {
    diesel::sql_query("DELETE FROM change_log WHERE at < $1")
        .bind::<Timestamptz, _>(before)
        .execute(conn)
        .await
}

/// Live entities `ids`, whoever may read them: the rights are the caller's
/// to apply.
pub async fn live_entities(conn: &mut AsyncPgConnection, db: &str, ids: &[String]) -> QueryResult<Vec<EntityRow>> {
    entities::table
        .filter(entities::db.eq(db))
        .filter(entities::id.eq_any(ids))
        .filter(entities::deleted_at.is_null())
        .select(EntityRow::as_select())
        .load(conn)
        .await
}

/// Entities `ids`, deleted or not: a deletion keeps the row with its rights
/// and views, which tell whom a deletion's event may reach.
pub async fn entities_any(conn: &mut AsyncPgConnection, db: &str, ids: &[String]) -> QueryResult<Vec<EntityRow>> {
    entities::table
        .filter(entities::db.eq(db))
        .filter(entities::id.eq_any(ids))
        .select(EntityRow::as_select())
        .load(conn)
        .await
}
