//! Wiring: the database connection (or the private cluster), the shared state
//! and the HTTP server.

use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::Path;
use std::time::Duration;

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::Service;
use actix_web::dev::ServiceRequest;
use actix_web::dev::{Server, ServiceResponse};
use actix_web::http::Method;
use actix_web::http::header::{self, HeaderValue};
use actix_web::middleware::{ErrorHandlerResponse, ErrorHandlers};
use actix_web::middleware::{Next, from_fn};
use actix_web::{App, HttpServer, web};
use rand::RngCore;
use tracing::Instrument;

use crate::actors::db_writer::{WriterLimits, Writers};
use crate::actors::formula_worker;
use crate::auth::jwt::JwtKeys;
use crate::config::Settings;
use crate::db::{self, Pool, local_cluster::LocalCluster};
use crate::error::ApiError;
use crate::http::files::Files;
use crate::http::{self, AppState};
use crate::limits::RateLimits;
use crate::query::ExpensiveQueries;
use crate::query::cache::AnswerCache;

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
    let writers = Writers::new(
        pool.clone(),
        WriterLimits {
            waiting: settings.actors.writer_mailbox.max(1),
            batch: settings.actors.writer_batch.max(1),
        },
    );
    let files = Files::from_settings(settings, &secret)?;
    Ok(web::Data::new(AppState {
        pool,
        jwt,
        logins: http::auth::LoginChecks::new(settings.auth.revocation_check_seconds),
        writers,
        trusted_proxies,
        clock: Default::default(),
        usage: Default::default(),
        files,
        answers: AnswerCache::new(settings.database.answer_cache_bytes),
        max_values_per_write: settings.limits.max_values_per_write,
        expensive: ExpensiveQueries::new(
            settings.database.expensive_queries,
            settings.database.pool_size,
            settings.database.statement_timeout_ms,
        ),
        known_databases: Default::default(),
    }))
}

/// Starts serving on `listener`; the returned server runs until stopped.
pub fn server(settings: &Settings, state: web::Data<AppState>, listener: TcpListener) -> std::io::Result<Server> {
    // Buffered bodies are the JSON writes; the storage upload streams under its own limit.
    let json_body_limit = settings.http.json_body_limit_bytes;
    let limits = web::Data::new(RateLimits::from_settings(&settings.limits));
    let metrics_token = web::Data::new(http::metrics::MetricsToken(settings.metrics.token.clone()));
    let flushed = state.clone();
    let mut server = HttpServer::new(move || {
        App::new()
            .app_data(state.clone())
            .app_data(limits.clone())
            .app_data(metrics_token.clone())
            .app_data(web::PayloadConfig::new(json_body_limit))
            .app_data(
                web::QueryConfig::default()
                    .error_handler(|error, _| ApiError::bad_request("invalid_query", error.to_string()).into()),
            )
            .app_data(web::PathConfig::default().error_handler(|_, _| http::not_found().into()))
            .wrap(ErrorHandlers::new().default_handler(json_error_body))
            .wrap_fn({
                let state = state.clone();
                move |req, service| {
                    if let Some(db) = http::database_of_path(req.path()) {
                        state.usage.count_request(db);
                    }
                    service.call(req)
                }
            })
            .wrap(from_fn(crate::limits::middleware))
            .wrap(from_fn(cors))
            .wrap(from_fn(crate::metrics::http_middleware))
            .wrap(from_fn(request_log))
            .configure(http::routes)
            .default_service(web::to(|| async {
                Err::<actix_web::HttpResponse, _>(http::not_found())
            }))
    })
    .listen(listener)?;
    if settings.http.workers > 0 {
        server = server.workers(settings.http.workers);
    }
    actix_web::rt::spawn(formula_worker::run(
        flushed.pool.clone(),
        flushed.writers.formulas_due(),
        Duration::from_millis(settings.actors.formula_poll_ms.max(10)),
        db::formula_queue::Retry {
            attempts: settings.actors.formula_attempts,
            backoff: Duration::from_millis(settings.actors.formula_retry_ms),
        },
    ));
    actix_web::rt::spawn(flush_request_counts(flushed));
    Ok(server.run())
}

