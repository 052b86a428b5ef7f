//! Databases: naming rules, creation with the seeded system types (by the
//! CLI with an API key, or by a login), and deletion.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

use crate::auth::api_key;
use crate::auth::login::Login;
use crate::db::schema::databases;
use crate::db::values::{self, ValueRecord};
use crate::db::{Pool, projection, sign_in};
use crate::error::{ApiError, ErrorCode};
use crate::model::ids::new_id;
use crate::model::{API_KEY_PROPERTY, ENTITY_TYPE, PROPERTY_TYPE};

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

/// A created database: its owner person and that person's first API key.
pub struct CreatedDatabase {
    pub person_id: String,
    pub api_key: String,
}

/// A seeded property definition: name, type, multilingual, search.
type SeedDefinition = (&'static str, &'static str, bool, bool);

/// The seeded types: name, label, and definitions.
const SEED_TYPES: [(&str, &str, &[SeedDefinition]); 4] = [
    (
        ENTITY_TYPE,
        "Entity type",
        &[("name", "string", false, true), ("label", "string", true, true)],
    ),
    (
        PROPERTY_TYPE,
        "Property",
        &[
            ("name", "string", false, true),
            ("label", "string", true, true),
            ("type", "string", false, false),
            ("list", "boolean", false, false),
            ("multilingual", "boolean", false, false),
            ("search", "boolean", false, false),
            ("formula", "string", false, false),
            ("reference_query", "string", false, false),
            ("mandatory", "boolean", false, false),
            ("default", "string", false, false),
        ],
    ),
    (
        "database",
        "Database",
        &[("name", "string", false, true), ("organization", "string", true, true)],
    ),
    (
        "person",
        "Person",
        &[("name", "string", false, true), ("email", "string", false, true)],
    ),
];

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
            for table in [
                "formula_queue",
                "type_reprojections",
                "request_counts",
                "property_values",
                "entities",
            ] {
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

/// The owner person a new database is seeded with.
struct Owner<'a> {
    name: Option<&'a str>,
    email: Option<&'a str>,
    /// An API key's hash and lookup digest.
    key: Option<(String, String)>,
    login: Option<&'a Login>,
}

/// Seeds database `name` in the caller's transaction: the database row, the
/// system types, the `database` entity and `owner`. Answers the owner's id.
async fn seed(conn: &mut AsyncPgConnection, name: &str, owner: Owner<'_>) -> Result<String, ApiError> {
    // Two processes creating one name at once: the second inserts nothing.
    let inserted = diesel::insert_into(databases::table)
        .values(databases::name.eq(name))
        .on_conflict_do_nothing()
        .execute(conn)
        .await?;
    if inserted == 0 {
        return Err(ApiError::new(
            ErrorCode::DatabaseExists,
            format!("Database {name} exists"),
        ));
    }
    let mut seed = Seed {
        db: name,
        owner: new_id(),
        now: Utc::now(),
        entities: Vec::new(),
        rows: Vec::new(),
    };
    let type_ids: Vec<String> = SEED_TYPES.iter().map(|_| new_id()).collect();
    let (entity_type, property_type) = (type_ids[0].clone(), type_ids[1].clone());
    for ((type_name, label, definitions), type_id) in SEED_TYPES.iter().zip(&type_ids) {
        seed.entity(type_id.clone(), &entity_type, true)
            .string("name", type_name)
            .string("label", label);
        for (prop, value_type, multilingual, search) in definitions.iter() {
            let mut definition = seed.entity(new_id(), &property_type, true);
            definition
                .reference("_parent", type_id)
                .string("name", prop)
                .string("type", value_type);
            if *multilingual {
                definition.boolean("multilingual", true);
            }
            if *search {
                definition.boolean("search", true);
            }
        }
    }
    seed.entity(new_id(), &type_ids[2], false).string("name", name);
    let owner_id = seed.owner.clone();
    let mut person = seed.entity(owner_id.clone(), &type_ids[3], false);
    if let Some(person_name) = owner.name {
        person.string("name", person_name);
    }
    if let Some(email) = owner.email {
        person.string("email", email);
    }
    if let Some((hash, lookup)) = owner.key {
        let mut key_row = person.row(API_KEY_PROPERTY);
        key_row.secret = Some(hash);
        key_row.secret_lookup = Some(lookup);
        seed.rows.push(key_row);
    }
    if let Some(login) = owner.login {
        seed.rows.push(sign_in::login_value(name, &owner_id, login, seed.now));
    }

    for id in &seed.entities {
        values::insert_entity(conn, name, id, seed.now, &seed.owner).await?;
    }
    values::insert_values(conn, &seed.rows).await?;
    // Views and search depend on the definitions' own projections:
    // the first pass makes those, the second uses them.
    for _ in 0..2 {
        let mut types = projection::TypeCache::default();
        for id in &seed.entities {
            projection::project(conn, &mut types, name, id).await?;
        }
    }
    Ok(owner_id)
}

/// Collects the seed's entities and value rows.
struct Seed<'a> {
    db: &'a str,
    owner: String,
    now: DateTime<Utc>,
    entities: Vec<String>,
    rows: Vec<ValueRecord>,
}

struct SeedEntity<'s, 'a> {
    seed: &'s mut Seed<'a>,
    id: String,
}

impl<'a> Seed<'a> {
    /// Adds an entity of the given type, owned and created by the owner person;
    /// `shared` ones (types and definitions) are readable by every person.
    fn entity(&mut self, id: String, type_id: &str, shared: bool) -> SeedEntity<'_, 'a> {
        self.entities.push(id.clone());
        let owner = self.owner.clone();
        let mut entity = SeedEntity { seed: self, id };
        entity.reference("_type", type_id).reference("_owner", &owner);
        let mut created = entity.row("_created");
        created.reference = Some(owner);
        created.datetime = Some(entity.seed.now);
        entity.seed.rows.push(created);
        if shared {
            entity.string("_sharing", "domain");
        }
        entity
    }
}

impl SeedEntity<'_, '_> {
    fn row(&self, prop: &str) -> ValueRecord {
        ValueRecord {
            db: self.seed.db.to_owned(),
            id: new_id(),
            entity_id: self.id.clone(),
            prop: prop.to_owned(),
            created_at: self.seed.now,
            created_by: Some(self.seed.owner.clone()),
            ..ValueRecord::default()
        }
    }

    fn string(&mut self, prop: &str, text: &str) -> &mut Self {
        let mut row = self.row(prop);
        row.string = Some(text.to_owned());
        self.seed.rows.push(row);
        self
    }

    fn boolean(&mut self, prop: &str, flag: bool) -> &mut Self {
        let mut row = self.row(prop);
        row.boolean = Some(flag);
        self.seed.rows.push(row);
        self
    }

    fn reference(&mut self, prop: &str, target: &str) -> &mut Self {
        let mut row = self.row(prop);
        row.reference = Some(target.to_owned());
        self.seed.rows.push(row);
        self
    }
}
