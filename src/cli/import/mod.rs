//! `eds import`: an export (docs/guide/src/operating/export-format.md) read into a new or empty
//! database in one transaction, its projections rebuilt and its own
//! `database` entity (the lowest id) recorded.
//!
//! The file is read three times. First it is checked whole (nothing is
//! written from a file that would fail) and its entity types and property
//! definitions found. Then those are loaded and projected. Then the rest is
//! loaded a chunk at a time: an entity whose projection reads nothing but
//! its type is projected from the file's values and inserted with its
//! projection, so its row and its values are each written once; the others
//! (formulas, inherited rights, searchable references) are inserted as they
//! are and projected one by one at the end, with what follows each.

use std::io::{BufRead, Seek};

use chrono::{DateTime, Utc};
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection};

use crate::cli::lines::{EntityLine, Stamp, ValueLine};
use crate::cli::{Failure, progress};
use crate::db::export::{self as rows, StoredEntity};
use crate::db::projection::{self, Loaded, TypeCache};
use crate::db::values::ValueRecord;
use crate::db::{Pool, databases, generation};
use crate::model::stored::ValueRow;

mod survey;

pub use self::survey::Imported;
use self::survey::{Survey, parse_line, read_header, survey};

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
        object_id: line.object_id,
    }
}

/// A stamp as its `*_at` and `*_by` columns (both NULL for none).
fn stamp_columns(stamp: Option<Stamp>) -> (Option<DateTime<Utc>>, Option<String>) {
    match stamp {
        Some(Stamp { at, by }) => (Some(at), by),
        None => (None, None),
    }
}

/// Rows read but not yet inserted: entities without their projections, and
/// value rows.
#[derive(Default)]
struct Batch {
    entities: Vec<StoredEntity>,
    values: Vec<ValueRecord>,
}

impl Batch {
    /// Queues the rows of an entity line; answers the entity as loaded when
    /// it is live (its row is then left to the caller).
    fn add(&mut self, db: &str, line: EntityLine) -> Option<Loaded> {
        let first_value = self.values.len();
        for value in line.values {
            self.values.push(value_row(db, &line.id, value));
        }
        if line.deleted.is_none() {
            let rows = self.values[first_value..]
                .iter()
                .filter(|value| value.deleted_at.is_none())
                .map(ValueRow::from)
                .collect();
            return Some(Loaded {
                id: line.id,
                created_at: line.created.at,
                created_by: line.created.by,
                rows,
            });
        }
        self.push_bare(db, line.id, line.created, line.deleted);
        None
    }

    /// Queues the row of a live entity without its projection.
    fn push_loaded(&mut self, db: &str, entity: Loaded) {
        let created = Stamp {
            at: entity.created_at,
            by: entity.created_by,
        };
        self.push_bare(db, entity.id, created, None);
    }

    /// Queues an entity's row without its projection.
    fn push_bare(&mut self, db: &str, id: String, created: Stamp, deleted: Option<Stamp>) {
        let (deleted_at, deleted_by) = stamp_columns(deleted);
        self.entities.push(StoredEntity {
            db: db.to_owned(),
            id,
            created_at: created.at,
            created_by: created.by,
            deleted_at,
            deleted_by,
        });
    }

    fn is_full(&self) -> bool {
        self.entities.len() >= rows::BATCH || self.values.len() >= 8 * rows::BATCH
    }

    /// Inserts the queued rows.
    async fn flush(&mut self, conn: &mut AsyncPgConnection) -> Result<(), Failure> {
        rows::insert(conn, &self.entities, &self.values).await?;
        self.entities.clear();
        self.values.clear();
        Ok(())
    }
}

/// A chunk of the entities that are not types or definitions.
#[derive(Default)]
struct Chunk {
    live: Vec<Loaded>,
    rows: Batch,
}

impl Chunk {
    fn is_full(&self) -> bool {
        self.live.len() + self.rows.entities.len() >= rows::BATCH || self.rows.values.len() >= 8 * rows::BATCH
    }

    /// Inserts the chunk: the entities that read only their type with their
    /// projections, then the others' rows as they are, then every value.
    /// Answers the others' ids, to project once all is loaded.
    async fn load(
        &mut self,
        conn: &mut AsyncPgConnection,
        types: &mut TypeCache,
        db: &str,
    ) -> Result<Vec<String>, Failure> {
        let others = projection::insert_plain(conn, types, db, std::mem::take(&mut self.live)).await?;
        let ids = others.iter().map(|entity| entity.id.clone()).collect();
        for entity in others {
            self.rows.push_loaded(db, entity);
        }
        self.rows.flush(conn).await?;
        Ok(ids)
    }
}

