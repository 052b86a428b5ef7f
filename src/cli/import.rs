//! `eds import`: an export (docs/export.md) read into a new or empty
//! database in one transaction, its projections rebuilt and its own
//! `database` entity (the lowest id) recorded.

use std::collections::HashSet;
use std::io::BufRead;

use chrono::{DateTime, Utc};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection};
use serde_json::Value as Json;

use crate::cli::lines::{EntityLine, FORMAT, Header, Stamp, VERSION, ValueLine};
use crate::cli::{Failure, progress};
use crate::db::export::{self as rows, StoredEntity};
use crate::db::values::ValueRecord;
use crate::db::{Pool, databases};
use crate::model::ids::is_valid_id;

/// A value line as the row to insert for entity `entity_id` of `db`.
fn value_row(db: &str, entity_id: &str, line: ValueLine) -> ValueRecord {
    let (deleted_at, deleted_by) = stamp_columns(line.deleted);
    ValueRecord {
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
        login_provider: line.login_provider,
    }
}

/// A stamp as its `*_at` and `*_by` columns (both NULL for none).
fn stamp_columns(stamp: Option<Stamp>) -> (Option<DateTime<Utc>>, Option<String>) {
    match stamp {
        Some(Stamp { at, by }) => (Some(at), by),
        None => (None, None),
    }
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
    values: Vec<ValueRecord>,
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
            self.values.push(value_row(db, &line.id, value));
        }
        let (deleted_at, deleted_by) = stamp_columns(line.deleted);
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
        self.entities.len() >= rows::BATCH || self.values.len() >= rows::BATCH
    }

    /// Inserts the queued rows.
    async fn flush(&mut self, conn: &mut AsyncPgConnection) -> Result<(), Failure> {
        rows::insert(conn, &self.entities, &self.values).await?;
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
            if rows::claim_database(conn, db).await? {
                return Err(Failure(format!(
                    "database {db} already has entities; import only into a new or empty database"
                )));
            }
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
            rows::analyze(conn).await?;
            let bar = progress(0, "projecting");
            let mut projected = |done: usize, total: usize| {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
            };
            rows::rebuild_projections(conn, db, &mut projected).await?;
            bar.finish_and_clear();
            databases::adopt_own_entity(conn, db).await?;
            Ok(read)
        }
        .scope_boxed()
    })
    .await
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
    fn a_malformed_id_is_refused() {
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
