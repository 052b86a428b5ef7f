//! PostgreSQL: the connection pool, migrations, the private local cluster, and
//! the queries behind entities and values.

pub mod databases;
pub mod export;
pub mod formula_queue;
pub mod formulas;
pub mod local_cluster;
pub mod prepared;
pub mod projection;
pub mod schema;
mod value_rows;
pub mod values;

use diesel::{Connection, PgConnection, RunQueryDsl};
use diesel_async::AsyncPgConnection;
use diesel_async::pooled_connection::AsyncDieselConnectionManager;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

pub type Pool = diesel_async::pooled_connection::deadpool::Pool<AsyncPgConnection>;

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
    let manager = AsyncDieselConnectionManager::<AsyncPgConnection>::new(url);
    let wait = (statement_timeout_ms > 0).then(|| std::time::Duration::from_millis(statement_timeout_ms));
    Pool::builder(manager)
        .max_size(size)
        .wait_timeout(wait)
        .runtime(deadpool::Runtime::Tokio1)
        .build()
        .map_err(|e| format!("cannot build the connection pool: {e}"))
}

/// Applies pending migrations (blocking; call off the async workers).
pub fn migrate(url: &str) -> Result<usize, String> {
    let mut conn = PgConnection::establish(url).map_err(|e| format!("cannot connect to PostgreSQL: {e}"))?;
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
