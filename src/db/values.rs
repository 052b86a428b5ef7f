//! Rows of `entities` and `property_values` and the small queries on them.

use chrono::{DateTime, Utc};
use diesel::deserialize::{self, FromSql};
use diesel::pg::{Pg, PgValue};
use diesel::prelude::*;
use diesel::sql_types::Jsonb;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::db::prepared::Prepared;
pub use crate::db::references::{AccessColumns, Target, targets};
use crate::db::schema::{entities, property_values};
pub use crate::db::value_rows::{ValueRecord, insert_values, insert_values_of_new_entities, login_value};
use crate::model::json::number_json;
use crate::model::stored::ValueRow;
use crate::rights::{self, RightsLists, Sharing, ViewLevel, Visibility};

/// The parts of an entity's row that reads and rights checks need; its
/// document a JSON tree, or the text PostgreSQL sent ([`RawDoc`]) where a
/// read only passes it on.
#[derive(Debug, Clone, Queryable, QueryableByName, Selectable)]
#[diesel(table_name = entities)]
pub struct EntityRow<Doc = serde_json::Value> {
    pub id: String,
    pub type_id: Option<String>,
    pub parent_ids: Vec<String>,
    pub name: Option<String>,
    pub sharing: String,
    pub owners: Vec<String>,
    pub editors: Vec<String>,
    pub expanders: Vec<String>,
    pub viewers: Vec<String>,
    pub noaccess: Vec<String>,
    pub doc: Doc,
    pub public_props: Vec<String>,
    pub domain_props: Vec<String>,
}

/// An entity's document as the JSON text PostgreSQL sends for `jsonb`: a
/// page of entities is answered from it without building a tree of each
/// (`view::shown`).
#[derive(Debug, Clone)]
pub struct RawDoc(pub String);

impl FromSql<Jsonb, Pg> for RawDoc {
    fn from_sql(value: PgValue<'_>) -> deserialize::Result<Self> {
        // jsonb's binary form: a version byte, then the text
        match value.as_bytes() {
            [1, text @ ..] => Ok(RawDoc(std::str::from_utf8(text)?.to_owned())),
            _ => Err("unsupported jsonb encoding version".into()),
        }
    }
}

impl<Doc> EntityRow<Doc> {
    pub fn sharing(&self) -> Sharing {
        Sharing::parse(&self.sharing).unwrap_or(Sharing::Private)
    }

    /// The effective rights lists kept in the projection.
    pub fn lists(&self) -> RightsLists {
        let set = |items: &[String]| items.iter().cloned().collect();
        RightsLists {
            owners: set(&self.owners),
            editors: set(&self.editors),
            expanders: set(&self.expanders),
            viewers: set(&self.viewers),
            noaccess: set(&self.noaccess),
        }
    }

    /// How much of the entity `person` sees ([`rights::view_level`]),
    /// decided on the row's own lists.
    pub fn view_level(&self, person: Option<&str>) -> Option<ViewLevel> {
        let listed = |list: &[String], person: &str| list.iter().any(|p| p == person);
        rights::view_level_in(
            self.sharing(),
            person,
            |person| listed(&self.noaccess, person),
            |person| listed(&self.viewers, person),
        )
    }

    /// Whether the view `level` of the entity shows property `prop`
    /// ([`Visibility::shows`]).
    pub fn shows(&self, level: ViewLevel, prop: &str) -> bool {
        rights::shows_in_view(level, prop, &self.public_props, &self.domain_props)
    }

    /// Whether `person`'s view of the entity shows property `prop`.
    pub fn shows_to(&self, person: Option<&str>, prop: &str) -> bool {
        self.view_level(person).is_some_and(|level| self.shows(level, prop))
    }

    /// Who sees the entity, and which of its properties.
    pub fn visibility(&self) -> Visibility<'_> {
        Visibility {
            sharing: self.sharing(),
            lists: self.lists(),
            public_props: &self.public_props,
            domain_props: &self.domain_props,
        }
    }
}

/// A live entity; with `lock`, its row is locked until the transaction ends,
/// which orders every write to one entity, across processes too.
pub async fn live_entity(
    conn: &mut AsyncPgConnection,
    db: &str,
    id: &str,
    lock: bool,
) -> QueryResult<Option<EntityRow>> {
    let query = entities::table
        .filter(entities::db.eq(db))
        .filter(entities::id.eq(id))
        .filter(entities::deleted_at.is_null())
        .select(EntityRow::as_select());
    if lock {
        query.for_update().first(conn).await.optional()
    } else {
        query.first(conn).await.optional()
    }
}

/// The live entities of `db` among `ids`: what the queries below start from.
#[diesel::dsl::auto_type]
fn live_among<'a>(db: &'a str, ids: &'a [String]) -> _ {
    entities::table
        .filter(entities::db.eq(db))
        .filter(entities::id.eq_any(ids))
        .filter(entities::deleted_at.is_null())
}

