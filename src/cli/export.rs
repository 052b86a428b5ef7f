//! `eds export`: a database as JSON lines (docs/guide/src/operating/export-format.md), so it moves
//! between servers with its history.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use diesel_async::scoped_futures::ScopedFutureExt;
use serde::Serialize;

use crate::cli::lines::{EntityLine, FORMAT, Header, Stamp, VERSION, ValueLine};
use crate::cli::{Failure, progress};
use crate::db::export as rows;
use crate::db::values::ValueRecord;
use crate::db::{Pool, databases};

/// The stamp of a row's `*_at` and `*_by` columns, when `*_at` is set.
fn stamp(at: Option<DateTime<Utc>>, by: Option<String>) -> Option<Stamp> {
    at.map(|at| Stamp { at, by })
}

/// A value row as its export line; a number JSON cannot carry is refused.
fn value_line(row: ValueRecord) -> Result<ValueLine, Failure> {
    // JSON has no NaN or infinity: refuse rather than write `null`.
    if row.number.is_some_and(|number| !number.is_finite()) {
        return Err(Failure(format!("value {} holds a number JSON cannot carry", row.id)));
    }
    Ok(ValueLine {
        id: row.id,
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
        secret: row.secret,
        secret_lookup: row.secret_lookup,
        login_provider: row.login_provider,
        object_id: row.object_id,
        created: Stamp {
            at: row.created_at,
            by: row.created_by,
        },
        deleted: stamp(row.deleted_at, row.deleted_by),
    })
}

/// One line of the export: `line` as JSON and a newline.
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
                let (entity_count, value_count) = rows::row_counts(conn, db).await?;
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
                    let page = rows::entities_after(conn, db, &after).await?;
                    let Some(last) = page.last() else { break };
                    after.clone_from(&last.id);
                    let ids: Vec<&String> = page.iter().map(|entity| &entity.id).collect();
                    let values = rows::values_of(conn, db, &ids).await?;
                    // Both lists are in `_id` order: each entity's values come next.
                    let mut values = values.into_iter().peekable();
                    for entity in page {
                        let mut lines = Vec::new();
                        while let Some(row) = values.next_if(|row| row.entity_id == entity.id) {
                            lines.push(value_line(row)?);
                        }
                        let line = EntityLine {
                            id: entity.id,
                            created: Stamp {
                                at: entity.created_at,
                                by: entity.created_by,
                            },
                            deleted: stamp(entity.deleted_at, entity.deleted_by),
                            values: lines,
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
