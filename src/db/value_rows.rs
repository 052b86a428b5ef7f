//! Value rows as stored: every column ([`ValueRecord`]) and how rows are
//! inserted, and how a [`ValueRow`], the model's plain data, is read from
//! `property_values` and made from a value about to be inserted.

use chrono::{DateTime, NaiveDate, Utc};
use diesel::deserialize::{self, FromStaticSqlRow};
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Bool, Date, Double, Nullable, Text, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::auth::login::Login;
use crate::db::prepared::Prepared;
use crate::db::schema::property_values;
use crate::model::LOGIN_PROPERTY;
use crate::model::ids::new_id;
use crate::model::stored::ValueRow;

/// The `service_user` value holding `login` on `entity_id`, created by that
/// person: it shows the login's e-mail (or id, or a passkey's device) and
/// provider, is found by its identity, and keeps a passkey's credential.
pub fn login_value(db: &str, entity_id: &str, login: &Login, now: DateTime<Utc>) -> ValueRecord {
    ValueRecord {
        secret: login.passkey.as_ref().map(|passkey| passkey.credential.to_string()),
        db: db.to_owned(),
        id: new_id(),
        entity_id: entity_id.to_owned(),
        prop: LOGIN_PROPERTY.to_owned(),
        string: Some(login.shown().to_owned()),
        secret_lookup: Some(login.identity()),
        login_provider: Some(login.provider.clone()),
        created_at: now,
        created_by: Some(entity_id.to_owned()),
        ..ValueRecord::default()
    }
}

/// Every column of a value row: what a write inserts (live), and what an
/// export reads and an import inserts (live or deleted).
#[derive(Debug, Clone, Default, Queryable, Selectable)]
#[diesel(table_name = property_values)]
pub struct ValueRecord {
    pub db: String,
    pub id: String,
    pub entity_id: String,
    pub prop: String,
    pub string: Option<String>,
    pub number: Option<f64>,
    pub boolean: Option<bool>,
    pub date: Option<NaiveDate>,
    pub datetime: Option<DateTime<Utc>>,
    pub reference: Option<String>,
    pub filename: Option<String>,
    pub filesize: Option<i64>,
    pub filetype: Option<String>,
    pub language: Option<String>,
    pub secret: Option<String>,
    pub secret_lookup: Option<String>,
    pub created_at: DateTime<Utc>,
    pub created_by: Option<String>,
    pub deleted_at: Option<DateTime<Utc>>,
    pub deleted_by: Option<String>,
    pub login_provider: Option<String>,
    /// A restored file value: the value whose stored object holds its content.
    pub object_id: Option<String>,
}

/// Inserts value rows in one statement over column arrays (`unnest`): its
/// text is the same for any number of rows, so it stays prepared. Each row
/// takes its entity's type, audience and the view level of its property
/// from the entity row as it is now (a later change of the entity row
/// brings its live values along: migration `visibility_in_value_rows`).
pub async fn insert_values(conn: &mut AsyncPgConnection, rows: &[ValueRecord]) -> QueryResult<usize> {
    insert_rows(conn, rows, "", "").await
}

/// As [`insert_values`], for every value of entities created in this
/// transaction, which held none before: the statement says so to its
/// triggers. The one keeping `property_multiplicity` then counts the new
/// rows alone instead of every entity's values (migration
/// `multiplicity_of_new_entities`), and the change log takes nothing from
/// them: the entities' create rows already name every property (migration
/// `change_log_kept_for_less`).
pub async fn insert_values_of_new_entities(conn: &mut AsyncPgConnection, rows: &[ValueRecord]) -> QueryResult<usize> {
    insert_rows(
        conn,
        rows,
        "WITH new_entities AS MATERIALIZED (SELECT set_config('eds.values_of_new_entities', 'on', true)) ",
        " CROSS JOIN new_entities",
    )
    .await
}