/// Table statistics kept in step with a growing load. Planned for the
/// tables as they were before it (empty, for a new cluster), the statements
/// that insert value rows read every entity row so far for each chunk: a
/// load of a million took hours. Fresh statistics whenever the entities
/// loaded have doubled cost a few hundred milliseconds each, twenty times
/// at most.
struct Statistics {
    next: usize,
}

impl Default for Statistics {
    fn default() -> Statistics {
        Statistics { next: rows::BATCH }
    }
}

impl Statistics {
    /// After `read` entity lines are loaded.
    async fn loaded(&mut self, conn: &mut AsyncPgConnection, read: usize) -> Result<(), Failure> {
        if read >= self.next {
            rows::analyze(conn).await?;
            self.next = 2 * read;
        }
        Ok(())
    }
}

/// The entity lines of `input`, read again from the start.
fn entity_lines<R: BufRead + Seek>(input: &mut R) -> std::io::Result<impl Iterator<Item = std::io::Result<String>>> {
    input.rewind()?;
    Ok(input.lines().skip(1))
}

/// Imports an export into database `db`, which must not exist or hold no
/// entity, in one transaction: a failure leaves nothing written. The file is
/// checked whole before anything is written; the projections are built by
/// the code every write uses.
pub async fn import<R: BufRead + Seek + Send>(pool: &Pool, db: &str, mut input: R) -> Result<Imported, Failure> {
    if let Some(problem) = databases::name_problem(db) {
        return Err(Failure(format!("database name {db:?} is not allowed ({problem})")));
    }
    let header = read_header(input.by_ref().lines().next())?;
    let Survey { meta, read } = survey(entity_lines(&mut input)?, &header)?;
    let mut conn = pool.get().await?;
    conn.transaction(|conn| {
        async move {
            if rows::claim_database(conn, db).await? {
                return Err(Failure(format!(
                    "database {db} already has entities; import only into a new or empty database"
                )));
            }
            // the database's writer for this transaction: writes to it wait,
            // and its generation is bumped once, at the end
            generation::begin_writes(conn, db).await?;
            rows::value_tallies_later(conn).await?;
            let mut types = TypeCache::default();
            // the types and definitions, as they are, then their projections
            let mut batch = Batch::default();
            let mut meta_ids = Vec::new();
            for (index, line) in entity_lines(&mut input)?.enumerate() {
                if meta.contains(&index) {
                    // live, as the survey found them
                    if let Some(live) = batch.add(db, parse_line(index, line)?) {
                        meta_ids.push(live.id.clone());
                        batch.push_loaded(db, live);
                    }
                    if batch.is_full() {
                        batch.flush(conn).await?;
                    }
                }
            }
            batch.flush(conn).await?;
            rows::project_types(conn, &mut types, db, &mut meta_ids).await?;
            // the rest a chunk at a time
            let bar = progress(header.entities, "loading");
            let mut chunk = Chunk::default();
            let mut others = Vec::new();
            let mut statistics = Statistics::default();
            for (index, line) in entity_lines(&mut input)?.enumerate() {
                bar.inc(1);
                if meta.contains(&index) {
                    continue;
                }
                let line = parse_line(index, line)?;
                if let Some(live) = chunk.rows.add(db, line) {
                    chunk.live.push(live);
                }
                if chunk.is_full() {
                    others.extend(chunk.load(conn, &mut types, db).await?);
                    statistics.loaded(conn, index + 1).await?;
                }
            }
            others.extend(chunk.load(conn, &mut types, db).await?);
            bar.finish_and_clear();
            rows::analyze(conn).await?;
            let bar = progress(others.len() as u64, "projecting");
            let mut projected = |done: usize| bar.set_position(done as u64);
            rows::project_each(conn, &mut types, db, &mut others, &mut projected).await?;
            // before the formulas, whose queries may read them
            rows::count_value_tallies(conn, db).await?;
            crate::jobs::formulas::compute_all(conn).await?;
            bar.finish_and_clear();
            databases::adopt_own_entity(conn, db).await?;
            generation::bump_generation(conn, db).await?;
            Ok(read)
        }
        .scope_boxed()
    })
    .await
}
