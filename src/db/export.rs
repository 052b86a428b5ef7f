//! The statements behind `eds export` and `eds import`: reading a database's
//! rows as stored, inserting them back, and rebuilding the projections.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, Nullable, Text, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::db::prepared::Prepared;
use crate::db::projection::{self, TypeCache};
use crate::db::schema::{databases, entities, property_values};
use crate::db::values::{self, ValueRecord};

/// Entities read per query when exporting, and rows per insert when
/// importing.
pub const BATCH: usize = 1000;

/// An entity's own columns (its projection is rebuilt on import).
#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = entities)]
pub struct StoredEntity {
    pub db: String,
    pub id: String,
    pub created_at: DateTime<Utc>,
    pub created_by: Option<String>,
    pub deleted_at: Option<DateTime<Utc>>,
    pub deleted_by: Option<String>,
}

/// How many entities and value rows database `db` holds, deleted ones included.
pub async fn row_counts(conn: &mut AsyncPgConnection, db: &str) -> QueryResult<(i64, i64)> {
    let entity_count: i64 = entities::table
        .filter(entities::db.eq(db))
        .count()
        .get_result(conn)
        .await?;
    let value_count: i64 = property_values::table
        .filter(property_values::db.eq(db))
        .count()
        .get_result(conn)
        .await?;
    Ok((entity_count, value_count))
}

/// The next [`BATCH`] entities of `db` after id `after`, in `_id` order.
pub async fn entities_after(conn: &mut AsyncPgConnection, db: &str, after: &str) -> QueryResult<Vec<StoredEntity>> {
    entities::table
        .filter(entities::db.eq(db))
        .filter(entities::id.gt(after))
        .order(entities::id.asc())
        .limit(BATCH as i64)
        .select(StoredEntity::as_select())
        .load(conn)
        .await
}

/// Every value row of entities `ids`, by entity and then value `_id`.
pub async fn values_of(conn: &mut AsyncPgConnection, db: &str, ids: &[&String]) -> QueryResult<Vec<ValueRecord>> {
    property_values::table
        .filter(property_values::db.eq(db))
        .filter(property_values::entity_id.eq_any(ids))
        .order((property_values::entity_id.asc(), property_values::id.asc()))
        .select(ValueRecord::as_select())
        .load(conn)
        .await
}

/// Creates database `db` unless it exists, and locks its row until the
/// transaction ends (a concurrent import into it waits); answers whether it
/// already holds entities, live or deleted.
pub async fn claim_database(conn: &mut AsyncPgConnection, db: &str) -> QueryResult<bool> {
    diesel::insert_into(databases::table)
        .values(databases::name.eq(db))
        .on_conflict_do_nothing()
        .execute(conn)
        .await?;
    databases::table
        .filter(databases::name.eq(db))
        .select(databases::name)
        .for_update()
        .first::<String>(conn)
        .await?;
    diesel::select(diesel::dsl::exists(entities::table.filter(entities::db.eq(db))))
        .get_result(conn)
        .await
}

/// Inserts rows as they are: entities first, as values refer to them. Each
/// chunk is one statement over column arrays (`unnest`), whose text never
/// varies, so it is parsed and planned once per import, not per chunk.
pub async fn insert(
    conn: &mut AsyncPgConnection,
    entity_rows: &[StoredEntity],
    value_rows: &[ValueRecord],
) -> QueryResult<()> {
    for chunk in entity_rows.chunks(BATCH) {
        let column = |pick: fn(&StoredEntity) -> Option<String>| chunk.iter().map(pick).collect::<Vec<_>>();
        let stamps = |pick: fn(&StoredEntity) -> Option<DateTime<Utc>>| chunk.iter().map(pick).collect::<Vec<_>>();
        let query = diesel::sql_query(
            "INSERT INTO entities (db, id, created_at, created_by, deleted_at, deleted_by) \
             SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::timestamptz[], $6::text[])",
        )
        .bind::<Array<Nullable<Text>>, _>(column(|e| Some(e.db.clone())))
        .bind::<Array<Nullable<Text>>, _>(column(|e| Some(e.id.clone())))
        .bind::<Array<Nullable<Timestamptz>>, _>(stamps(|e| Some(e.created_at)))
        .bind::<Array<Nullable<Text>>, _>(column(|e| e.created_by.clone()))
        .bind::<Array<Nullable<Timestamptz>>, _>(stamps(|e| e.deleted_at))
        .bind::<Array<Nullable<Text>>, _>(column(|e| e.deleted_by.clone()));
        Prepared::kept(query).execute(conn).await?;
    }
    for chunk in value_rows.chunks(BATCH) {
        values::insert_values(conn, chunk).await?;
    }
    Ok(())
}

/// Lets the value tallies of the rows this transaction writes wait for
/// [`count_value_tallies`]: a load rewrote every tally row once per chunk,
/// and kept each row's old versions until commit.
pub async fn value_tallies_later(conn: &mut AsyncPgConnection) -> QueryResult<()> {
    diesel::sql_query("SELECT set_config('eds.value_tallies_later', 'on', true)")
        .execute(conn)
        .await
        .map(drop)
}

/// Counts database `db`'s value tallies anew from its value rows, and lets
/// the transaction's later writes keep them again.
pub async fn count_value_tallies(conn: &mut AsyncPgConnection, db: &str) -> QueryResult<()> {
    diesel::sql_query("SELECT set_config('eds.value_tallies_later', 'off', true)")
        .execute(conn)
        .await?;
    diesel::sql_query("SELECT recount_value_tallies($1)")
        .bind::<Text, _>(db)
        .execute(conn)
        .await
        .map(drop)
}

/// Fresh statistics: planned for the tables as they were before an import,
/// the queries projecting entities one by one take a full scan each.
pub async fn analyze(conn: &mut AsyncPgConnection) -> QueryResult<()> {
    diesel::sql_query("ANALYZE entities, property_values")
        .execute(conn)
        .await
        .map(drop)
}

/// Projects the entity types and property definitions `meta` of a database
/// being loaded (their rows and values inserted), in `_id` order and twice,
/// as `databases::create` does for its seed: a definition's projection
/// needs its own type's, and every other entity's needs its definitions'.
pub async fn project_types(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    meta: &mut [String],
) -> QueryResult<()> {
    meta.sort();
    for id in meta.iter().chain(meta.iter()) {
        // types and definitions are still taking shape: learn nothing yet
        types.clear();
        projection::project(conn, types, db, id).await?;
    }
    types.clear();
    Ok(())
}

/// Projects entities `ids` of a database being loaded (their rows and values
/// inserted) one by one in `_id` (creation) order, where what an entity
/// takes from others projected after it (inherited rights, referenced
/// names, formula inputs) reaches it through the same cascades a write
/// triggers; the formulas reading entities projected after them are queued
/// for the caller to compute (`jobs::formulas`). `progress` hears how many
/// are projected.
pub async fn project_each(
    conn: &mut AsyncPgConnection,
    types: &mut TypeCache,
    db: &str,
    ids: &mut [String],
    progress: &mut (dyn FnMut(usize) + Send),
) -> QueryResult<()> {
    ids.sort();
    for (done, id) in ids.iter().enumerate() {
        projection::project(conn, types, db, id).await?;
        progress(done + 1);
    }
    Ok(())
}
