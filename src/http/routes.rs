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

/// The prefix of a database's own routes, served from one scope.
const DATABASE_SCOPE: &str = "/api/{db}";

/// Registers [`endpoints`], and the document `GET /api/openapi.json` serves.
///
/// The router tries routes in order, running a pattern's regex for each
/// route it tries: a request to a database's own routes (nearly all of
/// them) went through some twenty of those. Those routes are served from
/// one scope, registered where the first of them stands; within it, the
/// static rest of a path is compared as text. A path the scope takes and
/// none of its routes serve gets the application's own answer.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.app_data(web::Data::new(ServedDocument(document_json())));
    let (before, scoped, after) = split_at_database_scope(endpoints());
    for endpoint in before {
        cfg.route(endpoint.path, endpoint.route);
    }
    let scope = scoped
        .into_iter()
        .fold(web::scope(DATABASE_SCOPE), |scope, (rest, route)| {
            scope.route(rest, route)
        });
    cfg.service(scope);
    for endpoint in after {
        cfg.route(endpoint.path, endpoint.route);
    }
}

/// The endpoints before the first of a database's own routes, those routes
/// (each with its path within [`DATABASE_SCOPE`]), and the other endpoints
/// after them. None of those after could take a path of the scope's, which
/// would then never reach them.
fn split_at_database_scope(endpoints: Vec<Endpoint>) -> (Vec<Endpoint>, Vec<(&'static str, Route)>, Vec<Endpoint>) {
    let mut before = Vec::new();
    let mut scoped = Vec::new();
    let mut after = Vec::new();
    for endpoint in endpoints {
        match endpoint
            .path
            .strip_prefix(DATABASE_SCOPE)
            .filter(|rest| rest.starts_with('/'))
        {
            Some(rest) => scoped.push((rest, endpoint.route)),
            None if scoped.is_empty() => before.push(endpoint),
            None => {
                assert!(
                    !endpoint.path.starts_with("/api/"),
                    "{} would be hidden behind the database scope",
                    endpoint.path
                );
                after.push(endpoint);
            }
        }
    }
    (before, scoped, after)
}

/// The database an API path names (`/api/{db}/...`), if any.
pub fn database_of_path(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("/api/")?;
    let db = rest.split('/').next()?;
    (databases::name_problem(db).is_none()).then_some(db)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_s_own_routes_are_served_from_one_scope_in_their_order() {
        let all: Vec<&str> = endpoints().iter().map(|endpoint| endpoint.path).collect();
        let (before, scoped, after) = split_at_database_scope(endpoints());
        assert_eq!(before.len() + scoped.len() + after.len(), all.len());
        let scoped: Vec<String> = scoped.iter().map(|(rest, _)| format!("/api/{{db}}{rest}")).collect();
        let expected: Vec<&str> = all
            .iter()
            .copied()
            .filter(|path| path.starts_with("/api/{db}/"))
            .collect();
        assert_eq!(scoped, expected, "every database route, in order");
        assert!(scoped.contains(&"/api/{db}/entity/{id}".to_owned()));
        assert!(
            before.iter().any(|endpoint| endpoint.path == "/api/{db}"),
            "the usage route stays out of it"
        );
        assert!(after.iter().all(|endpoint| !endpoint.path.starts_with("/api/")));
    }
}
