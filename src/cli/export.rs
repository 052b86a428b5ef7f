//! `eds export` and `eds import`: a database as JSON lines, a header and then
//! one line per entity with every value it ever had, deleted ones included
//! and ids kept, so a database moves between servers with its history. The
//! format is specified in docs/export.md.

use std::collections::HashSet;
use std::io::{BufRead, IsTerminal, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use chrono::{DateTime, NaiveDate, Utc};
use diesel::QueryableByName;
use diesel::prelude::*;
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::cli::admin::Failure;
use crate::db::projection::{self, TypeCache};
use crate::db::schema::{databases as databases_table, entities, property_values};
use crate::db::{Pool, databases, formula_queue};
use crate::model::ids::is_valid_id;
use crate::model::{ENTITY_TYPE, PROPERTY_TYPE};

/// The header's `format`.
pub const FORMAT: &str = "eds-export";
/// The header's `version`: raised whenever a reader of the old one would
/// misread a file of the new one.
pub const VERSION: u64 = 1;
/// Entities read per query when exporting, and rows per insert when
/// importing (a value row binds 20 parameters; PostgreSQL takes 65535).
const BATCH: usize = 1000;

/// The first line of an export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    pub format: String,
    pub version: u64,
    /// The exported database's name (an import may take another).
    pub database: String,
    pub exported_at: DateTime<Utc>,
    /// Entity lines that follow, and values on them: a shorter file is refused.
    pub entities: u64,
    pub values: u64,
}

/// When and by whom something was created or deleted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stamp {
    pub at: DateTime<Utc>,
    pub by: Option<String>,
}

/// One entity, with every value it ever had.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntityLine {
    #[serde(rename = "_id")]
    pub id: String,
    pub created: Stamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted: Option<Stamp>,
    pub values: Vec<ValueLine>,
}

/// One stored value, as its row holds it (credential columns included, so
/// API keys keep working after a move).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValueLine {
    #[serde(rename = "_id")]
    pub id: String,
    #[serde(rename = "type")]
    pub prop: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub string: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boolean: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date: Option<NaiveDate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datetime: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filesize: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filetype: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_lookup: Option<String>,
    pub created: Stamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted: Option<Stamp>,
}

/// An entity's own columns (its projection is rebuilt on import).
#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = entities)]
struct StoredEntity {
    db: String,
    id: String,
    created_at: DateTime<Utc>,
    created_by: Option<String>,
    deleted_at: Option<DateTime<Utc>>,
    deleted_by: Option<String>,
}

/// Every column of a value row.
#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = property_values)]
struct StoredValue {
    db: String,
    id: String,
    entity_id: String,
    prop: String,
    string: Option<String>,
    number: Option<f64>,
    boolean: Option<bool>,
    date: Option<NaiveDate>,
    datetime: Option<DateTime<Utc>>,
    reference: Option<String>,
    filename: Option<String>,
    filesize: Option<i64>,
    filetype: Option<String>,
    language: Option<String>,
    secret: Option<String>,
    secret_lookup: Option<String>,
    created_at: DateTime<Utc>,
    created_by: Option<String>,
    deleted_at: Option<DateTime<Utc>>,
    deleted_by: Option<String>,
}

fn stamp(at: Option<DateTime<Utc>>, by: Option<String>) -> Option<Stamp> {
    at.map(|at| Stamp { at, by })
}

impl StoredValue {
    fn into_line(self) -> Result<ValueLine, Failure> {
        // JSON has no NaN or infinity: refuse rather than write `null`.
        if self.number.is_some_and(|number| !number.is_finite()) {
            return Err(Failure(format!("value {} holds a number JSON cannot carry", self.id)));
        }
        Ok(ValueLine {
            id: self.id,
            prop: self.prop,
            string: self.string,
            number: self.number,
            boolean: self.boolean,
            date: self.date,
            datetime: self.datetime,
            reference: self.reference,
            filename: self.filename,
            filesize: self.filesize,
            filetype: self.filetype,
            language: self.language,
            secret: self.secret,
            secret_lookup: self.secret_lookup,
            created: Stamp {
                at: self.created_at,
                by: self.created_by,
            },
            deleted: stamp(self.deleted_at, self.deleted_by),
        })
    }

