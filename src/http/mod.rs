//! The HTTP API: one module per resource, the caller extractor, the routes.

pub mod auth;
pub mod entity;
pub mod error;
pub mod files;
pub mod health;
pub mod metrics;
pub mod property;
pub mod usage;

use std::future::{Ready, ready};
use std::net::IpAddr;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest, web};
use dashmap::DashSet;

use crate::actors::db_writer::Writers;
use crate::auth::clock::Clock;
use crate::auth::jwt::{Claims, JwtKeys};
use crate::db::{Pool, databases};
use crate::usage::Usage;
use crate::write::{WriteOp, WriteOutcome, WriteRequest};
use error::ApiError;

/// Shared state of every worker.
pub struct AppState {
    pub pool: Pool,
    pub jwt: JwtKeys,
    pub writers: Writers,
    pub trusted_proxies: Vec<IpAddr>,
    pub clock: Clock,
    pub usage: Usage,
    pub files: files::Files,
    /// Databases seen to exist (databases are never removed while serving).
    known_databases: DashSet<String>,
}

impl AppState {
    pub fn new(
        pool: Pool,
        jwt: JwtKeys,
        writers: Writers,
        trusted_proxies: Vec<IpAddr>,
        files: files::Files,
    ) -> AppState {
        AppState {
            pool,
            jwt,
            writers,
            trusted_proxies,
            clock: Clock::default(),
            usage: Usage::default(),
            files,
            known_databases: DashSet::new(),
        }
    }

    /// Has database `db`'s writer apply `op` for the caller's person there:
    /// 401 without a token, 403 with one for other databases, 404 for an
    /// unknown database.
    pub async fn write_as(&self, caller: &Caller, db: &str, op: WriteOp) -> Result<WriteOutcome, ApiError> {
        let actor = caller.require_person(db)?.to_owned();
        self.require_database(db).await?;
        self.writers
            .write(WriteRequest {
                db: db.to_owned(),
                actor,
                op,
            })
            .await
    }

    /// 404 unless database `db` exists.
    pub async fn require_database(&self, db: &str) -> Result<(), ApiError> {
        if self.known_databases.contains(db) {
            return Ok(());
        }
        let mut conn = self.pool.get().await?;
        if databases::exists(&mut conn, db).await? {
            self.known_databases.insert(db.to_owned());
            Ok(())
        } else {
            Err(ApiError::not_found("Database not found"))
        }
    }
}

/// Who is calling: anonymous, or the holder of an acceptable access token.
/// A token that is present but unacceptable fails the request with 401.
pub struct Caller {
    pub claims: Option<Claims>,
}

impl Caller {
    /// The caller's person in `db`; anonymous and other databases' callers have none.
    pub fn person_in(&self, db: &str) -> Option<&str> {
        self.claims.as_ref()?.person_in(db)
    }

    /// The caller's person in `db`, for routes that need one: 401 without a
    /// token, 403 with a token for other databases only.
    pub fn require_person(&self, db: &str) -> Result<&str, ApiError> {
        match &self.claims {
            None => Err(ApiError::token_required()),
            Some(claims) => claims
                .person_in(db)
                .ok_or_else(|| ApiError::forbidden("The token gives no access to this database")),
        }
    }
}

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = Ready<Result<Caller, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(caller(req))
    }
}

fn caller(req: &HttpRequest) -> Result<Caller, ApiError> {
    let Some(token) = bearer(req) else {
        return Ok(Caller { claims: None });
    };
    let state = state(req)?;
    let ip = client_ip(req, &state.trusted_proxies);
    let claims = state
        .jwt
        .verify_access(token, &ip, state.clock.now())
        .map_err(|refusal| {
            crate::metrics::token_refused("request", refusal.reason());
            ApiError::from(refusal)
        })?;
    Ok(Caller { claims: Some(claims) })
}

fn state(req: &HttpRequest) -> Result<&AppState, ApiError> {
    req.app_data::<web::Data<AppState>>()
        .map(|data| data.get_ref())
        .ok_or_else(|| ApiError::internal("request without app state", "missing AppState"))
}

/// The credential of an `Authorization: Bearer` header.
pub fn bearer(req: &HttpRequest) -> Option<&str> {
    let value = req.headers().get("Authorization")?.to_str().ok()?;
    let (scheme, credential) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credential.trim())
        .filter(|c| !c.is_empty())
}

/// The client address: the socket peer, or the last `X-Forwarded-For` entry
/// when the peer is a trusted proxy.
pub fn client_ip(req: &HttpRequest, trusted_proxies: &[IpAddr]) -> String {
    let peer = req.peer_addr().map(|addr| addr.ip());
    if let Some(peer) = peer.filter(|peer| trusted_proxies.contains(peer)) {
        let forwarded = req
            .headers()
            .get("X-Forwarded-For")
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.rsplit(',').next())
            .and_then(|last| last.trim().parse::<IpAddr>().ok());
        return forwarded.unwrap_or(peer).to_string();
    }
    peer.map(|ip| ip.to_string()).unwrap_or_default()
}

/// Every route of the service.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(health::about))
        .route("/health", web::get().to(health::health))
        .route("/ready", web::get().to(health::ready))
        .route("/metrics", web::get().to(metrics::read))
        .route("/api/auth", web::get().to(auth::authenticate))
        .route("/api/auth/refresh", web::get().to(auth::refresh))
        .route("/api/{db}", web::get().to(usage::read))
        .route("/api/{db}/entity", web::get().to(entity::list))
        .route("/api/{db}/entity", web::post().to(entity::create))
        .route("/api/{db}/entity/{id}", web::get().to(entity::read))
        .route("/api/{db}/entity/{id}", web::post().to(entity::add_values))
        .route("/api/{db}/entity/{id}", web::delete().to(entity::delete))
        .route("/api/{db}/entity/{id}/history", web::get().to(entity::history))
        .route("/api/{db}/entity/{id}/aggregate", web::get().to(entity::aggregate))
        .route("/api/{db}/property/{id}", web::get().to(property::read))
        .route("/api/{db}/property/{id}", web::delete().to(property::delete))
        // Files: thumbnails, and the local storage backend's signed URLs.
        .route(
            "/api/{db}/entity/{id}/thumbnail/{size}",
            web::get().to(files::entity_thumbnail),
        )
        .route(
            "/api/{db}/property/{id}/thumbnail/{size}",
            web::get().to(files::property_thumbnail),
        )
        .route("/storage/{key:.*}", web::put().to(files::storage_put))
        .route("/storage/{key:.*}", web::get().to(files::storage_get));
}

/// The database an API path names (`/api/{db}/...`), if any.
pub fn database_of_path(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("/api/")?;
    let db = rest.split('/').next()?;
    (databases::name_problem(db).is_none()).then_some(db)
}

/// JSON errors for what the router and extractors reject.
pub fn not_found() -> ApiError {
    ApiError::not_found("Not found")
}
