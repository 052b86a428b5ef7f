//! Wiring: the database connection (or the private cluster), the shared state
//! and the HTTP server.

use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::error::{JsonPayloadError, UrlencodedError};
use actix_web::middleware::{ErrorHandlers, from_fn};
use actix_web::{App, HttpServer, web};
use rand::RngCore;

use crate::actors::db_writer::{WriterLimits, Writers};
use crate::actors::sessions::SessionStore;
use crate::auth::jwt::JwtKeys;
use crate::config::Settings;
use crate::db::placement::Clusters;
use crate::db::{self, Pool, local_cluster::LocalCluster};
use crate::error::{ApiError, ErrorCode};
use crate::formula::worker as formula_worker;
use crate::http::middleware::{
    challenge, consistency, cors, error_body, limits, metrics, request_log, trailing_slash, usage,
};
use crate::http::{self, AppState};
use crate::jobs;
use crate::mail::Mailer;
use crate::query::ExpensiveQueries;
use crate::query::cache::AnswerCache;
use crate::service::changes::{self, ChangeHub};
use crate::service::consistency::Signer;
use crate::service::rate_limits::RateLimits;
use crate::service::replicas::Replicas;
use crate::service::{Service, placement};
use crate::sign_in::SignIn;
use crate::sign_in::client_metadata::ClientDocuments;
use crate::sign_in::login_checks::LoginChecks;
use crate::sign_in::oidc::OidcProviders;
use crate::sign_in::passkey::Passkeys;
use crate::storage::files::FileService;
use crate::write::WriteRules;

/// Name of the database eds keeps in its private cluster.
const LOCAL_DATABASE: &str = "eds";

/// The private cluster, stopped when dropped if this process started it.
pub struct ClusterGuard {
    cluster: LocalCluster,
    started_here: bool,
}

impl Drop for ClusterGuard {
    fn drop(&mut self) {
        if self.started_here
            && let Err(error) = self.cluster.stop()
        {
            tracing::warn!(%error, "stopping the local PostgreSQL cluster failed");
        }
    }
}

/// The PostgreSQL URL to use: `database.url`, or the private cluster's,
/// started (and created) if needed. Blocking.
pub fn database_url(settings: &Settings) -> Result<(String, Option<ClusterGuard>), String> {
    if !settings.database.url.is_empty() {
        return Ok((settings.database.url.clone(), None));
    }
    let cluster = LocalCluster::new(&settings.data.dir.join("postgres"))?;
    let started_here = cluster.ensure_running(false)?;
    let guard = ClusterGuard { cluster, started_here };
    db::create_database_if_missing(&guard.cluster.url("postgres")?, LOCAL_DATABASE, None)?;
    Ok((guard.cluster.url(LOCAL_DATABASE)?, Some(guard)))
}

/// `auth.jwt_secret`, or a secret generated once and kept in `data.dir`.
pub fn jwt_secret(settings: &Settings) -> Result<Vec<u8>, String> {
    if !settings.auth.jwt_secret.is_empty() {
        return Ok(settings.auth.jwt_secret.as_bytes().to_vec());
    }
    let path = settings.data.dir.join("jwt_secret");
    if let Ok(secret) = std::fs::read_to_string(&path) {
        return Ok(secret.trim().as_bytes().to_vec());
    }
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let secret = hex::encode(bytes);
    write_private(&path, &secret).map_err(|e| format!("cannot keep the JWT secret in {}: {e}", path.display()))?;
    Ok(secret.into_bytes())
}

fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?
        .write_all(text.as_bytes())
}