    fn from_line(db: &str, entity_id: &str, line: ValueLine) -> StoredValue {
        let (deleted_at, deleted_by) = split(line.deleted);
        StoredValue {
            db: db.to_owned(),
            id: line.id,
            entity_id: entity_id.to_owned(),
            prop: line.prop,
            string: line.string,
            number: line.number,
            boolean: line.boolean,
            date: line.date,
            datetime: line.datetime,
            reference: line.reference,
            filename: line.filename,
            filesize: line.filesize,
            filetype: line.filetype,
            language: line.language,
            secret: line.secret,
            secret_lookup: line.secret_lookup,
            created_at: line.created.at,
            created_by: line.created.by,
            deleted_at,
            deleted_by,
        }
    }
}

fn split(stamp: Option<Stamp>) -> (Option<DateTime<Utc>>, Option<String>) {
    match stamp {
        Some(Stamp { at, by }) => (Some(at), by),
        None => (None, None),
    }
}

/// A progress bar on stderr, drawn only when stderr is a terminal so that
/// scripts and logs never receive its redraws.
fn progress(len: u64, what: &'static str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{msg:>10} [{bar:40}] {pos}/{len} ({eta} left)")
            .expect("a valid progress template")
            .progress_chars("=> "),
    );
    bar.set_message(what);
    bar
}

fn write_line(out: &mut (dyn Write + Send), line: &impl Serialize) -> Result<(), Failure> {
    serde_json::to_writer(&mut *out, line).map_err(|e| Failure(format!("writing the export: {e}")))?;
    out.write_all(b"\n")?;
    Ok(())
}

/// Writes database `db` to `out`: the header, then its entities by `_id`.
/// One read-only snapshot, so writes made meanwhile are wholly in or out.
pub async fn export(pool: &Pool, db: &str, out: &mut (dyn Write + Send)) -> Result<Header, Failure> {
    let mut conn = pool.get().await?;
    conn.build_transaction()
        .repeatable_read()
        .read_only()
        .run(|conn| {
            async move {
                if !databases::exists(conn, db).await? {
                    return Err(Failure(format!("database {db} not found")));
                }
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
                let header = Header {
                    format: FORMAT.to_owned(),
                    version: VERSION,
                    database: db.to_owned(),
                    exported_at: Utc::now(),
                    entities: entity_count as u64,
                    values: value_count as u64,
                };
                write_line(out, &header)?;
                let bar = progress(header.entities, "exporting");
                let mut after = String::new();
                loop {
                    let page: Vec<StoredEntity> = entities::table
                        .filter(entities::db.eq(db))
                        .filter(entities::id.gt(&after))
                        .order(entities::id.asc())
                        .limit(BATCH as i64)
                        .select(StoredEntity::as_select())
                        .load(conn)
                        .await?;
                    let Some(last) = page.last() else { break };
                    after.clone_from(&last.id);
                    let ids: Vec<&String> = page.iter().map(|entity| &entity.id).collect();
                    let rows: Vec<StoredValue> = property_values::table
                        .filter(property_values::db.eq(db))
                        .filter(property_values::entity_id.eq_any(ids))
                        .order((property_values::entity_id.asc(), property_values::id.asc()))
                        .select(StoredValue::as_select())
                        .load(conn)
                        .await?;
                    // Both lists are in `_id` order: each entity's values come next.
                    let mut rows = rows.into_iter().peekable();
                    for entity in page {
                        let mut values = Vec::new();
                        while let Some(row) = rows.next_if(|row| row.entity_id == entity.id) {
                            values.push(row.into_line()?);
                        }
                        let line = EntityLine {
                            id: entity.id,
                            created: Stamp {
                                at: entity.created_at,
                                by: entity.created_by,
                            },
                            deleted: stamp(entity.deleted_at, entity.deleted_by),
                            values,
                        };
                        write_line(out, &line)?;
                        bar.inc(1);
                    }
                }
                out.flush()?;
                bar.finish_and_clear();
                Ok(header)
            }
            .scope_boxed()
        })
        .await
}

