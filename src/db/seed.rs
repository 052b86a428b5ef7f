//! What every new database starts with: the system types (`entity`,
//! `property`, `database`, `person`) and the original's template types
//! (`menu`, `plugin`) and `webhook` with their definitions, a `database` entity (recorded
//! as the database's own), a side-menu entry for persons, and the owner
//! person. Databases made before a type was seeded gain it on migration.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, Text};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

use crate::auth::login::Login;
use crate::db::generation::{begin_writes, bump_generation};
use crate::db::schema::databases;
use crate::db::values::ValueRecord;
use crate::db::{Pool, projection, values};
use crate::error::{ApiError, ErrorCode};
use crate::model::ids::new_id;
use crate::model::{API_KEY_PROPERTY, ENTITY_TYPE, PROPERTY_TYPE};

/// A seeded property definition: name, type, multilingual, search.
type SeedDefinition = (&'static str, &'static str, bool, bool);

/// A seeded type: name, label, and definitions.
type SeedType = (&'static str, &'static str, &'static [SeedDefinition]);

/// The seeded types; the first four are the system's, in this order.
const SEED_TYPES: [SeedType; 7] = [
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
    // the original web app's side menu: one entry per query, in groups
    (
        "menu",
        "Menu",
        &[
            ("name", "string", true, true),
            ("group", "string", true, false),
            ("ordinal", "number", false, false),
            ("query", "string", false, false),
        ],
    ),
    (
        "plugin",
        "Plugin",
        &[
            ("name", "string", false, true),
            ("type", "string", false, false),
            ("url", "string", false, false),
        ],
    ),
    // a webhook: the changes (`events`) of entities (of `entity_type`, when
    // set) posted to `url`, signed with `secret`
    (
        crate::db::webhooks::WEBHOOK_TYPE,
        "Webhook",
        &[
            ("name", "string", false, true),
            ("url", "string", false, false),
            ("events", "string", false, false),
            ("entity_type", "reference", false, false),
            (crate::db::webhooks::SECRET_PROPERTY, "string", false, false),
        ],
    ),
];
/// Seeded definitions that take several values: (type, property).
const LIST_DEFINITIONS: [(&str, &str); 1] = [(crate::db::webhooks::WEBHOOK_TYPE, "events")];
const DATABASE_TYPE: usize = 2;
const PERSON_TYPE: usize = 3;
const MENU_TYPE: usize = 4;

/// The owner person a new database is seeded with.
pub(super) struct Owner<'a> {
    pub name: Option<&'a str>,
    pub email: Option<&'a str>,
    /// An API key's hash and lookup digest.
    pub key: Option<(String, String)>,
    pub login: Option<&'a Login>,
}

/// Seeds database `name` in the caller's transaction: the database row, the
/// system types, the `database` entity and `owner`. Answers the owner's id.
pub(super) async fn seed(conn: &mut AsyncPgConnection, name: &str, owner: Owner<'_>) -> Result<String, ApiError> {
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
    let mut seed = Seed::new(name, new_id());
    let type_ids: Vec<String> = SEED_TYPES.iter().map(|_| new_id()).collect();
    let (entity_type, property_type) = (type_ids[0].clone(), type_ids[1].clone());
    for (seed_type, type_id) in SEED_TYPES.iter().zip(&type_ids) {
        seed.add_type(seed_type, type_id, &entity_type, &property_type);
    }
    let database_entity = new_id();
    seed.entity(database_entity.clone(), &type_ids[DATABASE_TYPE], false)
        .string("name", name);
    seed.entity(new_id(), &type_ids[MENU_TYPE], true)
        .string("group", "Settings")
        .string("name", "Persons")
        .number("ordinal", 100.0)
        .string("query", "_type.string=person");
    let owner_id = seed.owner.clone();
    let mut person = seed.entity(owner_id.clone(), &type_ids[PERSON_TYPE], false);
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
        seed.rows.push(values::login_value(name, &owner_id, login, seed.now));
    }

    seed.store(conn).await?;
    diesel::update(databases::table.filter(databases::name.eq(name)))
        .set(databases::entity_id.eq(&database_entity))
        .execute(conn)
        .await?;
    Ok(owner_id)
}

