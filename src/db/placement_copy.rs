//! Moving a database to another cluster (`eds db move`), in two steps. First,
//! while writes go on, its large tables are copied from a snapshot. Then,
//! under the database's write lock on its old cluster (the lock every writer
//! of every process takes), the rows of those tables written since the
//! snapshot and every other table are copied, the placement table switched,
//! and the old copy marked moved, so a writer that waited for the lock finds
//! no live database there and writes on the new cluster. The writes wait (or
//! answer 503 with `Retry-After` at their time limit) only for the second
//! step; the old copy is removed afterwards.

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::SinkExt;
use tokio_postgres::{Client, NoTls, Transaction};

use crate::db::databases::DATA_TABLES;
use crate::db::{Pool, placement};

/// Queues whose ids only order their rows: the new cluster draws them anew
/// (in the old order), as its own rows of other databases hold the same ids.
const RENUMBERED: [&str; 3] = ["formula_queue", "type_reprojections", "webhook_outbox"];
/// The large tables, copied from a snapshot before the pause; their rows
/// are never deleted while a database lives (the change log's only by its
/// retention sweep, which the new cluster repeats).
const PRECOPIED: [&str; 3] = ["entities", "property_values", "change_log"];

/// What a move did.
pub struct Moved {
    /// Rows copied, over every table.
    pub rows: u64,
    /// How long the database's writes waited: from taking its write lock to
    /// giving it back.
    pub pause: Duration,
}

/// Why a move did not happen (the database stays where it was).
#[derive(Debug)]
pub struct MoveFailed(pub String);

impl From<tokio_postgres::Error> for MoveFailed {
    fn from(error: tokio_postgres::Error) -> MoveFailed {
        MoveFailed(error.to_string())
    }
}

impl From<diesel::result::Error> for MoveFailed {
    fn from(error: diesel::result::Error) -> MoveFailed {
        MoveFailed(error.to_string())
    }
}

impl From<crate::error::ApiError> for MoveFailed {
    fn from(error: crate::error::ApiError) -> MoveFailed {
        MoveFailed(error.message.into_owned())
    }
}

/// Copies database `db` from the cluster at `from` to the one at `to` (both
/// migrated) and switches its placement on the home cluster (`home`, at
/// `home_url`). The old copy is left marked moved, for [`remove_old_copy`].
pub async fn copy_and_switch(home: &Pool, home_url: &str, db: &str, from: &str, to: &str) -> Result<Moved, MoveFailed> {
    let mut source = connect(from).await?;
    let mut target = connect(to).await?;
    let (snapshot, mut rows) = precopy(&mut source, &mut target, db).await?;
    let old = source.transaction().await?;
    // the copy itself: no statement limit a server's pool would set
    old.batch_execute("SET LOCAL statement_timeout = 0").await?;
    old.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
        &[&format!("writes/{db}")],
    )
    .await?;
    let paused = Instant::now();
    // each statement from here sees every write committed before the lock
    if old
        .query_opt("SELECT 1 FROM databases WHERE name = $1 AND moved_at IS NULL", &[&db])
        .await?
        .is_none()
    {
        return Err(MoveFailed(format!("database {db} does not live on its cluster")));
    }
    let new = receiving(&mut target, db).await?;
    old.execute("SELECT set_config('eds.moving', $1, true)", &[&db]).await?;
    old.execute("SELECT set_config('eds.snapshot', $1, true)", &[&snapshot])
        .await?;
    rows += copy_table(&old, &new, "databases", "name").await?;
    for table in DATA_TABLES {
        rows += if PRECOPIED.contains(&table) {
            copy_written_since(&old, &new, table).await?
        } else {
            copy_table(&old, &new, table, "db").await?
        };
    }
    for table in DATA_TABLES.iter().filter(|table| !RENUMBERED.contains(table)) {
        advance_sequences(&new, table, db).await?;
    }
    new.commit().await?;
    let mut conn = home.get().await.map_err(crate::error::ApiError::from)?;
    let placed_on = (to != home_url).then_some(to);
    placement::place(&mut conn, db, placed_on).await?;
    old.execute("UPDATE databases SET moved_at = now() WHERE name = $1", &[&db])
        .await?;
    old.commit().await?;
    Ok(Moved {
        rows,
        pause: paused.elapsed(),
    })
}