/// Exports into `path` through a sibling temporary file renamed at the end,
/// so a failed export never leaves a file that looks complete.
pub async fn export_to_file(pool: &Pool, db: &str, path: &Path) -> Result<Header, Failure> {
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    // Owner-only: an export holds the key hashes. The mode is set again for
    // a partial file left over from an earlier run.
    let opened = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&partial)
        .and_then(|file| {
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
            Ok(file)
        });
    let file = opened.map_err(|e| Failure(format!("{}: {e}", partial.display())))?;
    let mut out = std::io::BufWriter::new(file);
    let exported = export(pool, db, &mut out).await.and_then(|header| {
        out.into_inner()
            .map_err(|e| Failure(e.error().to_string()))?
            .sync_all()?;
        std::fs::rename(&partial, path)?;
        Ok(header)
    });
    if exported.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    exported
}

/// Reads and checks the header line.
fn read_header(line: Option<std::io::Result<String>>) -> Result<Header, Failure> {
    let line = line
        .ok_or_else(|| Failure("the file is empty; an export starts with its header line".to_owned()))?
        .map_err(|e| Failure(format!("line 1: {e}")))?;
    // Format and version first: a newer version may add header fields.
    let loose: Json = serde_json::from_str(&line).map_err(|e| Failure(format!("line 1: {e}")))?;
    if loose["format"] != FORMAT {
        return Err(Failure(format!(
            "line 1: not an eds export (the header's format is not {FORMAT:?})"
        )));
    }
    if loose["version"] != VERSION {
        return Err(Failure(format!(
            "line 1: export format version {} is not supported (this eds reads version {VERSION})",
            loose["version"]
        )));
    }
    serde_json::from_value(loose).map_err(|e| Failure(format!("line 1: {e}")))
}

/// Rows read but not yet inserted.
#[derive(Default)]
struct Batch {
    entities: Vec<StoredEntity>,
    values: Vec<StoredValue>,
}

/// Ids read so far, to refuse a repeated id with its line number.
#[derive(Default)]
struct Seen {
    entities: HashSet<[u8; 12]>,
    values: HashSet<[u8; 12]>,
}

/// The 12 bytes of a well-formed id, or why it is not one.
fn id_bytes(id: &str, what: &str) -> Result<[u8; 12], String> {
    let mut bytes = [0u8; 12];
    if !is_valid_id(id) || hex::decode_to_slice(id, &mut bytes).is_err() {
        return Err(format!("{what} _id {id:?} is not 24 lowercase hex characters"));
    }
    Ok(bytes)
}

impl Batch {
    /// Checks one entity line and queues its rows.
    fn add(&mut self, db: &str, line: EntityLine, seen: &mut Seen) -> Result<(), String> {
        if !seen.entities.insert(id_bytes(&line.id, "entity")?) {
            return Err(format!("entity {} appears twice", line.id));
        }
        for value in line.values {
            if !seen.values.insert(id_bytes(&value.id, "value")?) {
                return Err(format!("value {} appears twice", value.id));
            }
            if value.prop.is_empty() {
                return Err(format!("value {} has an empty type", value.id));
            }
            self.values.push(StoredValue::from_line(db, &line.id, value));
        }
        let (deleted_at, deleted_by) = split(line.deleted);
        self.entities.push(StoredEntity {
            db: db.to_owned(),
            id: line.id,
            created_at: line.created.at,
            created_by: line.created.by,
            deleted_at,
            deleted_by,
        });
        Ok(())
    }

    fn is_full(&self) -> bool {
        self.entities.len() >= BATCH || self.values.len() >= BATCH
    }

    /// Inserts the queued rows: entities first, as values refer to them.
    async fn flush(&mut self, conn: &mut AsyncPgConnection) -> Result<(), Failure> {
        for chunk in self.entities.chunks(BATCH) {
            diesel::insert_into(entities::table).values(chunk).execute(conn).await?;
        }
        for chunk in self.values.chunks(BATCH) {
            diesel::insert_into(property_values::table)
                .values(chunk)
                .execute(conn)
                .await?;
        }
        self.entities.clear();
        self.values.clear();
        Ok(())
    }
}

/// What an import wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Imported {
    pub entities: u64,
    pub values: u64,
}

