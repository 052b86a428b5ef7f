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
mod pool;
pub use pool::{Pool, enter_worker_thread, enter_writers_thread, new_connection, pool, pool_per_worker, server_pool};
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

use diesel::{Connection, PgConnection, RunQueryDsl};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

const MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations");
/// Advisory lock key held while migrating, so processes starting together take turns.
const MIGRATION_LOCK: i64 = 0x0065_6473_5f6d_6967; // "eds_mig"

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