/// The live ones of entities `ids`, in no order.
pub async fn live_entities(conn: &mut AsyncPgConnection, db: &str, ids: &[String]) -> QueryResult<Vec<EntityRow>> {
    live_among(db, ids).select(EntityRow::as_select()).load(conn).await
}

/// The live ones of entities `ids`, locked in id order until the
/// transaction ends.
pub async fn lock_live_entities(conn: &mut AsyncPgConnection, db: &str, ids: &[String]) -> QueryResult<Vec<EntityRow>> {
    live_among(db, ids)
        .order(entities::id)
        .select(EntityRow::as_select())
        .for_update()
        .load(conn)
        .await
}

/// Those of `ids` that are live entities of `db`.
pub async fn live_ids(conn: &mut AsyncPgConnection, db: &str, ids: &[String]) -> QueryResult<Vec<String>> {
    live_among(db, ids).select(entities::id).load(conn).await
}

/// The live ones of entities `ids` that no other transaction holds, in id
/// order, locked until this transaction ends; those held are left out
/// rather than waited for.
pub async fn lock_live_unheld(conn: &mut AsyncPgConnection, db: &str, ids: &[String]) -> QueryResult<Vec<EntityRow>> {
    live_among(db, ids)
        .order(entities::id)
        .select(EntityRow::as_select())
        .for_update()
        .skip_locked()
        .load(conn)
        .await
}

/// Live values of one entity, oldest first.
pub async fn live_values(conn: &mut AsyncPgConnection, db: &str, entity_id: &str) -> QueryResult<Vec<ValueRow>> {
    property_values::table
        .filter(property_values::db.eq(db))
        .filter(property_values::entity_id.eq(entity_id))
        .filter(property_values::deleted_at.is_null())
        .order(property_values::id.asc())
        .select(ValueRow::as_select())
        .load(conn)
        .await
}

/// The live values of entities `entity_ids`, by entity, each's oldest first.
pub async fn live_values_of(
    conn: &mut AsyncPgConnection,
    db: &str,
    entity_ids: &[String],
) -> QueryResult<Vec<ValueRow>> {
    property_values::table
        .filter(property_values::db.eq(db))
        .filter(property_values::entity_id.eq_any(entity_ids))
        .filter(property_values::deleted_at.is_null())
        .order((property_values::entity_id.asc(), property_values::id.asc()))
        .select(ValueRow::as_select())
        .load(conn)
        .await
}

/// Every value an entity ever had, live and deleted, oldest first.
pub async fn all_values(conn: &mut AsyncPgConnection, db: &str, entity_id: &str) -> QueryResult<Vec<ValueRow>> {
    property_values::table
        .filter(property_values::db.eq(db))
        .filter(property_values::entity_id.eq(entity_id))
        .order(property_values::id.asc())
        .select(ValueRow::as_select())
        .load(conn)
        .await
}

/// One value, live or deleted.
pub async fn find_value(conn: &mut AsyncPgConnection, db: &str, id: &str) -> QueryResult<Option<ValueRow>> {
    property_values::table
        .filter(property_values::db.eq(db))
        .filter(property_values::id.eq(id))
        .select(ValueRow::as_select())
        .first(conn)
        .await
        .optional()
}

/// Marks values deleted (already deleted ones keep their first deletion).
pub async fn soft_delete_values(
    conn: &mut AsyncPgConnection,
    db: &str,
    ids: &[String],
    at: DateTime<Utc>,
    by: &str,
) -> QueryResult<usize> {
    diesel::update(property_values::table)
        .filter(property_values::db.eq(db))
        .filter(property_values::id.eq_any(ids))
        .filter(property_values::deleted_at.is_null())
        .set((property_values::deleted_at.eq(at), property_values::deleted_by.eq(by)))
        .execute(conn)
        .await
}

/// Inserts the row of a new entity; its projection is filled by `projection::project`.
pub async fn insert_entity(
    conn: &mut AsyncPgConnection,
    db: &str,
    id: &str,
    at: DateTime<Utc>,
    by: &str,
) -> QueryResult<usize> {
    diesel::insert_into(entities::table)
        .values((
            entities::db.eq(db),
            entities::id.eq(id),
            entities::created_at.eq(at),
            entities::created_by.eq(by),
        ))
        .execute(conn)
        .await
}

/// Whether `id` is a live entity of `db`.
pub async fn entity_exists(conn: &mut AsyncPgConnection, db: &str, id: &str) -> QueryResult<bool> {
    // diesel does not keep `EXISTS` prepared by itself; every write asks this
    let query = diesel::select(diesel::dsl::exists(
        entities::table
            .filter(entities::db.eq(db))
            .filter(entities::id.eq(id))
            .filter(entities::deleted_at.is_null()),
    ));
    Prepared::kept(query).get_result(conn).await
}

