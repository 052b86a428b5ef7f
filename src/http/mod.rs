//! The HTTP API: one module per resource, the caller extractor, the routes.

pub mod app_passkey;
pub mod auth;
pub mod duplicate_activity;
pub mod entity;
pub mod files;
pub mod forms;
pub mod health;
pub mod list;
pub mod mcp;
pub mod metrics;
pub mod middleware;
pub mod new_db;
pub mod oauth;
pub mod oauth_client;
pub mod openapi;
pub mod operations;
pub mod passkey;
pub mod property;
pub mod retry;
pub mod sign_in;
pub mod usage;
pub mod views;

use std::net::IpAddr;

use actix_web::dev::Payload;
use actix_web::http::Method;
use actix_web::{FromRequest, Handler, HttpRequest, Responder, Route, web};
use dashmap::DashSet;
use futures_util::future::LocalBoxFuture;

use crate::actors::db_writer::Writers;
use crate::auth::clock::Clock;
use crate::auth::jwt::{Claims, JwtKeys};
use crate::db::{Pool, databases};
use crate::error::ApiError;
use crate::query::ExpensiveQueries;
use crate::query::cache::AnswerCache;
use crate::usage::Usage;
use crate::write::keys::prepare_keys;
use crate::write::{IdempotencyKey, WriteOp, WriteOutcome, WriteRequest};

/// Shared state of every worker.
pub struct AppState {
    pub pool: Pool,
    pub jwt: JwtKeys,
    /// Whether accepted tokens' logins still stand, looked up now and then.
    pub logins: auth::LoginChecks,
    pub writers: Writers,
    pub trusted_proxies: Vec<IpAddr>,
    pub clock: Clock,
    pub usage: Usage,
    pub files: crate::storage::files::FileService,
    /// List answers reused while their database is unchanged; `None` when turned off.
    pub answers: Option<AnswerCache>,
    /// Most values one write may hold (`limits.max_values_per_write`).
    pub max_values_per_write: usize,
    /// The connections expensive list queries may hold at once.
    pub expensive: ExpensiveQueries,
    /// Databases seen to exist (databases are never removed while serving).
    pub(crate) known_databases: DashSet<String>,
    /// Sign-in flows: their state, mail, links.
    pub sign_in: crate::sign_in::SignIn,
    /// Databases one login may create a day (`limits.new_databases_per_day`).
    pub new_databases_per_day: u32,
    /// The rate limits; the handlers that send mail charge them too.
    pub limits: web::Data<middleware::limits::RateLimits>,
    /// The `Origin`s the MCP endpoint accepts (`mcp.allowed_origins` and the service's own).
    pub mcp_origins: Vec<String>,
}

impl AppState {
    /// Has database `db`'s writer apply `op` for the caller's person there:
    /// 401 without a token, 403 with one for other databases, 404 for an
    /// unknown database. API keys the write asks for are hashed here, before
    /// its turn, so the writer never waits for them. With `idempotency`, a
    /// repeat of the write answers [`WriteOutcome::Replayed`].
    pub async fn write_as(
        &self,
        caller: &Caller,
        db: &str,
        op: WriteOp,
        idempotency: Option<IdempotencyKey>,
    ) -> Result<WriteOutcome, ApiError> {
        let actor = caller.require_person(db)?.to_owned();
        self.require_database(db).await?;
        let request = WriteRequest {
            db: db.to_owned(),
            actor,
            op,
            idempotency,
        };
        let keys = prepare_keys(&self.pool, &request).await?;
        self.writers.write(request, keys).await
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
        let mut conn = self.pool.get().await?;
        let exists = databases::exists(&mut conn, db).await?;
        if exists {
            self.known_databases.insert(db.to_owned());
        }
        Ok(exists)
    }
}

/// Who is calling: anonymous, or the holder of an acceptable access token.
/// A token that is present but unacceptable fails the request with 401.
pub struct Caller {
    pub claims: Option<Claims>,
    /// The client address the request came from.
    pub ip: String,
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

    /// 403 for a token the OAuth server issued: a credential it added (an
    /// API key, a login, a passkey) would outlive the token and its grant.
    pub fn refuse_oauth_credentials(&self) -> Result<(), ApiError> {
        if self.claims.as_ref().is_some_and(Claims::issued_by_oauth) {
            return Err(ApiError::forbidden(
                "OAuth tokens cannot add credentials (API keys, logins, passkeys)",
            ));
        }
        Ok(())
    }
}

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Caller, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { caller(&req).await })
    }
}

/// The caller of `req`: the token checked, then its login (see [`auth::LoginChecks`]).
async fn caller(req: &HttpRequest) -> Result<Caller, ApiError> {
    let state = state(req)?;
    let ip = client_ip(req, &state.trusted_proxies);
    let Some(token) = bearer(req) else {
        return Ok(Caller { claims: None, ip });
    };
    let claims = state
        .jwt
        .verify_access(token, &ip, state.clock.now())
        .map_err(|refusal| {
            crate::metrics::token_refused("request", refusal.reason());
            ApiError::from(refusal)
        })?;
    let claims = state
        .logins
        .live_claims(&state.pool, state.clock.now(), claims, "request")
        .await?;
    Ok(Caller {
        claims: Some(claims),
        ip,
    })
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
/// when the peer is a trusted proxy. Every header line counts, in order: a
/// proxy may append its own line after the client's, and only the entry it
/// added last is its own.
pub fn client_ip(req: &HttpRequest, trusted_proxies: &[IpAddr]) -> String {
    let peer = req.peer_addr().map(|addr| addr.ip());
    if let Some(peer) = peer.filter(|peer| trusted_proxies.contains(peer)) {
        let forwarded = req
            .headers()
            .get_all("X-Forwarded-For")
            .last()
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.rsplit(',').next())
            .and_then(|last| last.trim().parse::<IpAddr>().ok());
        return forwarded.unwrap_or(peer).to_string();
    }
    peer.map(|ip| ip.to_string()).unwrap_or_default()
}