/// Imports an export into database `db`, which must not exist or hold no
/// entity, in one transaction: a failure leaves nothing written. The
/// projections are then rebuilt by the code every write uses.
pub async fn import(pool: &Pool, db: &str, input: impl BufRead + Send) -> Result<Imported, Failure> {
    if let Some(problem) = databases::name_problem(db) {
        return Err(Failure(format!("database name {db:?} is not allowed ({problem})")));
    }
    let mut lines = input.lines();
    let header = read_header(lines.next())?;
    let mut conn = pool.get().await?;
    conn.transaction(|conn| {
        async move {
            claim_empty_database(conn, db).await?;
            let mut batch = Batch::default();
            let mut seen = Seen::default();
            let bar = progress(header.entities, "reading");
            for (index, line) in lines.enumerate() {
                let number = index + 2;
                let at_line = |e: &dyn std::fmt::Display| Failure(format!("line {number}: {e}"));
                let line = line.map_err(|e| at_line(&e))?;
                let entity: EntityLine = serde_json::from_str(&line).map_err(|e| at_line(&e))?;
                batch.add(db, entity, &mut seen).map_err(|e| at_line(&e))?;
                if batch.is_full() {
                    batch.flush(conn).await?;
                }
                bar.inc(1);
            }
            batch.flush(conn).await?;
            bar.finish_and_clear();
            let read = Imported {
                entities: seen.entities.len() as u64,
                values: seen.values.len() as u64,
            };
            if (read.entities, read.values) != (header.entities, header.values) {
                return Err(Failure(format!(
                    "the file holds {} entities and {} values but its header announces {} and {}: \
                     it is truncated or altered",
                    read.entities, read.values, header.entities, header.values
                )));
            }
            // Fresh statistics: planned for the tables as they were, the
            // projection queries take a full scan per entity.
            diesel::sql_query("ANALYZE entities, property_values")
                .execute(conn)
                .await?;
            rebuild_projections(conn, db).await?;
            Ok(read)
        }
        .scope_boxed()
    })
    .await
}

/// Creates database `db` unless it exists, and locks its row until the
/// transaction ends (a concurrent import into it waits); fails when it
/// already holds entities, live or deleted.
async fn claim_empty_database(conn: &mut AsyncPgConnection, db: &str) -> Result<(), Failure> {
    diesel::insert_into(databases_table::table)
        .values(databases_table::name.eq(db))
        .on_conflict_do_nothing()
        .execute(conn)
        .await?;
    databases_table::table
        .filter(databases_table::name.eq(db))
        .select(databases_table::name)
        .for_update()
        .first::<String>(conn)
        .await?;
    let occupied: bool = diesel::select(diesel::dsl::exists(entities::table.filter(entities::db.eq(db))))
        .get_result(conn)
        .await?;
    if occupied {
        return Err(Failure(format!(
            "database {db} already has entities; import only into a new or empty database"
        )));
    }
    Ok(())
}

#[derive(QueryableByName)]
struct IdRow {
    #[diesel(sql_type = diesel::sql_types::Text)]
    id: String,
}

