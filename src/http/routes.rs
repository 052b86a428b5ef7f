//! The endpoint table: every route of the service, which the router serves
//! and the OpenAPI document lists.

use actix_web::http::Method;
use actix_web::{FromRequest, Handler, Responder, Route, web};

use super::{
    app_passkey, auth, duplicate_activity, entity, files, health, list, mcp, metrics, new_db, oauth, oauth_client,
    openapi, passkey, property, sign_in, usage,
};
use crate::db::databases;
use crate::error::ApiError;

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