/// One served route. The router and the test that every route is in the
/// OpenAPI document both read [`endpoints`], so neither can miss one.
pub struct Endpoint {
    pub method: Method,
    /// The actix path pattern.
    pub path: &'static str,
    route: Route,
}

fn at<F, Args>(method: Method, path: &'static str, handler: F) -> Endpoint
where
    F: Handler<Args>,
    Args: FromRequest + 'static,
    F::Output: Responder + 'static,
{
    Endpoint {
        route: web::method(method.clone()).to(handler),
        method,
        path,
    }
}

/// Every route of the service, in matching order.
pub fn endpoints() -> Vec<Endpoint> {
    use Method as M;
    vec![
        at(M::GET, "/", health::about),
        at(M::GET, "/health", health::health),
        at(M::GET, "/ready", health::ready),
        at(M::GET, "/metrics", metrics::read),
        at(M::GET, "/docs", openapi::docs_page),
        at(M::GET, "/docs/{file}", openapi::docs_asset),
        // Before `/api/{db}`, which would take `openapi.json` for a database name.
        at(M::GET, "/api/openapi.json", openapi::document),
        at(M::GET, "/api/auth", auth::authenticate),
        at(M::GET, "/api/auth/refresh", auth::refresh),
        // Before `/api/auth/{provider}`, which would take `choose` and `invitation` for providers.
        at(M::GET, "/api/auth/choose", sign_in::choose),
        at(M::GET, "/api/auth/invitation", sign_in::invitation_page),
        at(M::POST, "/api/auth/invitation", sign_in::accept_invitation),
        at(
            M::GET,
            "/.well-known/oauth-authorization-server",
            oauth_client::metadata,
        ),
        at(M::POST, "/auth/register", oauth_client::register),
        at(M::GET, "/auth/authorize", oauth::authorize),
        at(M::GET, "/auth/authorize/complete", oauth::complete),
        at(M::POST, "/auth/authorize/consent", oauth::allow),
        at(M::GET, "/auth/authorize/deny", oauth::deny),
        at(M::POST, "/auth/token", oauth_client::token),
        at(M::GET, "/api/auth/passkey/register", passkey::register_page),
        at(M::GET, "/api/auth/passkey/passkey.js", passkey::script),
        at(M::POST, "/api/auth/passkey/register/options", passkey::register_options),
        at(M::POST, "/api/auth/passkey/register/finish", passkey::register_finish),
        at(M::POST, "/api/auth/passkey/options", passkey::sign_in_options),
        at(M::POST, "/api/auth/passkey/finish", passkey::sign_in_finish),
        at(M::GET, "/api/auth/passkey", app_passkey::sign_in),
        at(M::POST, "/api/auth/passkey", auth::passkey_sign_in),
        at(M::GET, "/api/auth/{provider}", sign_in::start),
        at(M::POST, "/api/auth/{provider}", sign_in::send_link),
        // Before `/api/{db}/...`: `new` is a reserved database name.
        at(M::GET, "/api/new/{db}", new_db::available),
        at(M::POST, "/api/new", new_db::create),
        at(M::PUT, "/api/new", new_db::create_by_put),
        at(M::GET, "/api/{db}", usage::read),
        at(M::POST, "/api/{db}/mcp", mcp::post),
        at(M::GET, "/api/{db}/mcp", mcp::stream),
        at(
            M::GET,
            "/.well-known/oauth-protected-resource/api/{db}/mcp",
            mcp::protected_resource,
        ),
        at(M::GET, "/api/{db}/passkey", app_passkey::register_options),
        at(M::POST, "/api/{db}/passkey", app_passkey::register),
        at(M::GET, "/api/{db}/entity", list::list),
        at(M::POST, "/api/{db}/entity", entity::create),
        at(M::GET, "/api/{db}/entity/{id}", entity::read),
        at(M::POST, "/api/{db}/entity/{id}", entity::add_values),
        at(M::DELETE, "/api/{db}/entity/{id}", entity::delete),
        at(M::GET, "/api/{db}/entity/{id}/history", entity::history),
        at(M::GET, "/api/{db}/entity/{id}/aggregate", entity::aggregate),
        at(
            M::POST,
            "/api/{db}/entity/{id}/duplicate",
            duplicate_activity::duplicate,
        ),
        at(M::GET, "/api/{db}/entity/{id}/activity", duplicate_activity::activity),
        at(M::GET, "/api/{db}/property/{id}", property::read),
        at(M::DELETE, "/api/{db}/property/{id}", property::delete),
        // Files: thumbnails, and the local storage backend's signed URLs.
        at(
            M::GET,
            "/api/{db}/entity/{id}/thumbnail/{size}",
            files::entity_thumbnail,
        ),
        at(
            M::GET,
            "/api/{db}/property/{id}/thumbnail/{size}",
            files::property_thumbnail,
        ),
        at(M::PUT, "/storage/{key:.*}", files::storage_put),
        at(M::GET, "/storage/{key:.*}", files::storage_get),
    ]
}

/// Registers [`endpoints`].
pub fn routes(cfg: &mut web::ServiceConfig) {
    for endpoint in endpoints() {
        cfg.route(endpoint.path, endpoint.route);
    }
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
