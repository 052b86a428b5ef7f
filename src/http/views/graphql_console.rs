//! The GraphQL query console (`GET /api/{db}/graphql` asked for HTML):
//! GraphiQL, vendored and embedded so the binary serves it offline
//! (versions, licences and how to rebuild in static/graphiql/README.md),
//! with its files at `GET /graphql-console/{file}`.

use actix_web::http::header::{self, ContentType};
use actix_web::{HttpResponse, web};

use super::embedded::{self, EmbeddedFile};
use super::pages::escape;
use crate::error::{ApiError, ErrorBody};

const PAGE: &str = include_str!("../../../static/graphiql/console.html");

/// Scripts and styles from this server only. GraphiQL's dialogs and menus
/// add `<style>` elements as they open (to lock scrolling), hence
/// `'unsafe-inline'` for styles, never for scripts; its fonts are `data:`
/// URLs in its style sheet; queries go to this server alone.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; font-src 'self' data:; \
     form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";
const ASSETS: [EmbeddedFile; 6] = [
    (
        "react.production.min.js",
        JS,
        include_bytes!("../../../static/graphiql/react.production.min.js"),
    ),
    (
        "react-dom.production.min.js",
        JS,
        include_bytes!("../../../static/graphiql/react-dom.production.min.js"),
    ),
    (
        "graphiql.min.js",
        JS,
        include_bytes!("../../../static/graphiql/graphiql.min.js"),
    ),
    (
        "graphiql.min.css",
        CSS,
        include_bytes!("../../../static/graphiql/graphiql.min.css"),
    ),
    ("init.js", JS, include_bytes!("../../../static/graphiql/init.js")),
    (
        "console.css",
        CSS,
        include_bytes!("../../../static/graphiql/console.css"),
    ),
];

/// The console page of `db`, which posts its queries back to the URL it was
/// served at. `db` is shown escaped; the scripts never read it.
pub fn page(db: &str) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(ContentType::html())
        .insert_header((header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "same-origin"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(PAGE.replace("{database}", &escape(db)))
}

/// `GET /graphql-console/{file}`: a file of the GraphQL console.
#[utoipa::path(
    get,
    path = "/graphql-console/{file}",
    operation_id = "graphql_console_file",
    tag = "service",
    summary = "A file of the GraphQL console page",
    description = "The scripts and style sheets of the query console that `GET /api/{db}/graphql` serves to a browser \
        (`Accept: text/html`): GraphiQL and React, served by eds itself, so the page makes no outside requests.",
    params(("file" = String, Path,
        description = "`graphiql.min.js`, `graphiql.min.css`, `react.production.min.js`, `react-dom.production.min.js`, `init.js` or `console.css`",
        example = "init.js")),
    responses(
        (status = 200, description = "The file, with its content type (script or style sheet)",
         content((String = "text/javascript", example = json!("(function () { ... })();")), (String = "text/css"))),
        (status = 404, description = "No such file", body = ErrorBody),
    )
)]
pub async fn asset(file: web::Path<String>) -> Result<HttpResponse, ApiError> {
    embedded::serve(&ASSETS, &file)
}
