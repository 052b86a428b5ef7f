//! What every new database starts with: the system types (`entity`,
//! `property`, `database`, `person`) and their definitions, a `database`
//! entity (recorded as the database's own), and the owner person.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::auth::login::Login;
use crate::db::schema::databases;
use crate::db::values::ValueRecord;
use crate::db::{projection, sign_in, values};
use crate::error::{ApiError, ErrorCode};
use crate::model::ids::new_id;
use crate::model::{API_KEY_PROPERTY, ENTITY_TYPE, PROPERTY_TYPE};

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
    let database_entity = new_id();
    seed.entity(database_entity.clone(), &type_ids[2], false)
        .string("name", name);
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
    diesel::update(databases::table.filter(databases::name.eq(name)))
        .set(databases::entity_id.eq(&database_entity))
        .execute(conn)
        .await?;
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
