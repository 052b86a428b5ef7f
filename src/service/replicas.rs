//! Read routing over the streaming replicas (`database.replica_urls`). A read
//! goes to a usable replica that has replayed the highest of: the position
//! the caller's `Eds-Consistency` header vouches for, this process's last
//! write of the caller's person to the database, and the database's last
//! rights change (learned from this process's writes and, through `NOTIFY`,
//! from the others'); otherwise to the primary. A background check keeps each
//! replica's replayed position and usability; a replica failing a read is
//! skipped until the next check and the read runs again on the primary.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use dashmap::DashMap;

use super::caller::Caller;
use super::consistency::Signer;
use super::replicas_metrics as metrics;
use crate::db::{Pool, replicas as sql};
use crate::error::{ApiError, ErrorCode};
use crate::write::WriteOp;

/// How often the replicas' positions are read.
const CHECK_EVERY: Duration = Duration::from_secs(1);
/// How long one replica's check may take before it counts as down.
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// The replicas, and the positions reads must find on them.
pub struct Replicas {
    replicas: Vec<Replica>,
    max_lag_ms: u64,
    /// Per database and person: the position of their last write here.
    person_writes: DashMap<(String, String), u64>,
    /// Per database: the position of its last rights change or revocation.
    rights_changes: DashMap<String, u64>,
    next: AtomicUsize,
    /// Signs and checks the `Eds-Consistency` header.
    pub signer: Signer,
}

struct Replica {
    /// `host:port/database`, for logs and metrics (never the password).
    name: String,
    pool: Pool,
    usable: AtomicBool,
    replayed: AtomicU64,
}

