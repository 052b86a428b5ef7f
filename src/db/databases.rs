//! Databases: naming rules and creation with the seeded system types.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

use crate::auth::api_key;
use crate::db::schema::databases;
use crate::db::values::{self, ValueRecord};
use crate::db::{Pool, projection};
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
    if let Some(problem) = name_problem(name) {
        return Err(ApiError::new(
            ErrorCode::InvalidDatabaseName,
            format!("Database name {name:?} is not allowed ({problem})"),
        ));
    }
    let key = tokio::task::spawn_blocking(api_key::generate)
        .await
        .map_err(|e| ApiError::internal("key generation failed", e))?;
    let mut conn = pool.get().await?;
    conn.transaction(|conn| {
        async move {
            if exists(conn, name).await? {
                return Err(ApiError::new(
                    ErrorCode::DatabaseExists,
                    format!("Database {name} exists"),
                ));
            }
            diesel::insert_into(databases::table)
                .values(databases::name.eq(name))
                .execute(conn)
                .await?;
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
            let owner = seed.owner.clone();
            let mut person = seed.entity(owner.clone(), &type_ids[3], false);
            person.string("name", person_name).string("email", email);
            let mut key_row = person.row(API_KEY_PROPERTY);
            key_row.secret = Some(key.hash);
            key_row.secret_lookup = Some(key.lookup);
            seed.rows.push(key_row);

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
            Ok(CreatedDatabase {
                person_id: owner,
                api_key: key.plain,
            })
        }
        .scope_boxed()
    })
    .await
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
