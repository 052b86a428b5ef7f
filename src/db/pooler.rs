//! Connections through a transaction-pooling PgBouncer: `database.url` is
//! such a pooler when `database.direct_url` names another address (the
//! database itself, for migrations and `LISTEN`).
//!
//! PgBouncer 1.18 drops the `options` startup parameter (or refuses it), so
//! the statement limit, `jit = off` and no parallel workers are kept as the
//! role's settings in the database instead, which every server connection
//! PgBouncer opens starts with; and it keeps no prepared statements, which
//! [`super::pooler_wire`] makes up for. `direct_url` and the pooler's server
//! connections log in as the same role.

use diesel::ConnectionError;
use diesel::ConnectionResult;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_postgres::config::{Host, SslMode};

use super::pooler_wire::Wire;

trait Socket: AsyncRead + AsyncWrite + Send + Unpin {}
impl<S: AsyncRead + AsyncWrite + Send + Unpin> Socket for S {}

/// A connection to `url` whose statements each run within one exchange
/// (see [`super::pooler_wire`]). Without TLS: a pooler is reached on a
/// trusted network, as the direct URL's connections are.
pub fn connect(url: &str) -> BoxFuture<'_, ConnectionResult<AsyncPgConnection>> {
    async move {
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e: tokio_postgres::Error| ConnectionError::InvalidConnectionUrl(e.to_string()))?;
        if config.get_ssl_mode() == SslMode::Require {
            return Err(ConnectionError::BadConnection(
                "a pooled database.url is reached without TLS: sslmode=require cannot be met".to_owned(),
            ));
        }
        config.ssl_mode(SslMode::Disable);
        let socket = open(&config).await?;
        let (client, connection) = config
            .connect_raw(Wire::new(socket), tokio_postgres::NoTls)
            .await
            .map_err(|e| ConnectionError::BadConnection(e.to_string()))?;
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "a pooled database connection ended");
            }
        });
        AsyncPgConnection::try_from(client).await
    }
    .boxed()
}

/// The socket to the URL's first host.
async fn open(config: &tokio_postgres::Config) -> ConnectionResult<Box<dyn Socket>> {
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let failed = |e: std::io::Error| ConnectionError::BadConnection(e.to_string());
    match config.get_hosts().first() {
        Some(Host::Tcp(host)) => {
            let socket = tokio::net::TcpStream::connect((host.as_str(), port))
                .await
                .map_err(failed)?;
            socket.set_nodelay(true).map_err(failed)?;
            Ok(Box::new(socket))
        }
        Some(Host::Unix(dir)) => {
            let path = dir.join(format!(".s.PGSQL.{port}"));
            Ok(Box::new(tokio::net::UnixStream::connect(path).await.map_err(failed)?))
        }
        None => Err(ConnectionError::InvalidConnectionUrl(
            "the database URL names no host".to_owned(),
        )),
    }
}

/// `database.direct_url`, or `url` when it is empty.
pub fn direct_url(direct_url: &str, url: &str) -> String {
    if direct_url.is_empty() { url } else { direct_url }.to_owned()
}

/// Keeps the statement limit (0: none), `jit = off` and no parallel workers
/// (as the pool's own connections have them) as the settings of
/// `direct_url`'s role in its database, which PgBouncer's server connections log in as, before any of
/// them is opened for this process (one opened before keeps what it started
/// with until PgBouncer replaces it). They hold for that role's sessions in
/// that PostgreSQL database alone; migrations lift the limit for their own
/// session.
pub async fn keep_limits_on_role(direct_url: &str, statement_timeout_ms: u64) -> Result<(), String> {
    use diesel_async::AsyncConnection;
    let mut conn = AsyncPgConnection::establish(direct_url)
        .await
        .map_err(|e| format!("cannot connect to database.direct_url: {e}"))?;
    // the number is ours; the database's name is quoted by format's %I
    let statement = format!(
        "DO $$ BEGIN \
         EXECUTE format('ALTER ROLE CURRENT_USER IN DATABASE %I SET statement_timeout = {statement_timeout_ms}', current_database()); \
         EXECUTE format('ALTER ROLE CURRENT_USER IN DATABASE %I SET jit = off', current_database()); \
         EXECUTE format('ALTER ROLE CURRENT_USER IN DATABASE %I SET max_parallel_workers_per_gather = 0', current_database()); \
         END $$"
    );
    diesel::sql_query(statement).execute(&mut conn).await.map_err(|e| {
        format!("cannot keep database.statement_timeout_ms as the role's setting (the role may alter itself): {e}")
    })?;
    Ok(())
}