/// Removes the old copy of a moved database from the cluster at `url`.
pub async fn remove_old_copy(url: &str, db: &str) -> Result<(), MoveFailed> {
    let mut client = connect(url).await?;
    let old = client.transaction().await?;
    old.batch_execute("SET LOCAL statement_timeout = 0").await?;
    if old
        .query_opt(
            "SELECT 1 FROM databases WHERE name = $1 AND moved_at IS NOT NULL",
            &[&db],
        )
        .await?
        .is_some()
    {
        delete_rows(&old, db).await?;
    }
    old.commit().await?;
    Ok(())
}

/// The first step: the large tables copied from a snapshot of the old
/// cluster, while writes go on, after removing what an earlier move left on
/// the target (one that moved the database away again, or one that failed
/// before switching: names are unique over the clusters). Answers the
/// snapshot and the rows copied.
async fn precopy(source: &mut Client, target: &mut Client, db: &str) -> Result<(String, u64), MoveFailed> {
    let early = source
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await?;
    early.batch_execute("SET LOCAL statement_timeout = 0").await?;
    let snapshot: String = early.query_one("SELECT pg_current_snapshot()::text", &[]).await?.get(0);
    early
        .execute("SELECT set_config('eds.moving', $1, true)", &[&db])
        .await?;
    let new = receiving(target, db).await?;
    delete_rows(&new, db).await?;
    let mut rows = 0;
    for table in PRECOPIED {
        rows += copy_table(&early, &new, table, "db").await?;
    }
    new.commit().await?;
    early.commit().await?;
    Ok((snapshot, rows))
}

/// A transaction on the target that takes rows as they were: no trigger
/// recomputes or logs them again.
async fn receiving<'a>(target: &'a mut Client, db: &str) -> Result<Transaction<'a>, MoveFailed> {
    let new = target.transaction().await?;
    new.batch_execute("SET LOCAL statement_timeout = 0; SET LOCAL session_replication_role = replica")
        .await?;
    new.execute("SELECT set_config('eds.moving', $1, true)", &[&db]).await?;
    Ok(new)
}

/// Copies the rows of `table` written (inserted or updated) since the
/// snapshot in `eds.snapshot`, replacing their earlier versions on the
/// target: a row whose creating transaction the snapshot does not see.
async fn copy_written_since(old: &Transaction<'_>, new: &Transaction<'_>, table: &str) -> Result<u64, MoveFailed> {
    let columns = columns(new, table, false).await?;
    let key: String = new
        .query_one(
            "SELECT string_agg(quote_ident(a.attname), ', ') FROM pg_index i \
             JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey) \
             WHERE i.indrelid = $1::text::regclass AND i.indisprimary",
            &[&table],
        )
        .await?
        .get(0);
    new.batch_execute(&format!("CREATE TEMP TABLE moving_rows (LIKE {table}) ON COMMIT DROP"))
        .await?;
    // a row's xmin is a 32-bit transaction id: of this epoch unless that is in the future
    let out = old
        .copy_out(&format!(
            "COPY (WITH now AS (SELECT pg_current_xact_id()::text::bigint AS xid) \
                   SELECT {columns} FROM {table}, now WHERE db = current_setting('eds.moving') \
                   AND NOT pg_visible_in_snapshot(( \
                       CASE WHEN (now.xid >> 32 << 32 | xmin::text::bigint) > now.xid \
                            THEN (now.xid >> 32 << 32 | xmin::text::bigint) - 4294967296 \
                            ELSE now.xid >> 32 << 32 | xmin::text::bigint END)::text::xid8, \
                       current_setting('eds.snapshot')::pg_snapshot)) \
             TO STDOUT (FORMAT binary)"
        ))
        .await?;
    let sink = new
        .copy_in::<_, Bytes>(&format!("COPY moving_rows ({columns}) FROM STDIN (FORMAT binary)"))
        .await?;
    let mut sink = std::pin::pin!(sink);
    let mut out = std::pin::pin!(out);
    sink.send_all(&mut out).await?;
    let copied = sink.as_mut().finish().await?;
    new.batch_execute(&format!(
        "DELETE FROM {table} WHERE ({key}) IN (SELECT {key} FROM moving_rows); \
         INSERT INTO {table} ({columns}) SELECT {columns} FROM moving_rows; \
         DROP TABLE moving_rows"
    ))
    .await?;
    Ok(copied)
}