impl Replicas {
    /// A pool per replica URL; none are used until the first check found them.
    pub fn new(
        urls: &[String],
        pool_size: usize,
        statement_timeout_ms: u64,
        max_lag_ms: u64,
        signer: Signer,
    ) -> Result<Replicas, String> {
        let replicas = urls
            .iter()
            .map(|url| {
                Ok(Replica {
                    name: display_name(url),
                    // a share of the primary's connections: reads are spread over several
                    pool: crate::db::pool(url, (pool_size / 2).max(2), statement_timeout_ms)?,
                    usable: AtomicBool::new(false),
                    replayed: AtomicU64::new(0),
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Replicas {
            replicas,
            max_lag_ms,
            person_writes: DashMap::new(),
            rights_changes: DashMap::new(),
            next: AtomicUsize::new(0),
            signer,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.replicas.is_empty()
    }

    /// Where `caller`'s read of database `db` goes.
    pub fn route(&self, primary: Pool, db: &str, caller: &Caller) -> Route<'_> {
        let mut route = self.primary_only(primary);
        if self.replicas.is_empty() {
            return route;
        }
        let mut need = caller.consistency.seen;
        if let Some(person) = caller.person_in(db)
            && let Some(written) = self.person_writes.get(&(db.to_owned(), person.to_owned()))
        {
            need = need.max(*written);
        }
        if let Some(changed) = self.rights_changes.get(db) {
            need = need.max(*changed);
        }
        let count = self.replicas.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        route.replica = (0..count).map(|k| (start + k) % count).find(|&index| {
            let replica = &self.replicas[index];
            replica.usable.load(Ordering::Relaxed) && replica.replayed.load(Ordering::Relaxed) >= need
        });
        route
    }

    /// A route to `primary` alone.
    pub fn primary_only(&self, primary: Pool) -> Route<'_> {
        Route {
            replicas: self,
            primary,
            replica: None,
        }
    }

    /// Learns of a write `op` of `person` to database `db` committed at `position`.
    pub fn wrote(&self, db: &str, person: &str, op_narrows: bool, position: u64) {
        if self.replicas.is_empty() {
            return;
        }
        let mut written = self
            .person_writes
            .entry((db.to_owned(), person.to_owned()))
            .or_default();
        *written = (*written).max(position);
        drop(written);
        if op_narrows {
            self.rights_changed(db, position);
        }
    }

    /// Learns that database `db`'s rights changed at `position`.
    pub fn rights_changed(&self, db: &str, position: u64) {
        let mut changed = self.rights_changes.entry(db.to_owned()).or_default();
        *changed = (*changed).max(position);
    }

    /// Learns of a rights change from its notification's payload.
    pub fn learn(&self, payload: &str) {
        if let Some((db, position)) = sql::parse_rights_change(payload) {
            self.rights_changed(db, position);
        }
    }

    /// Reads the replicas' positions every [`CHECK_EVERY`] for as long as the server runs.
    pub async fn watch(self: std::sync::Arc<Self>, primary: Pool) {
        let mut every = tokio::time::interval(CHECK_EVERY);
        loop {
            every.tick().await;
            self.check(&primary).await;
        }
    }

    async fn check(&self, primary: &Pool) {
        let primary_position = async { sql::current_position(&mut *primary.get().await?).await }
            .await
            .ok();
        for replica in &self.replicas {
            let replay = tokio::time::timeout(CHECK_TIMEOUT, async {
                sql::replay(&mut *replica.pool.get().await?).await
            })
            .await;
            let usable = match replay {
                Ok(Ok(sql::Replay {
                    replayed: Some(replayed),
                    commit_age_ms,
                })) => {
                    let replayed = replayed as u64;
                    replica.replayed.store(replayed, Ordering::Relaxed);
                    let caught_up = primary_position.is_some_and(|primary| replayed >= primary);
                    let age_ms = commit_age_ms.map_or(u64::MAX, |age| age.max(0) as u64);
                    metrics::lag(&replica.name, if caught_up { 0 } else { age_ms });
                    caught_up || age_ms <= self.max_lag_ms
                }
                // not a standby, or not reachable
                _ => false,
            };
            if replica.usable.swap(usable, Ordering::Relaxed) != usable {
                tracing::warn!(replica = %replica.name, usable, "a read replica changed state");
            }
            metrics::usable(&replica.name, usable);
        }
        // positions every replica has replayed need no remembering
        let everywhere = self
            .replicas
            .iter()
            .map(|replica| replica.replayed.load(Ordering::Relaxed))
            .min()
            .unwrap_or(0);
        self.person_writes.retain(|_, position| *position > everywhere);
        metrics::shares();
    }
}

/// Whether write `op` may narrow what someone sees or revoke a credential:
/// reads after it must find it. Erring towards yes only sends reads to the
/// primary a moment longer.
pub fn may_narrow(op: &WriteOp) -> bool {
    match op {
        WriteOp::CreateEntity { .. }
        | WriteOp::DuplicateEntity(_)
        | WriteOp::Aggregate { .. }
        | WriteOp::LinkLogin { .. }
        | WriteOp::AddUser { .. } => false,
        WriteOp::AddValues { values, .. } => values
            .iter()
            .any(|value| value.prop.starts_with('_') || value.replaces.is_some()),
        WriteOp::DeleteValue { .. } | WriteOp::DeleteEntity { .. } | WriteOp::Restore { .. } | WriteOp::Batch(_) => {
            true
        }
    }
}

/// Where one read runs: a replica, or the primary.
pub struct Route<'a> {
    replicas: &'a Replicas,
    primary: Pool,
    replica: Option<usize>,
}

impl Route<'_> {
    /// The pool reads of this route take their connections from.
    pub fn pool(&self) -> &Pool {
        match self.replica {
            Some(index) => &self.replicas.replicas[index].pool,
            None => &self.primary,
        }
    }

    /// Runs `read` on the route's pool; when a replica fails it (gone,
    /// restarting, or cancelling for replay), the replica is skipped until
    /// the next check and `read` runs again on the primary.
    pub async fn run<T, F, Fut>(&mut self, read: F) -> Result<T, ApiError>
    where
        F: Fn(Pool) -> Fut,
        Fut: Future<Output = Result<T, ApiError>>,
    {
        let Some(index) = self.replica else {
            if !self.replicas.is_empty() {
                metrics::served(None);
            }
            return read(self.primary.clone()).await;
        };
        let replica = &self.replicas.replicas[index];
        match read(replica.pool.clone()).await {
            Err(error) if replica_failure(&error) => {
                tracing::warn!(replica = %replica.name, %error, "a read replica failed a read; reading the primary");
                replica.usable.store(false, Ordering::Relaxed);
                metrics::usable(&replica.name, false);
                self.replica = None;
                metrics::served(None);
                read(self.primary.clone()).await
            }
            result => {
                metrics::served(Some(&replica.name));
                result
            }
        }
    }
}

/// Errors of the replica rather than of the read.
fn replica_failure(error: &ApiError) -> bool {
    matches!(
        error.code,
        ErrorCode::DatabaseUnavailable | ErrorCode::DatabaseBusy | ErrorCode::WriteConflict
    )
}

/// `host:port/database` of a PostgreSQL URL, without user and password.
fn display_name(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, rest)| rest);
    rest.split('?').next().unwrap_or(rest).to_owned()
}

#[cfg(test)]
mod tests {
    use super::display_name;

    #[test]
    fn a_replica_is_named_without_its_password() {
        assert_eq!(
            display_name("postgres://postgres:s3cret@127.0.0.1:5433/eds?sslmode=disable"),
            "127.0.0.1:5433/eds"
        );
    }
}
