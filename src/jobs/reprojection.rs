//! Re-projecting the entities of a queued type a batch at a time, each batch
//! in its own short transaction that records how far it got.

use std::collections::HashSet;

use diesel::QueryResult;
use diesel_async::scoped_futures::ScopedFutureExt;
use diesel_async::{AsyncConnection, AsyncPgConnection};

use crate::db::projection::{self, Before, Followers, TypeCache};
use crate::db::reprojection_queue::{self, BATCH};
use crate::db::{formula_queue, formulas, generation, values};

/// Re-projects the next batch of the oldest queued type no one else is
/// working on: those of its entities that read only their type in bulk,
/// and the rest (with the entities a write holds just now, and whatever
/// depends on the re-projected ones) through the formula queue, one at a
/// time with what follows each. Answers false when nothing was queued.
pub async fn reproject_next(conn: &mut AsyncPgConnection) -> QueryResult<bool> {
    conn.transaction(|conn| {
        async move {
            let Some(entry) = reprojection_queue::take(conn).await? else {
                return Ok(false);
            };
            let batch = if entry.superseded {
                // a later change to the type starts from the first entity
                Vec::new()
            } else {
                reprojection_queue::members_after(conn, &entry.db, &entry.type_id, &entry.done_through, BATCH).await?
            };
            let Some(last) = batch.last() else {
                reprojection_queue::finish(conn, entry.id).await?;
                return Ok(true);
            };
            generation::announce_bump(conn).await?;
            // Entities a write holds are left to the formula queue (which
            // waits for them one at a time): the batch is taken without
            // waiting for any writer, so it cannot deadlock with one.
            let locked = values::lock_live_unheld(conn, &entry.db, &batch).await?;
            let taken: HashSet<String> = locked.iter().map(|row| row.id.clone()).collect();
            let (mut later, followers) =
                projection::reproject_plain(conn, &mut TypeCache::default(), &entry.db, Before::Locked(locked)).await?;
            // rows of this batch, or (where some were narrowed) the formula
            // values of those reading them, stripped below
            let rewritten = followers.rewritten > 0 || !followers.narrowed.is_empty();
            later.extend(batch.iter().filter(|id| !taken.contains(*id)).cloned());
            later.extend(to_reproject_after(conn, &entry.db, followers).await?);
            formula_queue::enqueue(conn, &entry.db, &later, 0).await?;
            reprojection_queue::advance(conn, entry.id, last).await?;
            if rewritten {
                // last: the lock on the database's row is then the last one taken, as by writers
                generation::bump_generation(conn, &entry.db).await?;
            }
            Ok(true)
        }
        .scope_boxed()
    })
    .await
}

/// What must be re-projected after a bulk re-projection: entities whose
/// formulas read the changed ones (those reading the narrowed ones stripped
/// of their formula values at once), and referrers showing a changed name.
async fn to_reproject_after(conn: &mut AsyncPgConnection, db: &str, followers: Followers) -> QueryResult<Vec<String>> {
    let mut later = formulas::dependents(conn, db, &followers.read_changed, Vec::new()).await?;
    if !followers.narrowed.is_empty() {
        later.extend(formulas::strip(conn, db, followers.narrowed).await?);
    }
    later.extend(projection::referrers(conn, db, &followers.name_changed).await?);
    Ok(later)
}
