//! Where databases live: the placement table on the home cluster, and the
//! pools of the clusters it names. A database without a row lives on the
//! home cluster. Each cluster gets one pool, made on first use; the map of
//! placements is kept in memory and reread whenever told (`NOTIFY` on
//! `eds_placement`) and every few seconds.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};

use dashmap::DashMap;
use diesel::prelude::*;
use diesel::sql_types::Text;
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use crate::db::Pool;
use crate::db::schema::placements;
use crate::error::ApiError;

/// The channel a change of the placement table is announced on.
pub const CHANNEL: &str = "eds_placement";

/// Called with each cluster (its URL and pool) when its pool is made, so
/// the process starts that cluster's workers.
pub type ClusterStarted = Box<dyn Fn(&str, Pool) + Send + Sync>;

/// The clusters of a process and where each database lives.
pub struct Clusters {
    home_url: String,
    home: Pool,
    pool_size: usize,
    statement_timeout_ms: u64,
    pools: DashMap<String, Pool>,
    /// Database name → cluster URL, for the databases not on the home cluster.
    placed: RwLock<HashMap<String, String>>,
    started: Mutex<Option<ClusterStarted>>,
}

impl Clusters {
    /// The clusters of a process whose home cluster is `home` (at `home_url`);
    /// other clusters' pools get `pool_size` connections under the same limit.
    pub fn new(home_url: &str, home: Pool, pool_size: usize, statement_timeout_ms: u64) -> Arc<Clusters> {
        let pools = DashMap::new();
        pools.insert(home_url.to_owned(), home.clone());
        Arc::new(Clusters {
            home_url: home_url.to_owned(),
            home,
            pool_size,
            statement_timeout_ms,
            pools,
            placed: RwLock::default(),
            started: Mutex::default(),
        })
    }

    /// The home cluster's pool: the catalogue, sign-in state, placements.
    pub fn home(&self) -> &Pool {
        &self.home
    }

    pub fn home_url(&self) -> &str {
        &self.home_url
    }

    /// The URL of the cluster database `db` lives on.
    pub fn url_of(&self, db: &str) -> String {
        let placed = self.placed.read().unwrap_or_else(|e| e.into_inner());
        placed.get(db).cloned().unwrap_or_else(|| self.home_url.clone())
    }

    /// Whether database `db` lives on the home cluster.
    pub fn is_home(&self, db: &str) -> bool {
        let placed = self.placed.read().unwrap_or_else(|e| e.into_inner());
        placed.get(db).is_none_or(|url| *url == self.home_url)
    }

    /// The pool of the cluster database `db` lives on.
    pub fn pool_for(&self, db: &str) -> Result<Pool, ApiError> {
        self.pool_at(&self.url_of(db))
    }

    /// The pool of the cluster at `url`, made on first use.
    pub fn pool_at(&self, url: &str) -> Result<Pool, ApiError> {
        if let Some(pool) = self.pools.get(url) {
            return Ok(pool.clone());
        }
        let made = crate::db::pool(url, self.pool_size, self.statement_timeout_ms)
            .map_err(|e| ApiError::internal("cluster pool", e))?;
        let mut inserted = false;
        let pool = self
            .pools
            .entry(url.to_owned())
            .or_insert_with(|| {
                inserted = true;
                made
            })
            .clone();
        if inserted && let Some(started) = self.started.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            started(url, pool.clone());
        }
        Ok(pool)
    }

    /// Every cluster in use: the home cluster first, then each one a
    /// database is placed on.
    pub fn all(&self) -> Vec<(String, Pool)> {
        let mut urls: Vec<String> = {
            let placed = self.placed.read().unwrap_or_else(|e| e.into_inner());
            placed.values().cloned().collect()
        };
        urls.sort();
        urls.dedup();
        urls.retain(|url| *url != self.home_url);
        let mut all = vec![(self.home_url.clone(), self.home.clone())];
        for url in urls {
            match self.pool_at(&url) {
                Ok(pool) => all.push((url, pool)),
                Err(error) => tracing::warn!(cluster = %masked(&url), %error, "no pool for the cluster"),
            }
        }
        all
    }

    /// Whether database `db` lives on the cluster at `url`: rows of a
    /// database read there count only then (a moved database's old copy
    /// stays a little while).
    pub fn lives_on(&self, db: &str, url: &str) -> bool {
        self.url_of(db) == url
    }

    /// Has `started` called for every cluster whose pool is made from now
    /// on, and at once for those made already.
    pub fn on_cluster_started(&self, started: ClusterStarted) {
        let mut slot = self.started.lock().unwrap_or_else(|e| e.into_inner());
        for pool in self.pools.iter() {
            started(pool.key(), pool.value().clone());
        }
        *slot = Some(started);
    }

    /// Rereads the placement table; answers the databases whose cluster changed.
    pub async fn reload(&self) -> Result<Vec<String>, ApiError> {
        let rows = all_placements(&mut *self.home.get().await?).await?;
        let fresh: HashMap<String, String> = rows.into_iter().filter(|(_, url)| *url != self.home_url).collect();
        let changed = {
            let mut placed = self.placed.write().unwrap_or_else(|e| e.into_inner());
            let mut changed: Vec<String> = fresh
                .iter()
                .filter(|(db, url)| placed.get(*db) != Some(url))
                .map(|(db, _)| db.clone())
                .collect();
            changed.extend(placed.keys().filter(|db| !fresh.contains_key(*db)).cloned());
            *placed = fresh;
            changed
        };
        // the workers of a cluster start with its pool
        self.all();
        Ok(changed)
    }
}

