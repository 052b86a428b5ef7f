//! The endpoint table: every route of the service, which the router serves
//! and the OpenAPI document lists.

use std::sync::OnceLock;

use actix_web::http::Method;
use actix_web::{FromRequest, Handler, Responder, Route, web};
use utoipa::OpenApi;

use super::{
    app_passkey, auth, batch, changes, duplicate_activity, entity, files, graphql, guide, health, list, mcp, metrics,
    new_db, oauth, oauth_client, openapi, passkey, property, restore, sign_in, usage, webhooks,
};
use crate::service::databases;
use openapi::ServedDocument;

/// One served route. The router serves [`endpoints`] and the OpenAPI
/// document lists their operations ([`Operations`]), so neither can miss one.
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

/// Defines [`endpoints`], the routes in matching order, and [`Operations`],
/// their handlers' OpenAPI operations, from one table of
/// `METHOD "pattern" => handler` rows.
macro_rules! endpoint_table {
    ($($method:ident $path:literal => $($handler:ident)::+,)*) => {
        /// Every route of the service, in matching order.
        pub fn endpoints() -> Vec<Endpoint> {
            vec![$(at(Method::$method, $path, $($handler)::+)),*]
        }

        /// The OpenAPI operations of [`endpoints`], as their handlers document them.
        #[derive(OpenApi)]
        #[openapi(paths($($($handler)::+),*))]
        pub struct Operations;
    };
}

endpoint_table! {
    GET "/" => health::about,
    GET "/health" => health::health,
    GET "/ready" => health::ready,
    GET "/metrics" => metrics::read,
    GET "/docs" => openapi::docs_page,
    GET "/docs/{file}" => openapi::docs_asset,
    GET "/graphql-console/{file}" => super::views::graphql_console::asset,
    GET "/guide/{path:.*}" => guide::file,
    // Before `/api/{db}`, which would take `openapi.json` for a database name.
    GET "/api/openapi.json" => openapi::document,
    GET "/api/auth" => auth::authenticate,
    GET "/api/auth/refresh" => auth::refresh,
    // Before `/api/auth/{provider}`, which would take `choose` and `invitation` for providers.
    GET "/api/auth/choose" => sign_in::choose,
    GET "/api/auth/invitation" => sign_in::invitation_page,
    POST "/api/auth/invitation" => sign_in::accept_invitation,
    GET "/.well-known/oauth-authorization-server" => oauth_client::metadata,
    POST "/auth/register" => oauth_client::register,
    GET "/auth/authorize" => oauth::authorize,
    GET "/auth/authorize/complete" => oauth::complete,
    POST "/auth/authorize/consent" => oauth::allow,
    GET "/auth/authorize/deny" => oauth::deny,
    POST "/auth/token" => oauth_client::token,
    GET "/api/auth/passkey/register" => passkey::register_page,
    GET "/api/auth/passkey/passkey.js" => passkey::script,
    POST "/api/auth/passkey/register/options" => passkey::register_options,
    POST "/api/auth/passkey/register/finish" => passkey::register_finish,
    POST "/api/auth/passkey/options" => passkey::sign_in_options,
    POST "/api/auth/passkey/finish" => passkey::sign_in_finish,
    GET "/api/auth/passkey" => app_passkey::sign_in,
    POST "/api/auth/passkey" => auth::passkey_sign_in,
    GET "/api/auth/{provider}" => sign_in::start,
    POST "/api/auth/{provider}" => sign_in::send_link,
    // Before `/api/{db}/...`: `new` is a reserved database name.
    GET "/api/new/{db}" => new_db::available,
    POST "/api/new" => new_db::create,
    PUT "/api/new" => new_db::create_by_put,
    GET "/api/{db}" => usage::read,
    POST "/api/{db}/mcp" => mcp::post,
    GET "/api/{db}/mcp" => mcp::stream,
    GET "/.well-known/oauth-protected-resource/api/{db}/mcp" => mcp::protected_resource,
    GET "/api/{db}/passkey" => app_passkey::register_options,
    POST "/api/{db}/passkey" => app_passkey::register,
    GET "/api/{db}/changes" => changes::stream,
    POST "/api/{db}/changes/ticket" => changes::ticket,
    POST "/api/{db}/graphql" => graphql::post,
    GET "/api/{db}/graphql" => graphql::get,
    GET "/api/{db}/entity" => list::list,
    POST "/api/{db}/batch" => batch::batch,
    POST "/api/{db}/entity" => entity::create,
    GET "/api/{db}/entity/{id}" => entity::read,
    POST "/api/{db}/entity/{id}" => entity::add_values,
    DELETE "/api/{db}/entity/{id}" => entity::delete,
    GET "/api/{db}/entity/{id}/history" => entity::history,
    GET "/api/{db}/entity/{id}/aggregate" => entity::aggregate,
    POST "/api/{db}/entity/{id}/duplicate" => duplicate_activity::duplicate,
    POST "/api/{db}/entity/{id}/restore" => restore::restore,
    GET "/api/{db}/entity/{id}/activity" => duplicate_activity::activity,
    GET "/api/{db}/entity/{id}/deliveries" => webhooks::deliveries,
    GET "/api/{db}/property/{id}" => property::read,
    DELETE "/api/{db}/property/{id}" => property::delete,
    // Files: thumbnails, and the local storage backend's signed URLs.
    GET "/api/{db}/entity/{id}/thumbnail/{size}" => files::entity_thumbnail,
    GET "/api/{db}/property/{id}/thumbnail/{size}" => files::property_thumbnail,
    PUT "/storage/{key:.*}" => files::storage_put,
    GET "/storage/{key:.*}" => files::storage_get,
}

/// The OpenAPI document of [`endpoints`], built once.
pub fn document_json() -> &'static str {
    static JSON: OnceLock<String> = OnceLock::new();
    JSON.get_or_init(|| openapi::document_of(Operations::openapi()))
}

/// Registers [`endpoints`], and the document `GET /api/openapi.json` serves.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.app_data(web::Data::new(ServedDocument(document_json())));
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
