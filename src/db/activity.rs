//! A person's activity: the values they wrote and those they deleted, on the
//! live entities a reader may read in full (`_viewer` or higher), newest
//! first. Each kind is read backwards along its own index
//! (`property_values_written_by`, `property_values_deleted_by`), so a page
//! reads about as many rows as it shows, not the person's whole past.

use chrono::{DateTime, NaiveDate, Utc};
use diesel::QueryableByName;
use diesel::sql_types::{Bool, Date, Float8, Int8, Nullable, Text, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::db::prepared::Prepared;
use crate::model::stored::ValueRow;

/// One value written (`removal` false, `at` its writing) or deleted
/// (`removal` true, `at` its deletion) by the person.
pub struct Event {
    pub at: DateTime<Utc>,
    pub removal: bool,
    /// The changed entity's name, if it has one.
    pub entity_name: Option<String>,
    pub value: ValueRow,
}

#[derive(QueryableByName)]
struct EventRow {
    #[diesel(sql_type = Timestamptz)]
    at: DateTime<Utc>,
    #[diesel(sql_type = Bool)]
    removal: bool,
    #[diesel(sql_type = Nullable<Text>)]
    entity_name: Option<String>,
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Text)]
    entity_id: String,
    #[diesel(sql_type = Text)]
    prop: String,
    #[diesel(sql_type = Nullable<Text>)]
    string: Option<String>,
    #[diesel(sql_type = Nullable<Float8>)]
    number: Option<f64>,
    #[diesel(sql_type = Nullable<Bool>)]
    boolean: Option<bool>,
    #[diesel(sql_type = Nullable<Date>)]
    date: Option<NaiveDate>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    datetime: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Text>)]
    reference: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    filename: Option<String>,
    #[diesel(sql_type = Nullable<Int8>)]
    filesize: Option<i64>,
    #[diesel(sql_type = Nullable<Text>)]
    filetype: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    language: Option<String>,
    #[diesel(sql_type = Timestamptz)]
    created_at: DateTime<Utc>,
    #[diesel(sql_type = Nullable<Text>)]
    created_by: Option<String>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    deleted_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Text>)]
    deleted_by: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    login_provider: Option<String>,
}

/// The statement of [`newest_events`]: `$1` the database, `$2` the person,
/// `$3` the reader, `$4` how many events the page needs at least.
pub const NEWEST_EVENTS: &str = "\
WITH events AS NOT MATERIALIZED ( \
  SELECT v.created_at AS at, false AS removal, e.name AS entity_name, v.* FROM property_values v \
  JOIN entities e ON e.db = v.db AND e.id = v.entity_id \
  WHERE v.db = $1 AND v.created_by = $2 AND v.prop <> '_created' \
    AND e.deleted_at IS NULL AND $3 = ANY (e.viewers) AND NOT $3 = ANY (e.noaccess) \
  UNION ALL \
  SELECT v.deleted_at, true, e.name, v.* FROM property_values v \
  JOIN entities e ON e.db = v.db AND e.id = v.entity_id \
  WHERE v.db = $1 AND v.deleted_by = $2 AND v.prop <> '_created' \
    AND e.deleted_at IS NULL AND $3 = ANY (e.viewers) AND NOT $3 = ANY (e.noaccess)) \
SELECT at, removal, entity_name, id, entity_id, prop, string, number, boolean, date, datetime, reference, \
  filename, filesize, filetype, language, created_at, created_by, deleted_at, deleted_by, login_provider \
FROM events \
WHERE at >= COALESCE((SELECT at FROM events ORDER BY at DESC OFFSET $4 - 1 LIMIT 1), '-infinity') \
ORDER BY at DESC, entity_id, prop, removal, id";

/// Person `person`'s newest events on the entities `reader` may read in
/// full, newest first: at least `needed` of them when there are that many,
/// and every event of the moment the last one shows (a change made of a
/// value deleted and one written at one moment is never cut in two).
pub async fn newest_events(
    conn: &mut AsyncPgConnection,
    db: &str,
    person: &str,
    reader: &str,
    needed: i64,
) -> diesel::QueryResult<Vec<Event>> {
    let query = diesel::sql_query(NEWEST_EVENTS)
        .bind::<Text, _>(db)
        .bind::<Text, _>(person)
        .bind::<Text, _>(reader)
        .bind::<Int8, _>(needed);
    let rows: Vec<EventRow> = Prepared::kept(query).load(conn).await?;
    Ok(rows
        .into_iter()
        .map(|row| Event {
            at: row.at,
            removal: row.removal,
            entity_name: row.entity_name,
            value: ValueRow {
                id: row.id,
                entity_id: row.entity_id,
                prop: row.prop,
                string: row.string,
                number: row.number,
                boolean: row.boolean,
                date: row.date,
                datetime: row.datetime,
                reference: row.reference,
                filename: row.filename,
                filesize: row.filesize,
                filetype: row.filetype,
                language: row.language,
                created_at: row.created_at,
                created_by: row.created_by,
                deleted_at: row.deleted_at,
                deleted_by: row.deleted_by,
                login_provider: row.login_provider,
                // activity shows values, never their stored objects
                object_id: None,
            },
        })
        .collect())
}