/// The shared state for a server on `pool`.
pub fn state(settings: &Settings, pool: Pool) -> Result<web::Data<AppState>, String> {
    let secret = jwt_secret(settings)?;
    let jwt = JwtKeys::new(&secret, settings.auth.untyped_tokens_until)
        .with_previous_secrets(&settings.auth.previous_jwt_secrets);
    let trusted_proxies = settings
        .http
        .trusted_proxies
        .iter()
        .map(|proxy| {
            proxy
                .parse::<IpAddr>()
                .map_err(|_| format!("http.trusted_proxies: {proxy:?} is not an IP address"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let clusters = Clusters::new(
        &settings.database.url,
        pool.clone(),
        settings.database.pool_size,
        settings.database.statement_timeout_ms,
    );
    let writers = Writers::new(
        clusters.clone(),
        WriterLimits {
            waiting: settings.actors.writer_mailbox.max(1),
            batch: settings.actors.writer_batch.max(1),
            rules: WriteRules {
                max_webhooks: Some(settings.webhooks.max_per_database),
            },
            positions: !settings.database.replica_urls.is_empty(),
        },
    );
    let files = FileService::from_settings(settings, &secret)?;
    let sign_in = SignIn {
        sessions: SessionStore::new(pool.clone(), settings.limits.pending_sign_ins()),
        mailer: Mailer::from_settings(&settings.mail)?,
        oidc: OidcProviders::from_settings(&settings.auth)?,
        passkeys: Passkeys::from_settings(&settings.auth.webauthn, &settings.http.public_url),
        client_documents: ClientDocuments::from_settings(&settings.oauth)?,
        public_url: settings.http.public_url.trim_end_matches('/').to_owned(),
        api_url: settings.http.oauth_issuer(),
        allowed_next_origins: settings.auth.next_origins()?,
    };
    let mcp_origins = settings.mcp.origins(&settings.http)?;
    let changes = ChangeHub::new(
        clusters.clone(),
        settings.changes.max_streams,
        settings.changes.max_streams_per_caller,
    );
    let service = Service {
        pool,
        clusters,
        jwt,
        logins: LoginChecks::new(settings.auth.revocation_check_seconds),
        writers,
        clock: Default::default(),
        usage: Default::default(),
        files,
        answers: AnswerCache::new(settings.database.answer_cache_bytes),
        max_values_per_write: settings.limits.max_values_per_write,
        max_batch_operations: settings.limits.max_batch_operations,
        expensive: ExpensiveQueries::new(
            settings.database.expensive_queries,
            settings.database.pool_size,
            settings.database.statement_timeout_ms,
        ),
        known_databases: Default::default(),
        sign_in,
        new_databases_per_day: settings.limits.new_databases_per_day,
        limits: Arc::new(RateLimits::from_settings(&settings.limits)),
        webhooks: crate::service::webhook_rules::WebhookRules::new(settings.webhooks.clone()),
        changes,
        replicas: Arc::new(Replicas::new(
            &settings.database.replica_urls,
            settings.database.pool_size,
            settings.database.statement_timeout_ms,
            settings.database.replica_max_lag_ms,
            Signer::new(&secret),
        )?),
    };
    Ok(web::Data::new(AppState {
        service: Arc::new(service),
        trusted_proxies,
        mcp_origins,
        graphql: crate::graphql::Graphql::new(settings.graphql.max_depth, settings.graphql.max_complexity),
    }))
}

/// Starts serving on `listener`; the returned server runs until stopped.
pub fn server(settings: &Settings, state: web::Data<AppState>, listener: TcpListener) -> std::io::Result<Server> {
    // Buffered bodies are the JSON writes and the sign-in forms; the storage upload streams under its own limit.
    let json_body_limit = settings.http.json_body_limit_bytes;
    let limits = web::Data::from(state.limits.clone());
    let metrics_token = web::Data::new(http::metrics::MetricsToken(settings.metrics.token.clone()));
    let guide_dir = web::Data::new(http::guide::GuideDir(settings.docs.guide_dir.clone()));
    let flushed = state.clone();
    let server = HttpServer::new(move || {
        // the factory runs on each worker thread: from now on it has its own connections
        db::enter_worker_thread();
        App::new()
            .app_data(state.clone())
            .app_data(limits.clone())
            .app_data(metrics_token.clone())
            .app_data(guide_dir.clone())
            .app_data(web::PayloadConfig::new(json_body_limit))
            // the typed extractors (sign-in and OAuth bodies) keep to the same bound
            .app_data(
                web::JsonConfig::default()
                    .limit(json_body_limit)
                    .error_handler(|error, _| match error {
                        JsonPayloadError::ContentType => ApiError::new(
                            ErrorCode::InvalidJson,
                            "The body must be JSON (Content-Type: application/json)",
                        )
                        .into(),
                        other => other.into(),
                    }),
            )
            .app_data(
                web::FormConfig::default()
                    .limit(json_body_limit)
                    .error_handler(|error, _| {
                        match error {
                            // the OAuth token endpoint's RFC 6749 code, and a clear 400 for the sign-in forms
                            UrlencodedError::ContentType => ApiError::new(
                                ErrorCode::InvalidRequest,
                                "The body must be a form (Content-Type: application/x-www-form-urlencoded)",
                            )
                            .into(),
                            other => other.into(),
                        }
                    }),
            )
            .app_data(
                web::QueryConfig::default()
                    .error_handler(|error, _| ApiError::new(ErrorCode::InvalidQuery, error.to_string()).into()),
            )
            .app_data(web::PathConfig::default().error_handler(|_, _| ApiError::route_not_found().into()))
            .wrap(ErrorHandlers::new().default_handler(error_body::json_error_body))
            .wrap(from_fn(challenge::challenge))
            .wrap(from_fn(usage::count_request))
            .wrap(from_fn(limits::middleware))
            .wrap(from_fn(consistency::answer_position))
            .wrap(from_fn(cors::cors))
            .wrap(from_fn(metrics::observe))
            .wrap(from_fn(request_log::request_log))
            .wrap(from_fn(trailing_slash::trim))
            .configure(http::routes)
            .default_service(web::to(|| async {
                Err::<actix_web::HttpResponse, _>(ApiError::route_not_found())
            }))
    })
    .listen(listener)?
    .workers(settings.http.worker_count())
    // SIGTERM/SIGINT stop accepting; requests in flight, and the writes they await, finish.
    .shutdown_timeout(settings.http.shutdown_grace_seconds);
    let listen_url = match settings.database.direct_url.as_str() {
        "" => settings.database.url.clone(),
        direct => direct.to_owned(),
    };
    actix_web::rt::spawn(placement::follow(flushed.clusters.clone(), listen_url.clone()));
    // each cluster's workers start as its pool is made: the home one's now
    let (started, mut clusters_started) = tokio::sync::mpsc::unbounded_channel::<(String, Pool)>();
    flushed.clusters.on_cluster_started(Box::new(move |url, pool| {
        let _ = started.send((url.to_owned(), pool));
    }));
    let (home_url, workers_state, workers_settings) =
        (settings.database.url.clone(), flushed.clone(), settings.clone());
    actix_web::rt::spawn(async move {
        while let Some((url, pool)) = clusters_started.recv().await {
            let listen = if url == home_url { listen_url.clone() } else { url };
            start_cluster_workers(&workers_settings, &workers_state, pool, listen);
        }
    });
    if !flushed.replicas.is_empty() {
        actix_web::rt::spawn(flushed.replicas.clone().watch(flushed.pool.clone()));
    }
    actix_web::rt::spawn(close_streams_on_signal(flushed.changes.clone()));
    actix_web::rt::spawn(flush_request_counts(flushed));
    Ok(server.run())
}

/// The background work of one cluster (`pool`): formulas and
/// re-projections, webhook deliveries, the change log's sweep, and the
/// change feed's wake-up connection on `listen_url`.
fn start_cluster_workers(settings: &Settings, state: &AppState, pool: Pool, listen_url: String) {
    let (formulas, retry) = (
        pool.clone(),
        db::formula_queue::Retry {
            attempts: settings.actors.formula_attempts,
            backoff: Duration::from_millis(settings.actors.formula_retry_ms),
        },
    );
    actix_web::rt::spawn(formula_worker::run(
        move || jobs::next(formulas.clone(), retry),
        state.writers.formulas_due(),
        Duration::from_millis(settings.actors.formula_poll_ms.max(10)),
    ));
    actix_web::rt::spawn(crate::webhooks::run(pool.clone(), settings.webhooks.clone()));
    actix_web::rt::spawn(changes::listen(
        state.changes.clone(),
        state.replicas.clone(),
        listen_url,
    ));
    actix_web::rt::spawn(jobs::change_log::sweep_every(
        pool,
        settings.changes.retention_hours,
        settings.webhooks.attempt_retention_hours,
    ));
}

/// Ends every change stream when the server is told to stop (SIGTERM or
/// SIGINT, as the server itself is), so its graceful stop need not wait for
/// them; their clients resume on another process.
async fn close_streams_on_signal(hub: Arc<ChangeHub>) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut terminate), Ok(mut interrupt)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
    else {
        return;
    };
    tokio::select! {
        _ = terminate.recv() => {}
        _ = interrupt.recv() => {}
    }
    hub.close_all();
}

/// Writes the request counts to PostgreSQL every few seconds.
async fn flush_request_counts(state: web::Data<AppState>) {
    let mut every = tokio::time::interval(std::time::Duration::from_secs(10));
    loop {
        every.tick().await;
        if let Err(error) = state.usage.flush(&state.clusters).await {
            tracing::warn!(%error, "writing request counts failed");
        }
    }
}

/// Runs `eds serve` until the server is stopped.
pub async fn serve(mut settings: Settings, url: String) -> Result<(), String> {
    // the private cluster's URL, for the change feed's wake-up connection
    if settings.database.url.is_empty() {
        settings.database.url = url.clone();
    }
    let direct_url = db::pooler::direct_url(&settings.database.direct_url, &url);
    if settings.database.migrate_on_start {
        let migrate_url = direct_url.clone();
        tokio::task::spawn_blocking(move || db::migrate(&migrate_url))
            .await
            .map_err(|e| e.to_string())??;
    }
    let pool = db::server_pool(
        &url,
        &direct_url,
        settings.database.pool_size,
        settings.database.statement_timeout_ms,
        settings.http.worker_count(),
    )
    .await?;
    if settings.database.migrate_on_start {
        db::add_missing_types(&pool).await.map_err(|e| e.message.into_owned())?;
    }
    db::placement::prepare(&settings.database.placement, &pool, settings.database.migrate_on_start).await?;
    let state = state(&settings, pool)?;
    state.clusters.reload().await.map_err(|e| e.message.into_owned())?;
    if let Err(error) = state.files.store.check().await {
        tracing::warn!(%error, "object storage is not reachable; file uploads and thumbnails will fail");
    }
    let listener =
        TcpListener::bind(&settings.http.bind).map_err(|e| format!("cannot listen on {}: {e}", settings.http.bind))?;
    let address: SocketAddr = listener.local_addr().map_err(|e| e.to_string())?;
    let server = server(&settings, state.clone(), listener).map_err(|e| e.to_string())?;
    tracing::info!("listening on http://{address}");
    server.await.map_err(|e| e.to_string())?;
    tracing::info!("stopped");
    // keep the last requests' counts
    state
        .usage
        .flush(&state.clusters)
        .await
        .map_err(|e| e.message.into_owned())
}