/// Name and type name of live entities, for the `string` and `entity_type` of references.
pub async fn names_and_types(
    conn: &mut AsyncPgConnection,
    db: &str,
    ids: &[String],
) -> QueryResult<Vec<(String, Option<String>, Option<String>)>> {
    let (target, kind) = diesel::alias!(entities as target, entities as kind);
    target
        .left_join(
            kind.on(kind
                .field(entities::db)
                .eq(target.field(entities::db))
                .and(kind.field(entities::id).nullable().eq(target.field(entities::type_id)))),
        )
        .filter(target.field(entities::db).eq(db))
        .filter(target.field(entities::id).eq_any(ids))
        .filter(target.field(entities::deleted_at).is_null())
        .select((
            target.field(entities::id),
            target.field(entities::name),
            kind.field(entities::name).nullable(),
        ))
        .load(conn)
        .await
}

pub async fn soft_delete_entity(
    conn: &mut AsyncPgConnection,
    db: &str,
    id: &str,
    at: DateTime<Utc>,
    by: &str,
) -> QueryResult<usize> {
    diesel::update(entities::table)
        .filter(entities::db.eq(db))
        .filter(entities::id.eq(id))
        .set((entities::deleted_at.eq(at), entities::deleted_by.eq(by)))
        .execute(conn)
        .await
}

/// A live API key whose lookup digest matched.
pub struct KeyCandidate {
    pub db: String,
    pub value_id: String,
    pub entity_id: String,
    pub hash: String,
}

pub async fn api_key_candidates(conn: &mut AsyncPgConnection, lookup: &str) -> QueryResult<Vec<KeyCandidate>> {
    let rows: Vec<(String, String, String, Option<String>)> = property_values::table
        .filter(property_values::secret_lookup.eq(lookup))
        .filter(property_values::deleted_at.is_null())
        .filter(property_values::prop.eq(crate::model::API_KEY_PROPERTY))
        .select((
            property_values::db,
            property_values::id,
            property_values::entity_id,
            property_values::secret,
        ))
        .load(conn)
        .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(db, value_id, entity_id, hash)| {
            Some(KeyCandidate {
                db,
                value_id,
                entity_id,
                hash: hash?,
            })
        })
        .collect())
}

/// What is still live of a token's login, in one statement: which of
/// `persons` (`(db, entity id)`) are live entities, and whether the API key
/// value `key` (`(db, value id)`), if the login is one, is a live key.
pub async fn live_login(
    conn: &mut AsyncPgConnection,
    key: Option<(&str, &str)>,
    persons: &[(&str, &str)],
) -> QueryResult<(bool, Vec<(String, String)>)> {
    use diesel::sql_types::{Array, Bool, Nullable, Text};
    #[derive(QueryableByName)]
    struct Live {
        #[diesel(sql_type = Bool)]
        is_key: bool,
        #[diesel(sql_type = Text)]
        db: String,
        #[diesel(sql_type = Text)]
        id: String,
    }
    let (dbs, ids): (Vec<&str>, Vec<&str>) = persons.iter().copied().unzip();
    let rows: Vec<Live> = diesel::sql_query(
        "SELECT false AS is_key, db, id FROM entities \
         WHERE (db, id) IN (SELECT * FROM unnest($1::text[], $2::text[])) AND deleted_at IS NULL \
         UNION ALL SELECT true, db, id FROM property_values \
         WHERE db = $3 AND id = $4 AND prop = $5 AND deleted_at IS NULL",
    )
    .bind::<Array<Text>, _>(dbs)
    .bind::<Array<Text>, _>(ids)
    .bind::<Nullable<Text>, _>(key.map(|(db, _)| db))
    .bind::<Nullable<Text>, _>(key.map(|(_, id)| id))
    .bind::<Text, _>(crate::model::API_KEY_PROPERTY)
    .load(conn)
    .await?;
    let key_live = rows.iter().any(|row| row.is_key);
    let live = rows
        .into_iter()
        .filter(|row| !row.is_key)
        .map(|row| (row.db, row.id))
        .collect();
    Ok((key_live, live))
}

/// The live value of `prop` with the largest `number`: its string (or the
/// number written out) and number.
pub async fn largest_number(conn: &mut AsyncPgConnection, db: &str, prop: &str) -> QueryResult<Option<(String, f64)>> {
    let found: Option<(Option<String>, Option<f64>)> = property_values::table
        .filter(property_values::db.eq(db))
        .filter(property_values::prop.eq(prop))
        .filter(property_values::deleted_at.is_null())
        .filter(property_values::number.is_not_null())
        .order(property_values::number.desc())
        .select((property_values::string, property_values::number))
        .first(conn)
        .await
        .optional()?;
    Ok(found.and_then(|(string, number)| {
        let number = number?;
        Some((string.unwrap_or_else(|| number_json(number).to_string()), number))
    }))
}