/// `table`'s columns as the target has them, generated ones left out (and
/// the id when it is `renumbered`), quoted and comma-separated.
async fn columns(new: &Transaction<'_>, table: &str, renumbered: bool) -> Result<String, MoveFailed> {
    Ok(new
        .query_one(
            "SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute \
             WHERE attrelid = $1::text::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '' \
               AND NOT ($2 AND attname = 'id')",
            &[&table, &renumbered],
        )
        .await?
        .get(0))
}

async fn delete_rows(side: &Transaction<'_>, db: &str) -> Result<(), MoveFailed> {
    for table in DATA_TABLES {
        // the table names are the fixed list above, not input
        side.execute(&format!("DELETE FROM {table} WHERE db = $1"), &[&db])
            .await?;
    }
    side.execute("DELETE FROM databases WHERE name = $1", &[&db]).await?;
    Ok(())
}

/// Copies `table`'s rows of the database being moved (`key` = its name),
/// in PostgreSQL's binary format, columns as the target has them (a
/// generated column is computed there again). Answers the rows copied.
async fn copy_table(old: &Transaction<'_>, new: &Transaction<'_>, table: &str, key: &str) -> Result<u64, MoveFailed> {
    let renumbered = RENUMBERED.contains(&table);
    let columns = columns(new, table, renumbered).await?;
    let order = if renumbered { " ORDER BY id" } else { "" };
    let out = old
        .copy_out(&format!(
            "COPY (SELECT {columns} FROM {table} WHERE {key} = current_setting('eds.moving'){order}) \
             TO STDOUT (FORMAT binary)"
        ))
        .await?;
    let sink = new
        .copy_in::<_, Bytes>(&format!("COPY {table} ({columns}) FROM STDIN (FORMAT binary)"))
        .await?;
    let mut sink = std::pin::pin!(sink);
    let mut out = std::pin::pin!(out);
    sink.send_all(&mut out).await?;
    Ok(sink.as_mut().finish().await?)
}

/// Sets each sequence `table`'s columns draw from past the highest value
/// copied, so the change log's ids continue past the old highest (a stream
/// resumes from its last id) and no later row takes a copied id.
async fn advance_sequences(new: &Transaction<'_>, table: &str, db: &str) -> Result<(), MoveFailed> {
    let drawn = new
        .query(
            "SELECT quote_ident(a.attname), \
                    (regexp_match(pg_get_expr(d.adbin, d.adrelid), 'nextval\\(''([^'']+)''::regclass\\)'))[1] \
             FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum \
             WHERE d.adrelid = $1::text::regclass AND pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%'",
            &[&table],
        )
        .await?;
    for row in drawn {
        let (column, sequence): (String, Option<String>) = (row.get(0), row.get(1));
        let Some(sequence) = sequence else { continue };
        new.execute(
            &format!(
                "SELECT setval($1::text::regclass, greatest(coalesce(pg_sequence_last_value($1::text::regclass), 1), \
                 (SELECT coalesce(max({column}), 1) FROM {table} WHERE db = $2)))"
            ),
            &[&sequence, &db],
        )
        .await?;
    }
    Ok(())
}

/// A direct connection (COPY needs one; a transaction-pooling proxy's
/// would do too, as the whole move runs in two transactions).
async fn connect(url: &str) -> Result<Client, MoveFailed> {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .map_err(|e| MoveFailed(format!("cannot connect to {}: {e}", placement::masked(url))))?;
    tokio::spawn(async move {
        if let Err(error) = connection.await {
            tracing::warn!(%error, "a move's connection ended");
        }
    });
    Ok(client)
}
