//! The audiences a caller may read, resolved once per caller and kept by the
//! process, to be bound into list statements as ids (see `visibility`).

use std::sync::{Arc, LazyLock};

use dashmap::DashMap;
use diesel::QueryableByName;
use diesel::sql_types::{Array, BigInt, Nullable, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::db::prepared::Prepared;
use crate::error::ApiError;

/// The audiences whose entities a caller may read in a database, as they
/// were when the database's audience stamp was `stamp` (migration
/// `audience_stamps`): a statement built on them checks that the stamp
/// still is the database's (`visibility::still_held`).
#[derive(Debug, QueryableByName)]
pub(super) struct Readable {
    /// Audiences whose entities' values the caller sees in every view.
    #[diesel(sql_type = Array<BigInt>)]
    pub(super) viewed: Vec<i64>,
    /// Audiences whose values the caller sees in the domain view (anonymous
    /// callers: in the public view).
    #[diesel(sql_type = Array<BigInt>)]
    pub(super) shared: Vec<i64>,
    #[diesel(sql_type = BigInt)]
    pub(super) stamp: i64,
}

/// At most this many ids are bound into a statement: each value row is
/// compared with them one by one. A caller who may read more audiences
/// (an owner of thousands of persons, each its own editor) has them found
/// in the statement, where a hash of them is built once.
const FEW: usize = 64;

/// Callers whose audiences were last resolved, per database and person:
/// `None` when they were too many to bind. Starts afresh past this many.
const RESOLVED_MOST: usize = 10_000;

type Resolved = Option<Arc<Readable>>;

static RESOLVED: LazyLock<DashMap<(String, Option<String>), Resolved>> = LazyLock::new(DashMap::new);

/// Reads which audiences of `$1` person `$2` (NULL: anonymous) may read,
/// with the database's stamp, in one snapshot.
const RESOLVE: &str = "SELECT \
     coalesce(array_agg(au.id) FILTER (WHERE $2 = ANY (au.viewers) AND NOT $2 = ANY (au.noaccess)), '{}') AS viewed, \
     coalesce(array_agg(au.id) FILTER (WHERE CASE WHEN $2 IS NULL THEN au.sharing = 'public' \
         ELSE au.sharing <> 'private' AND NOT $2 = ANY (au.noaccess) END), '{}') AS shared, \
     coalesce((SELECT s.stamp FROM audience_stamps s WHERE s.db = $1), 0) AS stamp \
     FROM audiences au WHERE au.db = $1";

impl Readable {
    /// What this process last resolved for `person` in `db`: `None` when it
    /// has not, `Some(None)` when they were too many to bind.
    pub(super) fn last_seen(db: &str, person: Option<&str>) -> Option<Resolved> {
        RESOLVED
            .get(&(db.to_owned(), person.map(str::to_owned)))
            .map(|seen| seen.clone())
    }

    /// Resolves them now (one statement) and keeps them for the next query.
    pub(super) async fn resolve(
        conn: &mut AsyncPgConnection,
        db: &str,
        person: Option<&str>,
    ) -> Result<Resolved, ApiError> {
        let found: Readable = Prepared::kept(
            diesel::sql_query(RESOLVE)
                .bind::<Text, _>(db)
                .bind::<Nullable<Text>, _>(person),
        )
        .get_result(conn)
        .await?;
        let resolved = (found.viewed.len() + found.shared.len() <= FEW).then(|| Arc::new(found));
        if RESOLVED.len() >= RESOLVED_MOST {
            RESOLVED.clear();
        }
        RESOLVED.insert((db.to_owned(), person.map(str::to_owned)), resolved.clone());
        Ok(resolved)
    }
}
