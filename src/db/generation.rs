//! A database's write lock and generation: writers take turns on the lock,
//! and every committed change to its entities bumps the generation, which
//! tells caches whether what they hold is still true.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::db::prepared::Prepared;
use crate::db::schema::databases;

/// Database `name`'s generation (changed by every committed transaction that
/// changes its entities), or `None` when there is no such database.
pub async fn generation(conn: &mut AsyncPgConnection, name: &str) -> QueryResult<Option<i64>> {
    databases::table
        .filter(databases::name.eq(name))
        .select(databases::generation)
        .first(conn)
        .await
        .optional()
}

#[derive(QueryableByName)]
struct Generation {
    #[diesel(sql_type = BigInt)]
    generation: i64,
}

/// Begins a writer's transaction on database `name`: takes the database's
/// write lock (the writers of every process take turns), tells the
/// generation trigger that this transaction bumps the generation itself
/// ([`bump_generation`], last), and answers the generation the lock found.
/// The three statements go out together, one round trip; PostgreSQL runs
/// them in order, so the generation is read once the lock is held.
pub async fn begin_writes(conn: &mut AsyncPgConnection, name: &str) -> QueryResult<i64> {
    let lock = Prepared::kept(
        diesel::sql_query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind::<Text, _>(format!("writes/{name}")),
    )
    .execute(conn);
    let announce = Prepared::kept(diesel::sql_query(ANNOUNCE_BUMP)).execute(conn);
    let read = Prepared::kept(
        // a moved database's old copy is found no more: its late writers write on its new cluster
        diesel::sql_query("SELECT generation FROM databases WHERE name = $1 AND moved_at IS NULL")
            .bind::<Text, _>(name),
    )
    .get_result::<Generation>(conn);
    let (_, _, found) = futures_util::try_join!(lock, announce, read)?;
    Ok(found.generation)
}

/// Tells the generation trigger that the caller's transaction bumps the
/// generation itself ([`bump_generation`], last).
const ANNOUNCE_BUMP: &str = "SELECT set_config('eds.bumps_generation', 'on', true)";

/// Tells the generation trigger, as [`begin_writes`] does, that the caller's
/// transaction bumps the generation itself, for work that changes many
/// entities outside the writer without its lock (re-projecting a type's
/// entities a batch at a time): otherwise a deferred trigger per changed row
/// runs at commit (20–49 ms for 1,000 rows, against 1–8 ms announced).
pub async fn announce_bump(conn: &mut AsyncPgConnection) -> QueryResult<()> {
    Prepared::kept(diesel::sql_query(ANNOUNCE_BUMP))
        .execute(conn)
        .await
        .map(drop)
}

/// Takes database `name`'s write lock for the caller's transaction, as
/// [`begin_writes`] does, for work that changes its entities' projections
/// outside the writer (the formula worker): its change log ids then follow
/// commit order too.
pub async fn take_write_lock(conn: &mut AsyncPgConnection, name: &str) -> QueryResult<()> {
    Prepared::kept(
        diesel::sql_query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind::<Text, _>(format!("writes/{name}")),
    )
    .execute(conn)
    .await
    .map(drop)
}

/// Bumps database `name`'s generation for a writer's transaction begun with
/// [`begin_writes`] (or one that called [`announce_bump`]), as its last
/// statement: the row lock on `databases` is then the last lock it takes, as
/// with the trigger, so writers holding other locks cannot deadlock on it.
/// Answers the new generation.
pub async fn bump_generation(conn: &mut AsyncPgConnection, name: &str) -> QueryResult<i64> {
    let bumped: Generation = Prepared::kept(
        diesel::sql_query("UPDATE databases SET generation = generation + 1 WHERE name = $1 RETURNING generation")
            .bind::<Text, _>(name),
    )
    .get_result(conn)
    .await?;
    Ok(bumped.generation)
}