/// Rebuilds the projection of every live entity. Entity types and property
/// definitions go first, twice, as `databases::create` does for its seed: a
/// definition's projection needs its own type's, and every other entity's
/// needs its definitions'. The rest follow in `_id` (creation) order; what
/// an entity takes from others projected after it (inherited rights,
/// referenced names, formula inputs) reaches it through the same cascades a
/// write triggers.
async fn rebuild_projections(conn: &mut AsyncPgConnection, db: &str) -> Result<(), Failure> {
    let live: Vec<String> = entities::table
        .filter(entities::db.eq(db))
        .filter(entities::deleted_at.is_null())
        .order(entities::id.asc())
        .select(entities::id)
        .load(conn)
        .await?;
    // Entities whose live `_type` is a live entity named `entity` or `property`.
    let meta: Vec<String> = diesel::sql_query(
        "SELECT DISTINCT t.entity_id AS id FROM property_values t \
         JOIN entities e ON e.db = t.db AND e.id = t.entity_id AND e.deleted_at IS NULL \
         WHERE t.db = $1 AND t.prop = '_type' AND t.deleted_at IS NULL \
           AND t.reference IN (SELECT n.entity_id FROM property_values n \
                               WHERE n.db = $1 AND n.prop = 'name' AND n.deleted_at IS NULL \
                                 AND n.string IN ($2, $3)) \
         ORDER BY id",
    )
    .bind::<diesel::sql_types::Text, _>(db)
    .bind::<diesel::sql_types::Text, _>(ENTITY_TYPE)
    .bind::<diesel::sql_types::Text, _>(PROPERTY_TYPE)
    .load::<IdRow>(conn)
    .await?
    .into_iter()
    .map(|row| row.id)
    .collect();
    let is_meta: HashSet<&String> = meta.iter().collect();
    let order: Vec<&String> = meta
        .iter()
        .chain(&meta)
        .chain(live.iter().filter(|id| !is_meta.contains(id)))
        .collect();
    let bar = progress(order.len() as u64, "projecting");
    let mut types = TypeCache::default();
    for (done, id) in order.into_iter().enumerate() {
        if done < 2 * meta.len() {
            // types and definitions are still taking shape: learn nothing yet
            types.clear();
        }
        projection::project(conn, &mut types, db, id).await?;
        bar.inc(1);
    }
    // formulas reading entities projected after them; one that fails stays
    // queued for the servers' workers to retry
    while formula_queue::compute_next(conn, formula_queue::Retry::default()).await? {}
    bar.finish_and_clear();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header_line(format: &str, version: u64) -> String {
        serde_json::json!({
            "format": format, "version": version, "database": "demo",
            "exported_at": "2026-11-22T01:00:00Z", "entities": 0, "values": 0,
        })
        .to_string()
    }

    #[test]
    fn a_header_of_another_format_or_version_is_refused() {
        assert!(read_header(Some(Ok(header_line(FORMAT, VERSION)))).is_ok());
        let other = read_header(Some(Ok(header_line("csv", VERSION)))).unwrap_err();
        assert!(other.0.contains("not an eds export"), "{other}");
        let newer = read_header(Some(Ok(header_line(FORMAT, VERSION + 1)))).unwrap_err();
        assert!(newer.0.contains("version 2 is not supported"), "{newer}");
        assert!(read_header(None).unwrap_err().0.contains("empty"));
    }

    #[test]
    fn an_entity_line_reads_back_as_written() {
        let line = r#"{"_id":"6740e1a0a1b2c3d4e5000001","created":{"at":"2026-11-22T01:02:03.456789Z","by":null},"values":[{"_id":"6740e1a0a1b2c3d4e5000002","type":"price","string":"INV-7","number":7.0,"created":{"at":"2026-11-22T01:02:03.456789Z","by":"6740e1a0a1b2c3d4e5000001"},"deleted":{"at":"2026-11-22T02:00:00Z","by":"6740e1a0a1b2c3d4e5000001"}},{"_id":"6740e1a0a1b2c3d4e5000003","type":"born","date":"1990-05-17","created":{"at":"2026-11-22T01:02:03Z","by":null}}]}"#;
        let parsed: EntityLine = serde_json::from_str(line).unwrap();
        assert_eq!(parsed.values[0].number, Some(7.0));
        assert!(parsed.values[0].deleted.is_some());
        assert_eq!(parsed.values[1].date, NaiveDate::from_ymd_opt(1990, 5, 17));
        let again: EntityLine = serde_json::from_str(&serde_json::to_string(&parsed).unwrap()).unwrap();
        assert_eq!(again, parsed);
    }

    #[test]
    fn unknown_fields_and_malformed_ids_are_refused() {
        let unknown = r#"{"_id":"6740e1a0a1b2c3d4e5000001","created":{"at":"2026-11-22T01:02:03Z","by":null},"values":[],"colour":"red"}"#;
        assert!(serde_json::from_str::<EntityLine>(unknown).is_err());
        let upper =
            r#"{"_id":"6740E1A0A1B2C3D4E5000001","created":{"at":"2026-11-22T01:02:03Z","by":null},"values":[]}"#;
        let line: EntityLine = serde_json::from_str(upper).unwrap();
        let error = Batch::default().add("demo", line, &mut Seen::default()).unwrap_err();
        assert!(error.contains("24 lowercase hex"), "{error}");
    }

    #[test]
    fn a_repeated_value_id_is_refused() {
        let line = r#"{"_id":"6740e1a0a1b2c3d4e5000001","created":{"at":"2026-11-22T01:02:03Z","by":null},"values":[{"_id":"6740e1a0a1b2c3d4e5000002","type":"a","string":"x","created":{"at":"2026-11-22T01:02:03Z","by":null}},{"_id":"6740e1a0a1b2c3d4e5000002","type":"a","string":"y","created":{"at":"2026-11-22T01:02:03Z","by":null}}]}"#;
        let line: EntityLine = serde_json::from_str(line).unwrap();
        let error = Batch::default().add("demo", line, &mut Seen::default()).unwrap_err();
        assert!(error.contains("appears twice"), "{error}");
    }
}
