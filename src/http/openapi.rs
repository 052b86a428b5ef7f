//! The OpenAPI 3.1 document (`GET /api/openapi.json`), generated from the
//! handlers' annotations and the types they answer with (`super::views`),
//! and the docs page rendering it (`GET /docs`).

use actix_web::http::header::ContentType;
use actix_web::{HttpResponse, web};
use serde_json::json;
use utoipa::openapi::RefOr;
use utoipa::openapi::external_docs::ExternalDocs;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::views::embedded::{self, EmbeddedFile};
use super::views::responses::error_response;
use crate::auth::scope::{WRITE_CHALLENGE, write_refused};
use crate::error::{ApiError, ErrorBody};
use crate::service::bodies::entities::Entity;
use crate::service::bodies::values::{Created, PropertyValue, Upload, UploadHeaders};
use crate::service::bodies::writes::{Counter, DateInput, NewValue};

#[derive(OpenApi)]
#[openapi(
    info(title = "eds", description = "Entity Data Service: a multi-database store of typed, multi-valued entities. \
        Reads need no token (anonymous callers see public entities only); writes need an access token, \
        obtained by exchanging an API key, or the session token of a sign-in (`GET /api/auth/{provider}`), at `GET /api/auth`. \
        A trailing `/` on an `/api/...` path is ignored."),
    components(schemas(
        ErrorBody,
        PropertyValue,
        Created,
        Upload,
        UploadHeaders,
        NewValue,
        Counter,
        DateInput,
        Entity,
    )),
    tags(
        (name = "service", description = "Identity, liveness and this documentation"),
        (name = "auth", description = "Signing in and access tokens"),
        (name = "entities", description = "Entities: list and query, create, read, add values, delete, history, duplicate, a person's activity"),
        (name = "properties", description = "Single property values"),
        (name = "files", description = "Thumbnails and the local storage backend's signed URLs"),
        (name = "usage", description = "Database usage"),
        (name = "databases", description = "New databases"),
        (name = "oauth", description = "The OAuth 2.1 authorization server, at {api_url}: registration, authorize, token"),
        (name = "mcp", description = "The Model Context Protocol endpoint for AI clients"),
        (name = "graphql", description = "GraphQL per database: a schema generated from the caller's entity types"),
    )
)]
struct ApiDoc;

/// The document as served: `operations` (every route's, from the endpoint
/// table) under the service's description, schemas and tags, with the
/// security schemes and the responses every route shares.
pub fn document_of(operations: utoipa::openapi::OpenApi) -> String {
    let mut document = ApiDoc::openapi();
    document.merge(operations);
    for modifier in [
        &Security as &dyn Modify,
        &RateLimited,
        &Challenged,
        &ScopeRefused,
        &GuidePages,
    ] {
        modifier.modify(&mut document);
    }
    document.to_pretty_json().expect("the OpenAPI document serializes")
}

/// The document's JSON, which the router registers for [`document`] to serve.
pub struct ServedDocument(pub &'static str);

/// `GET /api/openapi.json`.
#[utoipa::path(
    get,
    path = "/api/openapi.json",
    operation_id = "openapi_document",
    tag = "service",
    summary = "This OpenAPI 3.1 document",
    responses(
        (status = 200, description = "The OpenAPI document of every endpoint", body = Object,
         example = json!({"openapi": "3.1.0", "info": {"title": "eds", "version": "0.1.0"}, "paths": {}})),
    )
)]
pub async fn document(served: web::Data<ServedDocument>) -> HttpResponse {
    HttpResponse::Ok().content_type(ContentType::json()).body(served.0)
}

/// The docs page and the renderer's files, embedded so the binary serves
/// them offline (versions and licence in static/docs/README.md).
const DOCS_PAGE: &str = include_str!("../../static/docs/index.html");
const DOCS_ASSETS: [EmbeddedFile; 3] = [
    (
        "swagger-ui-bundle.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../static/docs/swagger-ui-bundle.js"),
    ),
    (
        "swagger-ui.css",
        "text/css; charset=utf-8",
        include_bytes!("../../static/docs/swagger-ui.css"),
    ),
    (
        "init.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../static/docs/init.js"),
    ),
];

/// `GET /docs`: the API documentation, rendered from `/api/openapi.json`.
#[utoipa::path(
    get,
    path = "/docs",
    operation_id = "docs_page",
    tag = "service",
    summary = "API documentation page",
    description = "An HTML page that renders `/api/openapi.json` (Swagger UI, served by eds itself: no outside requests).",
    responses(
        (status = 200, description = "The documentation page", content_type = "text/html", body = String,
         example = json!("<!DOCTYPE html><html lang=\"en\">...</html>")),
    )
)]
pub async fn docs_page() -> HttpResponse {
    HttpResponse::Ok().content_type(ContentType::html()).body(DOCS_PAGE)
}

/// `GET /docs/{file}`: a file of the docs page's renderer.
#[utoipa::path(
    get,
    path = "/docs/{file}",
    operation_id = "docs_file",
    tag = "service",
    summary = "A file of the documentation page",
    params(("file" = String, Path, description = "`swagger-ui-bundle.js`, `swagger-ui.css` or `init.js`", example = "swagger-ui.css")),
    responses(
        (status = 200, description = "The file, with its content type (script or style sheet)",
         content((String = "text/javascript", example = json!("window.onload = function () { ... };")), (String = "text/css"))),
        (status = 404, description = "No such file", body = ErrorBody),
    )
)]
pub async fn docs_asset(file: web::Path<String>) -> Result<HttpResponse, ApiError> {
    embedded::serve(&DOCS_ASSETS, &file)
}

