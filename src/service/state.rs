//! What the operations run on, shared by every worker and front end, and
//! the writes made through it.

use std::sync::Arc;

use dashmap::DashSet;

use super::caller::Caller;
use super::rate_limits::RateLimits;
use super::replicas::{self, Replicas, Route};
use crate::actors::db_writer::Writers;
use crate::auth::clock::Clock;
use crate::auth::jwt::JwtKeys;
use crate::db::placement::Clusters;
use crate::db::{Pool, databases};
use crate::error::ApiError;
use crate::query::ExpensiveQueries;
use crate::query::cache::AnswerCache;
use crate::sign_in::login_checks::LoginChecks;
use crate::usage::Usage;
use crate::write::keys::prepare_keys;
use crate::write::{IdempotencyKey, WriteOp, WriteOutcome, WriteRequest};

/// What the operations run on: the pool, the writers, the caches and limits.
pub struct Service {
    /// The home cluster's pool: the catalogue, sign-in state, placements.
    pub pool: Pool,
    /// Where each database lives, and the pools of the clusters.
    pub clusters: Arc<Clusters>,
    pub jwt: JwtKeys,
    /// Whether accepted tokens' logins still stand, looked up now and then.
    pub logins: LoginChecks,
    pub writers: Writers,
    pub clock: Clock,
    pub usage: Usage,
    pub files: crate::storage::files::FileService,
    /// List answers reused while their database is unchanged; `None` when turned off.
    pub answers: Option<AnswerCache>,
    /// Most values one write may hold (`limits.max_values_per_write`).
    pub max_values_per_write: usize,
    /// Most operations one batch may hold (`limits.max_batch_operations`).
    pub max_batch_operations: usize,
    /// The connections expensive list queries may hold at once.
    pub expensive: ExpensiveQueries,
    /// Databases seen to exist (databases are never removed while serving).
    pub(crate) known_databases: DashSet<String>,
    /// Sign-in flows: their state, mail, links.
    pub sign_in: crate::sign_in::SignIn,
    /// Databases one login may create a day (`limits.new_databases_per_day`).
    pub new_databases_per_day: u32,
    /// The rate limits; the operations that send mail charge them too.
    pub limits: Arc<RateLimits>,
    /// The webhook settings, and the type names their write checks learned.
    pub webhooks: crate::service::webhook_rules::WebhookRules,
    /// The change feed's readers and stream limits.
    pub changes: Arc<super::changes::ChangeHub>,
    /// The read replicas and the positions reads must find on them.
    pub replicas: Arc<Replicas>,
}

impl Service {
    /// Has database `db`'s writer apply `op` for the caller's person there:
    /// 403 `insufficient_scope` for a read-only token, 401 without a token,
    /// 403 with one for other databases, 404 for an unknown database. API keys the write asks for are hashed here, before
    /// its turn, so the writer never waits for them. With `idempotency`, a
    /// repeat of the write answers [`WriteOutcome::Replayed`].
    pub async fn write_as(
        &self,
        caller: &Caller,
        db: &str,
        op: WriteOp,
        idempotency: Option<IdempotencyKey>,
    ) -> Result<WriteOutcome, ApiError> {
        caller.require_write()?;
        let actor = caller.require_person(db)?.to_owned();
        self.require_database(db).await?;
        let narrows = replicas::may_narrow(&op);
        let request = WriteRequest {
            db: db.to_owned(),
            actor,
            op,
            idempotency,
        };
        let keys = prepare_keys(&self.pool_for(db)?, &request).await?;
        let committed = self.writers.write_committed(request, keys).await?;
        // the replicas stand by the home cluster: another cluster's positions mean nothing to them
        if let Some(position) = committed.position.filter(|_| self.clusters.is_home(db)) {
            caller.consistency.wrote(position);
            self.replicas.wrote(db, caller.require_person(db)?, narrows, position);
            if narrows && let Err(error) = crate::db::replicas::announce_rights_change(&self.pool, db, position).await {
                // the write stands; other processes may read it from a replica that has not replayed it
                tracing::warn!(%error, "announcing a rights change failed");
            }
        }
        Ok(committed.outcome)
    }

    /// Where `caller`'s reads of database `db` go: a replica that has what
    /// the caller must see, or the primary (the primary of its own cluster
    /// for a database placed off the home cluster, which has no replicas).
    pub fn read_route(&self, db: &str, caller: &Caller) -> Result<Route<'_>, ApiError> {
        if self.clusters.is_home(db) {
            Ok(self.replicas.route(self.pool.clone(), db, caller))
        } else {
            Ok(self.replicas.primary_only(self.pool_for(db)?))
        }
    }

    /// The pool of the cluster database `db` lives on.
    pub fn pool_for(&self, db: &str) -> Result<Pool, ApiError> {
        self.clusters.pool_for(db)
    }

    /// 404 unless database `db` exists.
    pub async fn require_database(&self, db: &str) -> Result<(), ApiError> {
        if self.known_database(db).await? {
            Ok(())
        } else {
            Err(ApiError::not_found("Database not found"))
        }
    }

    /// Whether database `db` exists.
    pub async fn known_database(&self, db: &str) -> Result<bool, ApiError> {
        if self.known_databases.contains(db) {
            return Ok(true);
        }
        let mut conn = self.pool_for(db)?.get().await?;
        let exists = databases::exists(&mut conn, db).await?;
        if exists {
            self.known_databases.insert(db.to_owned());
        }
        Ok(exists)
    }
}
