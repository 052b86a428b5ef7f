//! PostgreSQL: the connection pool, migrations, the private local cluster, and
//! the queries behind entities and values.

pub mod activity;
pub mod changes;
pub mod consents;
pub mod databases;
pub mod export;
pub mod formula_queue;
pub mod formulas;
pub mod generation;
pub mod history;
pub mod idempotency;
pub mod local_cluster;
pub mod placement;
pub mod placement_copy;
pub mod placement_reads;
pub mod pooler;
mod pooler_wire;
pub mod prepared;
pub mod projection;
pub mod queued_work;
pub mod references;
pub mod replicas;
pub mod reprojection_queue;
pub mod schema;
mod seed;
pub use seed::add_missing_types;
pub mod sign_in;
mod value_rows;
pub mod values;
pub mod webhooks;

use std::time::Duration;

use deadpool::managed::{Manager, Metrics, RecycleResult};
use diesel::{Connection, PgConnection, RunQueryDsl};
use diesel_async::AsyncPgConnection;
use diesel_async::pooled_connection::{AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

pub type Pool = deadpool::managed::Pool<Connections>;

const MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations");
/// Advisory lock key held while migrating, so processes starting together take turns.
const MIGRATION_LOCK: i64 = 0x0065_6473_5f6d_6967; // "eds_mig"

/// A pool whose connections cancel any statement running over
/// `statement_timeout_ms` (0: no limit). Waiting for a free connection is
/// bounded by the same time, so a burst of slow queries is answered 503
/// instead of queueing requests without end. JIT compilation is off: it costs
/// tens of milliseconds per query and pays off only for long analytical ones.
pub fn pool(url: &str, size: usize, statement_timeout_ms: u64) -> Result<Pool, String> {
    let separator = if url.contains('?') { '&' } else { '?' };
    let url = format!("{url}{separator}options=-c%20statement_timeout%3D{statement_timeout_ms}%20-c%20jit%3Doff");
    build_pool(Connections::new(url, false), size, statement_timeout_ms)
}

/// As [`pool`], through a transaction-pooling PgBouncer at `url` (see
/// [`pooler`]): the limits are the role's settings, kept there by
/// [`pooler::keep_limits_on_role`], and each statement runs within one exchange.
pub fn pool_behind_pooler(url: &str, size: usize, statement_timeout_ms: u64) -> Result<Pool, String> {
    build_pool(Connections::new(url.to_owned(), true), size, statement_timeout_ms)
}

fn build_pool(manager: Connections, size: usize, statement_timeout_ms: u64) -> Result<Pool, String> {
    let wait = (statement_timeout_ms > 0).then(|| Duration::from_millis(statement_timeout_ms));
    Pool::builder(manager)
        .max_size(size)
        .wait_timeout(wait)
        .runtime(deadpool::Runtime::Tokio1)
        .build()
        .map_err(|e| format!("cannot build the connection pool: {e}"))
}

/// How long after its last use a pooled connection is handed out again
/// without a round trip to check it.
const TRUSTED_FOR: Duration = Duration::from_secs(1);

/// The pool's connections. One taken again within [`TRUSTED_FOR`] of its
/// last use is handed out unless it is known broken; one idle for longer is
/// checked with a query first, as PostgreSQL or a proxy may have closed it
/// meanwhile. Checking every connection every time cost a round trip, as
/// much as a read by id's own statements.
pub struct Connections {
    checked: AsyncDieselConnectionManager<AsyncPgConnection>,
    trusted: AsyncDieselConnectionManager<AsyncPgConnection>,
}

impl Connections {
    fn new(url: String, behind_pooler: bool) -> Connections {
        let config = || {
            let mut config = ManagerConfig::default();
            if behind_pooler {
                config.custom_setup = Box::new(pooler::connect);
            }
            config
        };
        let mut trusted = config();
        trusted.recycling_method = RecyclingMethod::Fast;
        Connections {
            checked: AsyncDieselConnectionManager::new_with_config(url.clone(), config()),
            trusted: AsyncDieselConnectionManager::new_with_config(url, trusted),
        }
    }
}

impl Manager for Connections {
    type Type = AsyncPgConnection;
    type Error = diesel_async::pooled_connection::PoolError;

    async fn create(&self) -> Result<AsyncPgConnection, Self::Error> {
        self.checked.create().await
    }

    async fn recycle(&self, conn: &mut AsyncPgConnection, metrics: &Metrics) -> RecycleResult<Self::Error> {
        if metrics.last_used() < TRUSTED_FOR {
            self.trusted.recycle(conn, metrics).await
        } else {
            self.checked.recycle(conn, metrics).await
        }
    }
}

/// A new connection to the pool's database, outside the pool: for running a
/// write again after its connection broke, when the pooled ones may have
/// broken with it (PostgreSQL restarted).
pub async fn new_connection(pool: &Pool) -> Result<AsyncPgConnection, crate::error::ApiError> {
    pool.manager()
        .create()
        .await
        .map_err(|error| deadpool::managed::PoolError::Backend(error).into())
}

/// Applies pending migrations (blocking; call off the async workers)
/// through `url`, a direct connection: the lock is held for the session.
pub fn migrate(url: &str) -> Result<usize, String> {
    let mut conn = PgConnection::establish(url).map_err(|e| format!("cannot connect to PostgreSQL: {e}"))?;
    // a migration may outlast the limit kept on the role for a pooled `database.url`
    diesel::sql_query("SET statement_timeout = 0")
        .execute(&mut conn)
        .map_err(|e| e.to_string())?;
    diesel::sql_query(format!("SELECT pg_advisory_lock({MIGRATION_LOCK})"))
        .execute(&mut conn)
        .map_err(|e| e.to_string())?;
    let applied = conn
        .run_pending_migrations(MIGRATIONS)
        .map(|done| done.len())
        .map_err(|e| format!("migration failed: {e}"));
    diesel::sql_query(format!("SELECT pg_advisory_unlock({MIGRATION_LOCK})"))
        .execute(&mut conn)
        .map_err(|e| e.to_string())?;
    applied
}

/// Creates database `name` through the maintenance database at `admin_url`
/// unless it exists (blocking).
pub fn create_database_if_missing(admin_url: &str, name: &str, template: Option<&str>) -> Result<(), String> {
    use diesel::sql_types::{Bool, Text};
    #[derive(diesel::QueryableByName)]
    struct Exists {
        #[diesel(sql_type = Bool)]
        exists: bool,
    }
    let mut conn = PgConnection::establish(admin_url).map_err(|e| format!("cannot connect to PostgreSQL: {e}"))?;
    let found = diesel::sql_query("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1) AS exists")
        .bind::<Text, _>(name)
        .get_result::<Exists>(&mut conn)
        .map_err(|e| e.to_string())?;
    if found.exists {
        return Ok(());
    }
    // CREATE DATABASE takes no bind parameters; quote the identifiers.
    let mut statement = format!("CREATE DATABASE {}", quote_identifier(name));
    if let Some(template) = template {
        statement.push_str(&format!(" TEMPLATE {}", quote_identifier(template)));
    }
    diesel::sql_query(statement)
        .execute(&mut conn)
        .map(|_| ())
        .map_err(|e| format!("cannot create database {name}: {e}"))
}

fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