/// The guide's page for each tag of the OpenAPI document, with its title:
/// the docs page links each group of routes to it.
const TAG_PAGES: [(&str, &str, &str); 10] = [
    ("service", "api/overview.html", "The API in brief"),
    ("auth", "api/sign-in.html", "Signing in"),
    (
        "entities",
        "api/writing.html",
        "Writing (the query language, batches and restore beside it)",
    ),
    ("properties", "api/writing.html", "Writing"),
    ("files", "api/files.html", "Files and thumbnails"),
    ("usage", "api/overview.html", "The API in brief"),
    ("databases", "api/sign-in.html", "Signing in (new databases)"),
    ("oauth", "api/oauth.html", "OAuth 2.1"),
    ("mcp", "api/mcp.html", "MCP for AI clients"),
    ("graphql", "api/graphql.html", "GraphQL"),
];

/// Each tag links to its page of the guide the server serves at `/guide/`.
struct GuidePages;

impl Modify for GuidePages {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for tag in openapi.tags.iter_mut().flatten() {
            if let Some((_, page, title)) = TAG_PAGES.iter().find(|(name, _, _)| *name == tag.name) {
                let mut docs = ExternalDocs::new(format!("/guide/{page}"));
                docs.description = Some(format!("The guide: {title}"));
                tag.external_docs = Some(docs);
            }
        }
    }
}

/// Bearer JWTs for the API; API keys go only to `GET /api/auth`.
struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "jwt",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some(
                        "An access token (HS256 JWT, 12 hours, bound to the client address) \
                         from `GET /api/auth` or `GET /api/auth/refresh`. Refused (401 `Invalid token`) \
                         within `auth.revocation_check_seconds` once the API key or the person it was \
                         issued for is deleted.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "apiKey",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "An API key (32 characters, created by writing `service_api_key`), sent as \
                         `Authorization: Bearer <key>` to `GET /api/auth` only, which exchanges it for a JWT.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "metricsToken",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("`metrics.token`, for `GET /metrics` only, when it is set."))
                    .build(),
            ),
        );
    }
}

/// Every route is rate limited per client address (`limits.*`).
struct RateLimited;

impl Modify for RateLimited {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let response = error_response(
            "Too many requests from this address; retry after `Retry-After` seconds",
            Some(json!({"status": 429, "error": "rate_limited", "message": "Too many requests; retry in 12 s"})),
        );
        for item in openapi.paths.paths.values_mut() {
            let operations = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.options,
                &mut item.head,
                &mut item.patch,
                &mut item.trace,
            ];
            for operation in operations.into_iter().flatten() {
                operation
                    .responses
                    .responses
                    .insert("429".to_owned(), RefOr::T(response.clone()));
            }
        }
    }
}

/// Every 401 under `/api/` carries a `WWW-Authenticate` challenge (the
/// routes that document their own, MCP's, keep it).
struct Challenged;

impl Modify for Challenged {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let header = HeaderBuilder::new()
            .description(Some(
                "`Bearer`, or `Bearer error=\"invalid_token\"` when a token was sent".to_owned(),
            ))
            .build();
        for (path, item) in openapi.paths.paths.iter_mut() {
            if !path.starts_with("/api/") {
                continue;
            }
            let operations = [&mut item.get, &mut item.put, &mut item.post, &mut item.delete];
            for operation in operations.into_iter().flatten() {
                if let Some(RefOr::T(response)) = operation.responses.responses.get_mut("401") {
                    response
                        .headers
                        .entry("WWW-Authenticate".to_owned())
                        .or_insert_with(|| header.clone());
                }
            }
        }
    }
}

/// The operations that write, which a token granted `read` only is refused.
const WRITES: [&str; 12] = [
    "create_entity",
    "add_values",
    "delete_entity",
    "aggregate_entity",
    "duplicate_entity",
    "delete_property",
    "create_database",
    "create_database_put",
    "passkey_app_register_options",
    "passkey_app_register",
    "passkey_register_options",
    "passkey_register_finish",
];

/// Every write documents its refusal of a `read`-only token (its 403, with
/// the step-up challenge).
struct ScopeRefused;

impl Modify for ScopeRefused {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let refusal =
            "`insufficient_scope`: an OAuth token granted the `read` scope only (before anything is looked up)";
        let header = HeaderBuilder::new()
            .description(Some(format!("`{WRITE_CHALLENGE}` with `insufficient_scope`")))
            .build();
        for item in openapi.paths.paths.values_mut() {
            let operations = [&mut item.get, &mut item.put, &mut item.post, &mut item.delete];
            for operation in operations.into_iter().flatten() {
                if !operation.operation_id.as_deref().is_some_and(|id| WRITES.contains(&id)) {
                    continue;
                }
                let example = serde_json::to_value(write_refused().body()).ok();
                let forbidden = operation
                    .responses
                    .responses
                    .entry("403".to_owned())
                    .or_insert_with(|| RefOr::T(error_response(refusal, example)));
                if let RefOr::T(response) = forbidden {
                    if !response.description.contains(refusal) {
                        response.description = format!("{}; or {refusal}", response.description);
                    }
                    response.headers.insert("WWW-Authenticate".to_owned(), header.clone());
                }
            }
        }
    }
}