/// Seeds the placement table from `database.placement` (a database placed
/// already, or moved since, keeps its place) and migrates every cluster it
/// names, on the home cluster at `home`.
pub async fn prepare(seeded: &BTreeMap<String, String>, home: &Pool, migrate: bool) -> Result<(), String> {
    let mut conn = home.get().await.map_err(|e| e.to_string())?;
    for (db, url) in seeded {
        seed(&mut conn, db, url).await.map_err(|e| e.to_string())?;
    }
    let mut urls: Vec<String> = all_placements(&mut conn)
        .await
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|(_, url)| url)
        .collect();
    drop(conn);
    urls.sort();
    urls.dedup();
    if !migrate {
        return Ok(());
    }
    for url in urls {
        let migrated = url.clone();
        tokio::task::spawn_blocking(move || crate::db::migrate(&migrated))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("cluster {}: {e}", masked(&url)))?;
        let pool = crate::db::pool(&url, 1, 0)?;
        crate::db::add_missing_types(&pool)
            .await
            .map_err(|e| format!("cluster {}: {}", masked(&url), e.message))?;
    }
    Ok(())
}

/// Every placement row: database name → cluster URL.
pub async fn all_placements(conn: &mut AsyncPgConnection) -> QueryResult<Vec<(String, String)>> {
    placements::table
        .select((placements::db, placements::cluster_url))
        .order(placements::db)
        .load(conn)
        .await
}

/// Where database `db` is placed, if it is not on the home cluster.
pub async fn placement_of(conn: &mut AsyncPgConnection, db: &str) -> QueryResult<Option<String>> {
    placements::table
        .filter(placements::db.eq(db))
        .select(placements::cluster_url)
        .first(conn)
        .await
        .optional()
}

/// Seeds database `db`'s placement on `url` unless it has one (a move
/// outlives the seed that placed it first).
pub async fn seed(conn: &mut AsyncPgConnection, db: &str, url: &str) -> QueryResult<()> {
    diesel::insert_into(placements::table)
        .values((placements::db.eq(db), placements::cluster_url.eq(url)))
        .on_conflict_do_nothing()
        .execute(conn)
        .await?;
    Ok(())
}

/// Places database `db` on the cluster at `url` (`None`: the home cluster)
/// and announces it, in the caller's transaction.
pub async fn place(conn: &mut AsyncPgConnection, db: &str, url: Option<&str>) -> QueryResult<()> {
    match url {
        Some(url) => {
            diesel::insert_into(placements::table)
                .values((placements::db.eq(db), placements::cluster_url.eq(url)))
                .on_conflict(placements::db)
                .do_update()
                .set((
                    placements::cluster_url.eq(url),
                    placements::placed_at.eq(diesel::dsl::now),
                ))
                .execute(conn)
                .await?;
        }
        None => {
            diesel::delete(placements::table.filter(placements::db.eq(db)))
                .execute(conn)
                .await?;
        }
    }
    diesel::sql_query("SELECT pg_notify($1, $2)")
        .bind::<Text, _>(CHANNEL)
        .bind::<Text, _>(db)
        .execute(conn)
        .await?;
    Ok(())
}

/// A PostgreSQL URL as logs and listings may show it: the password masked.
pub fn masked(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            // a URL that has a password can hold another one
            let _ = parsed.set_password(Some("****"));
            parsed.to_string()
        }
        Ok(parsed) => parsed.to_string(),
        Err(_) => "(not a URL)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::masked;

    #[test]
    fn a_cluster_url_is_shown_with_its_password_masked() {
        assert_eq!(
            masked("postgres://eds:s3cret@db.example:5432/eds"),
            "postgres://eds:****@db.example:5432/eds"
        );
        assert_eq!(masked("postgres://eds@db.example/eds"), "postgres://eds@db.example/eds");
        assert_eq!(masked("not a url"), "(not a URL)");
    }
}
