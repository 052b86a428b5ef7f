//! Databases: naming rules, creation (by the CLI with an API key, or by a
//! login; what a new database holds is `seed.rs`'s), and deletion.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

use crate::auth::api_key;
use crate::auth::login::Login;
use crate::db::Pool;
use crate::db::schema::databases;
use crate::db::seed::{Owner, seed};
use crate::error::{ApiError, ErrorCode};

/// Names that would collide with the service's own routes.
const RESERVED: [&str; 11] = [
    "api", "auth", "new", "mcp", "openapi", "docs", "health", "metrics", "admin", "template", "test",
];

/// Why a database name cannot be used, if it cannot.
pub fn name_problem(name: &str) -> Option<&'static str> {
    let mut bytes = name.bytes();
    let well_formed = (4..=32).contains(&name.len())
        && bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if !well_formed {
        Some("format")
    } else if RESERVED.contains(&name) {
        Some("reserved")
    } else {
        None
    }
}

/// One database and how many live entities it holds.
#[derive(Debug, QueryableByName)]
pub struct DatabaseCount {
    #[diesel(sql_type = Text)]
    pub database: String,
    #[diesel(sql_type = BigInt)]
    pub entities: i64,
}

/// Every database, by name, with its live entity count.
pub async fn with_entity_counts(conn: &mut AsyncPgConnection) -> QueryResult<Vec<DatabaseCount>> {
    diesel::sql_query(
        "SELECT d.name AS database, \
                count(e.id) FILTER (WHERE e.deleted_at IS NULL) AS entities \
         FROM databases d LEFT JOIN entities e ON e.db = d.name \
         GROUP BY d.name ORDER BY d.name",
    )
    .load(conn)
    .await
}

pub async fn exists(conn: &mut AsyncPgConnection, name: &str) -> QueryResult<bool> {
    diesel::select(diesel::dsl::exists(databases::table.filter(databases::name.eq(name))))
        .get_result(conn)
        .await
}

/// Database `name`'s own entity: the `database` entity seeded with it (or
/// chosen by an import or for a database older than the choice), whose
/// owners alone decide where the persons of new logins go.
pub async fn own_entity(conn: &mut AsyncPgConnection, name: &str) -> QueryResult<Option<String>> {
    databases::table
        .filter(databases::name.eq(name))
        .select(databases::entity_id)
        .first::<Option<String>>(conn)
        .await
        .optional()
        .map(Option::flatten)
}

/// Records the live `database` entity with the lowest id as database
/// `name`'s own (after an import, whose entities keep their ids).
pub async fn adopt_own_entity(conn: &mut AsyncPgConnection, name: &str) -> QueryResult<()> {
    diesel::sql_query(
        "UPDATE databases SET entity_id = ( \
             SELECT e.id FROM entities e JOIN entities t ON t.db = e.db AND t.id = e.type_id \
             WHERE e.db = $1 AND e.deleted_at IS NULL AND t.name = 'database' \
             ORDER BY e.id LIMIT 1) \
         WHERE name = $1",
    )
    .bind::<Text, _>(name)
    .execute(conn)
    .await
    .map(drop)
}

/// A created database: its owner person and that person's first API key.
pub struct CreatedDatabase {
    pub person_id: String,
    pub api_key: String,
}

/// Creates database `name` with its system types, a `database` entity and an
/// owner person holding a fresh API key.
pub async fn create(pool: &Pool, name: &str, email: &str, person_name: &str) -> Result<CreatedDatabase, ApiError> {
    check_name(name)?;
    let key = tokio::task::spawn_blocking(api_key::generate)
        .await
        .map_err(|e| ApiError::internal("key generation failed", e))?;
    let mut conn = pool.get().await?;
    conn.transaction(|conn| {
        async move {
            let owner = Owner {
                name: Some(person_name),
                email: Some(email),
                key: Some((key.hash, key.lookup)),
                login: None,
            };
            let person_id = seed(conn, name, owner).await?;
            Ok(CreatedDatabase {
                person_id,
                api_key: key.plain,
            })
        }
        .scope_boxed()
    })
    .await
}

/// Creates database `name` for `login` (`POST /api/new`): its owner person
/// holds the login (and the provider's name and e-mail). A login creates at
/// most `per_day` databases in 24 hours (0: no limit): 429 past it.
/// Answers the owner person's id.
pub async fn create_for_login(
    pool: &Pool,
    name: &str,
    login: &Login,
    per_day: u32,
    now: DateTime<Utc>,
) -> Result<String, ApiError> {
    check_name(name)?;
    let mut conn = pool.get().await?;
    conn.transaction(|conn| {
        async move {
            // one login's creations take turns, in every process, so the count holds
            diesel::sql_query("SELECT pg_advisory_xact_lock(hashtext($1))")
                .bind::<Text, _>(login.sub())
                .execute(conn)
                .await?;
            let created: i64 = databases::table
                .filter(databases::created_by_login.eq(login.sub()))
                .filter(databases::created_at.gt(now - chrono::Duration::days(1)))
                .count()
                .get_result(conn)
                .await?;
            if per_day > 0 && created >= i64::from(per_day) {
                return Err(ApiError::new(
                    ErrorCode::RateLimited,
                    format!("A login creates at most {per_day} databases a day"),
                ));
            }
            let owner = Owner {
                name: login.name.as_deref(),
                email: login.email.as_deref(),
                key: None,
                login: Some(login),
            };
            let person_id = seed(conn, name, owner).await?;
            diesel::update(databases::table.filter(databases::name.eq(name)))
                .set(databases::created_by_login.eq(login.sub()))
                .execute(conn)
                .await?;
            Ok(person_id)
        }
        .scope_boxed()
    })
    .await
}

/// Every table holding a database's data besides its `databases` row, each
/// keyed by `db`, in an order deleting them one by one keeps to the foreign
/// keys: what deleting a database removes, and what moving it copies.
pub const DATA_TABLES: [&str; 16] = [
    "change_log",
    "webhook_attempts",
    "webhook_outbox",
    "webhooks",
    "formula_queue",
    "type_reprojections",
    "idempotent_writes",
    "request_counts",
    "property_values",
    "boolean_tallies",
    "number_tallies",
    "entities",
    "entity_tallies",
    "audience_stamps",
    "audiences",
    "property_multiplicity",
];

/// Deletes database `name` and everything in it for good (an operator's
/// `eds db delete`; its files stay in object storage). Answers how many
/// entities it held, deleted ones included, or `None` when there is no such database.
pub async fn delete(pool: &Pool, name: &str) -> Result<Option<i64>, ApiError> {
    let mut conn = pool.get().await?;
    conn.transaction(|conn| {
        async move {
            if !exists(conn, name).await? {
                return Ok(None);
            }
            let entities = diesel::sql_query("SELECT count(*) AS count FROM entities WHERE db = $1")
                .bind::<Text, _>(name)
                .get_result::<Count>(conn)
                .await?
                .count;
            for table in DATA_TABLES {
                diesel::sql_query(format!("DELETE FROM {table} WHERE db = $1"))
                    .bind::<Text, _>(name)
                    .execute(conn)
                    .await?;
            }
            diesel::delete(databases::table.filter(databases::name.eq(name)))
                .execute(conn)
                .await?;
            Ok(Some(entities))
        }
        .scope_boxed()
    })
    .await
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    count: i64,
}

fn check_name(name: &str) -> Result<(), ApiError> {
    match name_problem(name) {
        Some(problem) => Err(ApiError::new(
            ErrorCode::InvalidDatabaseName,
            format!("Database name {name:?} is not allowed ({problem})"),
        )),
        None => Ok(()),
    }
}