/// Gives every request an id (its `X-Request-Id`, or a new one), echoed in the
/// response and carried by every log line written while serving it, and logs
/// the request once done. The path is logged without its query string:
/// signed storage URLs carry their signature there, and logs hold no credential.
async fn request_log(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> actix_web::Result<ServiceResponse<impl MessageBody>> {
    let given = req
        .headers()
        .get(REQUEST_ID)
        .and_then(|value| value.to_str().ok())
        .filter(|id| !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_owned);
    let id = given.unwrap_or_else(crate::model::ids::new_id);
    let span = tracing::info_span!("request", request_id = %id);
    let (method, path) = (req.method().clone(), req.path().to_owned());
    let started = std::time::Instant::now();
    let mut response = next.call(req).instrument(span.clone()).await?;
    span.in_scope(|| {
        tracing::info!(
            %method,
            %path,
            status = response.status().as_u16(),
            ms = started.elapsed().as_secs_f64() * 1000.0,
            "served"
        )
    });
    if let Ok(value) = HeaderValue::from_str(&id) {
        response
            .headers_mut()
            .insert(header::HeaderName::from_static(REQUEST_ID), value);
    }
    Ok(response)
}

const REQUEST_ID: &str = "x-request-id";

/// CORS as the original serves it: any origin, credentials travel in the
/// `Authorization` header (never cookies), preflights answered with 204.
async fn cors(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> actix_web::Result<ServiceResponse<EitherBody<impl MessageBody>>> {
    if req.method() == Method::OPTIONS && req.headers().contains_key(header::ACCESS_CONTROL_REQUEST_METHOD) {
        let mut preflight = actix_web::HttpResponse::NoContent();
        preflight
            .insert_header((header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"))
            .insert_header((header::ACCESS_CONTROL_ALLOW_METHODS, "GET, POST, PUT, DELETE, OPTIONS"))
            .insert_header((header::ACCESS_CONTROL_MAX_AGE, "86400"));
        if let Some(asked) = req.headers().get(header::ACCESS_CONTROL_REQUEST_HEADERS) {
            preflight.insert_header((header::ACCESS_CONTROL_ALLOW_HEADERS, asked.clone()));
        }
        return Ok(req.into_response(preflight.finish()).map_into_right_body());
    }
    let mut response = next.call(req).await?;
    let headers = response.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("Retry-After, X-Request-Id"),
    );
    Ok(response.map_into_left_body())
}

/// Writes the request counts to PostgreSQL every few seconds.
async fn flush_request_counts(state: web::Data<AppState>) {
    let mut every = tokio::time::interval(std::time::Duration::from_secs(10));
    loop {
        every.tick().await;
        if let Err(error) = state.usage.flush(&state.pool).await {
            tracing::warn!(%error, "writing request counts failed");
        }
    }
}

/// Error responses made outside the handlers (payload limits, method
/// mismatches) get the same JSON body as every other error.
fn json_error_body<B>(response: ServiceResponse<B>) -> actix_web::Result<ErrorHandlerResponse<B>> {
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"application/json"));
    if is_json || !(response.status().is_client_error() || response.status().is_server_error()) {
        return Ok(ErrorHandlerResponse::Response(response.map_into_left_body()));
    }
    let status = response.status();
    let message = status.canonical_reason().unwrap_or("Error");
    let code = match status.as_u16() {
        413 => "payload_too_large",
        405 => "method_not_allowed",
        404 => "not_found",
        _ if status.is_server_error() => "internal",
        _ => "bad_request",
    };
    let (request, _) = response.into_parts();
    let body = actix_web::HttpResponse::build(status).json(serde_json::json!({
        "status": status.as_u16(),
        "error": code,
        "message": message,
    }));
    Ok(ErrorHandlerResponse::Response(
        ServiceResponse::new(request, body).map_into_right_body(),
    ))
}

/// Runs `eds serve` until the server is stopped.
pub async fn serve(settings: Settings, url: String) -> Result<(), String> {
    if settings.database.migrate_on_start {
        let migrate_url = url.clone();
        tokio::task::spawn_blocking(move || db::migrate(&migrate_url))
            .await
            .map_err(|e| e.to_string())??;
    }
    let pool = db::pool(
        &url,
        settings.database.pool_size,
        settings.database.statement_timeout_ms,
    )?;
    let state = state(&settings, pool)?;
    if let Err(error) = state.files.store.check().await {
        tracing::warn!(%error, "object storage is not reachable; file uploads and thumbnails will fail");
    }
    let listener =
        TcpListener::bind(&settings.http.bind).map_err(|e| format!("cannot listen on {}: {e}", settings.http.bind))?;
    let address: SocketAddr = listener.local_addr().map_err(|e| e.to_string())?;
    let server = server(&settings, state.clone(), listener).map_err(|e| e.to_string())?;
    tracing::info!("listening on http://{address}");
    server.await.map_err(|e| e.to_string())?;
    // keep the last requests' counts
    state.usage.flush(&state.pool).await.map_err(|e| e.message.into_owned())
}