/// A database lacking some seeded types: its `entity` and `property` types,
/// the person who created them, and the names of the types it lacks.
#[derive(QueryableByName)]
struct Lacking {
    #[diesel(sql_type = Text)]
    db: String,
    #[diesel(sql_type = Text)]
    entity_type: String,
    #[diesel(sql_type = Text)]
    property_type: String,
    #[diesel(sql_type = Text)]
    owner: String,
    #[diesel(sql_type = Array<Text>)]
    missing: Vec<String>,
}

/// Gives every database the seeded types it lacks (a database made before
/// they were seeded; not their sample entities), each in a transaction of
/// its own under the database's write lock. Answers how many databases
/// gained any; a second run finds none.
pub async fn add_missing_types(pool: &Pool) -> Result<usize, ApiError> {
    let names: Vec<&str> = SEED_TYPES.iter().map(|(name, _, _)| *name).collect();
    let mut conn = pool.get().await?;
    let lacking: Vec<Lacking> = diesel::sql_query(
        "SELECT * FROM (
            SELECT d.name AS db, et.id AS entity_type, pt.id AS property_type, et.created_by AS owner,
                ARRAY(SELECT n FROM unnest($1::text[]) n WHERE NOT EXISTS (
                    SELECT 1 FROM entities t
                    WHERE t.db = d.name AND t.type_id = et.id AND t.name = n AND t.deleted_at IS NULL
                )) AS missing
            FROM databases d
            JOIN entities et ON et.db = d.name AND et.type_id = et.id AND et.name = 'entity'
                AND et.deleted_at IS NULL AND et.created_by IS NOT NULL
            JOIN entities pt ON pt.db = d.name AND pt.type_id = et.id AND pt.name = 'property' AND pt.deleted_at IS NULL
        ) l WHERE cardinality(l.missing) > 0",
    )
    .bind::<Array<Text>, _>(&names)
    .load(&mut conn)
    .await?;
    for database in &lacking {
        conn.transaction(|conn| {
            async move {
                begin_writes(conn, &database.db).await?;
                let mut seed = Seed::new(&database.db, database.owner.clone());
                for seed_type in SEED_TYPES
                    .iter()
                    .filter(|(name, _, _)| database.missing.iter().any(|m| m == name))
                {
                    seed.add_type(seed_type, &new_id(), &database.entity_type, &database.property_type);
                }
                seed.store(conn).await?;
                bump_generation(conn, &database.db).await?;
                Ok::<_, ApiError>(())
            }
            .scope_boxed()
        })
        .await?;
        tracing::info!(database = %database.db, types = ?database.missing, "added the seeded types it lacked");
    }
    Ok(lacking.len())
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
    /// An empty seed of database `db`, its entities owned and created by `owner`.
    fn new(db: &'a str, owner: String) -> Seed<'a> {
        Seed {
            db,
            owner,
            now: Utc::now(),
            entities: Vec::new(),
            rows: Vec::new(),
        }
    }

    /// Adds type `id` with its definitions.
    fn add_type(
        &mut self,
        (type_name, label, definitions): &SeedType,
        id: &str,
        entity_type: &str,
        property_type: &str,
    ) {
        self.entity(id.to_owned(), entity_type, true)
            .string("name", type_name)
            .string("label", label);
        for (prop, value_type, multilingual, search) in definitions.iter() {
            let mut definition = self.entity(new_id(), property_type, true);
            definition
                .reference("_parent", id)
                .string("name", prop)
                .string("type", value_type);
            if *multilingual {
                definition.boolean("multilingual", true);
            }
            if *search {
                definition.boolean("search", true);
            }
            if LIST_DEFINITIONS.contains(&(*type_name, *prop)) {
                definition.boolean("list", true);
            }
        }
    }

    /// Writes the entities and their values, and projects them.
    async fn store(&self, conn: &mut AsyncPgConnection) -> Result<(), ApiError> {
        for id in &self.entities {
            values::insert_entity(conn, self.db, id, self.now, &self.owner).await?;
        }
        values::insert_values(conn, &self.rows).await?;
        // Views and search depend on the definitions' own projections:
        // the first pass makes those, the second uses them.
        for _ in 0..2 {
            let mut types = projection::TypeCache::default();
            for id in &self.entities {
                projection::project(conn, &mut types, self.db, id).await?;
            }
        }
        Ok(())
    }

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

    fn number(&mut self, prop: &str, number: f64) -> &mut Self {
        let mut row = self.row(prop);
        row.number = Some(number);
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