async fn insert_rows(
    conn: &mut AsyncPgConnection,
    rows: &[ValueRecord],
    before: &str,
    after: &str,
) -> QueryResult<usize> {
    let text = |pick: fn(&ValueRecord) -> Option<String>| rows.iter().map(pick).collect::<Vec<_>>();
    let stamps = |pick: fn(&ValueRecord) -> Option<DateTime<Utc>>| rows.iter().map(pick).collect::<Vec<_>>();
    let query = diesel::sql_query(format!(
        "{before}INSERT INTO property_values (db, id, entity_id, prop, string, number, boolean, date, datetime, \
         reference, filename, filesize, filetype, language, secret, secret_lookup, created_at, created_by, \
         deleted_at, deleted_by, login_provider, object_id, type_id, audience, level) \
         SELECT u.*, e.type_id, e.audience, value_level(u.prop, e.public_props, e.domain_props) \
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], \
         $6::double precision[], $7::boolean[], $8::date[], $9::timestamptz[], $10::text[], $11::text[], \
         $12::bigint[], $13::text[], $14::text[], $15::text[], $16::text[], $17::timestamptz[], $18::text[], \
         $19::timestamptz[], $20::text[], $21::text[], $22::text[]) AS u(db, id, entity_id, prop) \
         LEFT JOIN entities e ON e.db = u.db AND e.id = u.entity_id{after}",
    ))
    .bind::<Array<Nullable<Text>>, _>(text(|v| Some(v.db.clone())))
    .bind::<Array<Nullable<Text>>, _>(text(|v| Some(v.id.clone())))
    .bind::<Array<Nullable<Text>>, _>(text(|v| Some(v.entity_id.clone())))
    .bind::<Array<Nullable<Text>>, _>(text(|v| Some(v.prop.clone())))
    .bind::<Array<Nullable<Text>>, _>(text(|v| v.string.clone()))
    .bind::<Array<Nullable<Double>>, _>(rows.iter().map(|v| v.number).collect::<Vec<_>>())
    .bind::<Array<Nullable<Bool>>, _>(rows.iter().map(|v| v.boolean).collect::<Vec<_>>())
    .bind::<Array<Nullable<Date>>, _>(rows.iter().map(|v| v.date).collect::<Vec<_>>())
    .bind::<Array<Nullable<Timestamptz>>, _>(stamps(|v| v.datetime))
    .bind::<Array<Nullable<Text>>, _>(text(|v| v.reference.clone()))
    .bind::<Array<Nullable<Text>>, _>(text(|v| v.filename.clone()))
    .bind::<Array<Nullable<BigInt>>, _>(rows.iter().map(|v| v.filesize).collect::<Vec<_>>())
    .bind::<Array<Nullable<Text>>, _>(text(|v| v.filetype.clone()))
    .bind::<Array<Nullable<Text>>, _>(text(|v| v.language.clone()))
    .bind::<Array<Nullable<Text>>, _>(text(|v| v.secret.clone()))
    .bind::<Array<Nullable<Text>>, _>(text(|v| v.secret_lookup.clone()))
    .bind::<Array<Nullable<Timestamptz>>, _>(stamps(|v| Some(v.created_at)))
    .bind::<Array<Nullable<Text>>, _>(text(|v| v.created_by.clone()))
    .bind::<Array<Nullable<Timestamptz>>, _>(stamps(|v| v.deleted_at))
    .bind::<Array<Nullable<Text>>, _>(text(|v| v.deleted_by.clone()))
    .bind::<Array<Nullable<Text>>, _>(text(|v| v.login_provider.clone()))
    .bind::<Array<Nullable<Text>>, _>(text(|v| v.object_id.clone()));
    Prepared::kept(query).execute(conn).await
}

/// The columns a [`ValueRow`] is read from, in its fields' order: every
/// column of `property_values` but its database and credential columns
/// (a login's provider is shown; its identity is not).
type ValueColumns = (
    property_values::id,
    property_values::entity_id,
    property_values::prop,
    property_values::string,
    property_values::number,
    property_values::boolean,
    property_values::date,
    property_values::datetime,
    property_values::reference,
    property_values::filename,
    property_values::filesize,
    property_values::filetype,
    property_values::language,
    property_values::created_at,
    property_values::created_by,
    property_values::deleted_at,
    property_values::deleted_by,
    property_values::login_provider,
    property_values::object_id,
);

/// The Rust types of [`ValueColumns`].
type ValueFields = (
    String,
    String,
    String,
    Option<String>,
    Option<f64>,
    Option<bool>,
    Option<NaiveDate>,
    Option<DateTime<Utc>>,
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<String>,
    Option<String>,
    DateTime<Utc>,
    Option<String>,
    Option<DateTime<Utc>>,
    Option<String>,
    Option<String>,
    Option<String>,
);

// What `#[derive(Selectable, Queryable)]` would write: the model declares
// `ValueRow` without knowing the table, so the database layer says it here.
impl Selectable<Pg> for ValueRow {
    type SelectExpression = ValueColumns;

    fn construct_selection() -> ValueColumns {
        (
            property_values::id,
            property_values::entity_id,
            property_values::prop,
            property_values::string,
            property_values::number,
            property_values::boolean,
            property_values::date,
            property_values::datetime,
            property_values::reference,
            property_values::filename,
            property_values::filesize,
            property_values::filetype,
            property_values::language,
            property_values::created_at,
            property_values::created_by,
            property_values::deleted_at,
            property_values::deleted_by,
            property_values::login_provider,
            property_values::object_id,
        )
    }
}

impl<ST> Queryable<ST, Pg> for ValueRow
where
    ValueFields: FromStaticSqlRow<ST, Pg>,
{
    type Row = ValueFields;

    fn build(
        (
            id,
            entity_id,
            prop,
            string,
            number,
            boolean,
            date,
            datetime,
            reference,
            filename,
            filesize,
            filetype,
            language,
            created_at,
            created_by,
            deleted_at,
            deleted_by,
            login_provider,
            object_id,
        ): ValueFields,
    ) -> deserialize::Result<ValueRow> {
        Ok(ValueRow {
            id,
            entity_id,
            prop,
            string,
            number,
            boolean,
            date,
            datetime,
            reference,
            filename,
            filesize,
            filetype,
            language,
            created_at,
            created_by,
            deleted_at,
            deleted_by,
            login_provider,
            object_id,
        })
    }
}

impl From<&ValueRecord> for ValueRow {
    fn from(record: &ValueRecord) -> ValueRow {
        ValueRow {
            id: record.id.clone(),
            entity_id: record.entity_id.clone(),
            prop: record.prop.clone(),
            string: record.string.clone(),
            number: record.number,
            boolean: record.boolean,
            date: record.date,
            datetime: record.datetime,
            reference: record.reference.clone(),
            filename: record.filename.clone(),
            filesize: record.filesize,
            filetype: record.filetype.clone(),
            language: record.language.clone(),
            created_at: record.created_at,
            created_by: record.created_by.clone(),
            deleted_at: record.deleted_at,
            deleted_by: record.deleted_by.clone(),
            login_provider: record.login_provider.clone(),
            object_id: record.object_id.clone(),
        }
    }
}
