//! The OpenAPI 3.1 document (`GET /api/openapi.json`), generated from the
//! handlers' annotations, and the docs page rendering it (`GET /docs`).
//!
//! Handlers that build their JSON by hand are described by the schema types
//! here; they are never constructed, only read by the document.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use actix_web::http::header::ContentType;
use actix_web::{HttpResponse, web};
use serde::Serialize;
use serde_json::{Value as Json, json};
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, RefOr};
use utoipa::{Modify, OpenApi, ToSchema};

use super::{auth, entity, files, health, metrics, property, usage};
use crate::error::ApiError;

#[derive(OpenApi)]
#[openapi(
    info(title = "eds", description = "Entity Data Service: a multi-database store of typed, multi-valued entities. \
        Reads need no token (anonymous callers see public entities only); writes need an access token, \
        obtained by exchanging an API key at `GET /api/auth`."),
    paths(
        health::about,
        health::health,
        health::ready,
        document,
        docs_page,
        docs_asset,
        auth::authenticate,
        auth::refresh,
        usage::read,
        entity::list,
        metrics::read,
        entity::create,
        entity::read,
        entity::add_values,
        entity::delete,
        entity::history,
        entity::aggregate,
        files::entity_thumbnail,
        property::read,
        property::delete,
        files::property_thumbnail,
        files::storage_put,
        files::storage_get,
    ),
    components(schemas(
        ErrorBody,
        PropertyValue,
        Created,
        Upload,
        UploadHeaders,
        NewValue,
        Counter,
        Entity,
    )),
    modifiers(&Security, &RateLimited),
    tags(
        (name = "service", description = "Identity, liveness and this documentation"),
        (name = "auth", description = "Access tokens"),
        (name = "entities", description = "Entities: list and query, create, read, add values, delete, history"),
        (name = "properties", description = "Single property values"),
        (name = "files", description = "Thumbnails and the local storage backend's signed URLs"),
        (name = "usage", description = "Database usage"),
    )
)]
struct ApiDoc;

/// The document as served, built once.
pub fn document_json() -> &'static str {
    static JSON: OnceLock<String> = OnceLock::new();
    JSON.get_or_init(|| {
        ApiDoc::openapi()
            .to_pretty_json()
            .expect("the OpenAPI document serializes")
    })
}

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
pub async fn document() -> HttpResponse {
    HttpResponse::Ok()
        .content_type(ContentType::json())
        .body(document_json())
}

/// The docs page and the renderer's files, embedded so the binary serves
/// them offline (versions and licence in static/docs/README.md).
const DOCS_PAGE: &str = include_str!("../../static/docs/index.html");
const DOCS_ASSETS: [(&str, &str, &[u8]); 3] = [
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
        (status = 200, description = "The file, with its content type", content_type = "text/javascript", body = String,
         example = json!("window.onload = function () { ... };")),
        (status = 404, description = "No such file", body = ErrorBody),
    )
)]
pub async fn docs_asset(file: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let (_, content_type, bytes) = DOCS_ASSETS
        .iter()
        .find(|(name, _, _)| *name == file.as_str())
        .ok_or_else(super::not_found)?;
    Ok(HttpResponse::Ok()
        .content_type(*content_type)
        .insert_header(("Cache-Control", "public, max-age=3600"))
        .body(*bytes))
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
        let response = ResponseBuilder::new()
            .description("Too many requests from this address; retry after `Retry-After` seconds")
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name("ErrorBody"))))
                    .example(Some(
                        json!({"status": 429, "error": "rate_limited", "message": "Too many requests; retry in 12 s"}),
                    ))
                    .build(),
            )
            .build();
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

// Schemas of the bodies the handlers build as JSON.

/// Every error: the status, a stable snake_case code and a message (the
/// specification's exact text where it gives one).
#[derive(Serialize, ToSchema)]
#[schema(example = json!({"status": 400, "error": "invalid_regex", "message": "Invalid regex"}))]
pub struct ErrorBody {
    pub status: u16,
    pub error: String,
    pub message: String,
}

/// `GET /`.
#[derive(Serialize, ToSchema)]
pub struct About {
    pub name: String,
    pub version: String,
}

/// `GET /health`.
#[derive(Serialize, ToSchema)]
pub struct Health {
    /// Always `ok`.
    pub status: String,
}

/// `GET /ready`: which dependency answers.
#[derive(Serialize, ToSchema)]
pub struct Ready {
    pub database: bool,
    pub storage: bool,
}

/// `GET /api/auth` and `GET /api/auth/refresh`.
#[derive(Serialize, ToSchema)]
pub struct TokenResponse {
    /// The databases the token reaches.
    pub accounts: Vec<Account>,
    pub user: TokenUser,
    /// The access token (JWT).
    pub token: String,
    /// When the token expires (ISO 8601).
    pub expires: String,
}

#[derive(Serialize, ToSchema)]
pub struct Account {
    /// The database name.
    #[serde(rename = "_id")]
    pub id: String,
    /// The database name.
    pub name: String,
    pub user: AccountUser,
}

/// The caller's person in one database.
#[derive(Serialize, ToSchema)]
pub struct AccountUser {
    #[serde(rename = "_id")]
    pub id: String,
    pub name: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct TokenUser {
    /// The person's name in the first database (by name) that has one.
    pub name: Option<String>,
}

/// One property value. Which value fields it has depends on the property's
/// type; `type` is present outside entity documents (where the property name
/// is the key). Fields a value lacks are absent, not null.
#[derive(Serialize, ToSchema)]
pub struct PropertyValue {
    /// The value's id (24 lowercase hex characters).
    #[serde(rename = "_id")]
    pub id: String,
    /// The property name.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub property: Option<String>,
    /// `string`, `text` and `counter` values; for a `reference`, the referenced entity's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub string: Option<String>,
    /// `number` values; for a `counter`, its numeric part.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub number: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub boolean: Option<bool>,
    /// `date` values, as `YYYY-MM-DDT00:00:00.000Z`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub date: Option<String>,
    /// `datetime` values (RFC 3339 UTC with milliseconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub datetime: Option<String>,
    /// `reference` values: the referenced entity's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub reference: Option<String>,
    /// For a `reference`: the referenced entity's type name.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub entity_type: Option<String>,
    /// For a `reference`: the property name.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub property_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub filename: Option<String>,
    /// Bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub filesize: Option<u64>,
    /// MIME type.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub filetype: Option<String>,
    /// Two lowercase letters, on multilingual properties.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub language: Option<String>,
    /// Only from `GET /api/{db}/property/{id}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub created: Option<Created>,
    /// File values from `GET /api/{db}/property/{id}`: a download URL valid 60 seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub url: Option<String>,
    /// File values just created: where and how to upload the content.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub upload: Option<Upload>,
}

#[derive(Serialize, ToSchema)]
pub struct Created {
    /// ISO 8601 timestamp.
    pub at: String,
    /// The creating person's id.
    pub by: Option<String>,
}

/// A signed upload: PUT the content to `url` within 60 seconds with exactly these headers.
#[derive(Serialize, ToSchema)]
pub struct Upload {
    pub url: String,
    /// Always `PUT`.
    pub method: String,
    pub headers: UploadHeaders,
}

#[derive(Serialize, ToSchema)]
pub struct UploadHeaders {
    /// Always `private`.
    #[serde(rename = "ACL")]
    pub acl: String,
    /// `inline;filename="<filename>"`.
    #[serde(rename = "Content-Disposition")]
    pub content_disposition: String,
    /// The value's `filesize`.
    #[serde(rename = "Content-Length")]
    pub content_length: u64,
    /// The value's `filetype`.
    #[serde(rename = "Content-Type")]
    pub content_type: String,
}

/// One value to write: `type` plus the one value field the property's type
/// takes (`filename`, `filesize` and `filetype` together for files), or
/// `counter` in place of a value.
#[derive(Serialize, ToSchema)]
pub struct NewValue {
    /// The property name.
    #[serde(rename = "type")]
    pub property: String,
    /// Overwrites this live value of the same entity and property (soft-deleted; the new value gets a new id).
    #[serde(rename = "_id", skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub string: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub number: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub boolean: Option<bool>,
    /// `YYYY-MM-DD`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub date: Option<String>,
    /// ISO 8601.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub datetime: Option<String>,
    /// An entity id.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub reference: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub filename: Option<String>,
    /// Bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub filesize: Option<u64>,
    /// MIME type.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub filetype: Option<String>,
    /// Exactly two lowercase letters, for multilingual properties.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub language: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub counter: Option<Counter>,
}

/// The next number of the property name's sequence across the database:
/// `true` steps by 1, a number by that step (`INV-41` → `INV-42`).
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum Counter {
    Next(bool),
    Step(f64),
}

/// The body of a write: an array of values, or one value alone.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum WriteBody {
    Values(Vec<NewValue>),
    Value(Box<NewValue>),
}

/// An entity as the caller may see it: `_id`, and each visible property's
/// values under its name.
#[derive(Serialize, ToSchema)]
pub struct Entity {
    #[serde(rename = "_id")]
    pub id: String,
    #[serde(flatten)]
    pub properties: BTreeMap<String, Vec<PropertyValue>>,
}

/// `GET /api/{db}/entity`. A grouped query's rows have no `_id` but `_count`,
/// and `count` is the number of groups.
#[derive(Serialize, ToSchema)]
pub struct EntityList {
    pub entities: Vec<ListRow>,
    /// Every match, regardless of `limit` and `skip`.
    pub count: u64,
    /// The effective limit.
    pub limit: i64,
    pub skip: i64,
}

/// A row of a list: an entity, or with `group` one row per group.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum ListRow {
    Entity(Entity),
    Group(GroupRow),
}

/// A group: the `props` values of its first entity (lowest `_id`) and its size.
#[derive(Serialize, ToSchema)]
pub struct GroupRow {
    /// Entities in the group.
    #[serde(rename = "_count")]
    pub count: u64,
    #[serde(flatten)]
    pub properties: BTreeMap<String, Vec<PropertyValue>>,
}

/// `GET /api/{db}/entity/{id}`.
#[derive(Serialize, ToSchema)]
pub struct EntityRead {
    pub entity: Entity,
}

/// A write's result: the entity and the values created (file values with `upload`).
#[derive(Serialize, ToSchema)]
pub struct Written {
    #[serde(rename = "_id")]
    pub id: String,
    pub properties: Vec<PropertyValue>,
}

#[derive(Serialize, ToSchema)]
pub struct Deleted {
    /// Always `true`.
    pub deleted: bool,
}

/// `GET /api/{db}/entity/{id}/aggregate`.
#[derive(Serialize, ToSchema)]
pub struct Aggregated {
    #[serde(rename = "_id")]
    pub id: String,
    /// Entities whose formulas were re-computed.
    pub queued: u64,
}

/// `GET /api/{db}/entity/{id}/history`, newest first.
#[derive(Serialize, ToSchema)]
pub struct History {
    pub changes: Vec<Change>,
    /// All changes, regardless of `limit` and `skip`.
    pub count: u64,
}

#[derive(Serialize, ToSchema)]
pub struct Change {
    /// The property name.
    #[serde(rename = "type")]
    pub property: String,
    pub at: String,
    /// The person who made the change.
    pub by: Option<String>,
    /// The value before (absent for an addition).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub old: Option<PropertyValue>,
    /// The value after (absent for a deletion).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub new: Option<PropertyValue>,
}

/// A file's bytes, as the storage routes take and give them.
pub struct FileContent;

impl utoipa::PartialSchema for FileContent {
    fn schema() -> RefOr<utoipa::openapi::schema::Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .content_media_type("application/octet-stream")
            .into()
    }
}

impl ToSchema for FileContent {}

/// A signed URL valid 60 seconds.
#[derive(Serialize, ToSchema)]
pub struct SignedUrl {
    pub url: String,
}

/// `GET /api/{db}/entity`: the query language, filters first.
pub const ENTITY_LIST_DESCRIPTION: &str = r#"Lists the entities the caller may see (anonymous callers: public entities only).

**Filters** take the form `<property>.<field>[.<operator>]=<value>`, for example
`_type.string=book`, `price.number.gt=10`, `title.string.regex=/^d/i`, `photo.filetype=image/jpeg`.
`<field>` is the value field: `string` (types `string`, `text`, `counter`; for a `reference` the
referenced entity's name), `number` (also a counter's numeric part), `boolean`, `date`, `datetime`,
`reference`, `filename`, `filesize`, `filetype`, `language`. Operators:

| field | operators |
|---|---|
| `string` (and `filename`, `filetype`, `language`) | (none: exact), `regex`, `in`, `exists`, `gt`, `gte`, `lt`, `lte`, `ne` |
| `reference` | (none), `in`, `exists` |
| `number` | (none), `gt`, `gte`, `lt`, `lte`, `ne`, `in`, `exists` |
| `boolean` | (none), `in`, `exists` |
| `date` (`YYYY-MM-DD`), `datetime` (ISO 8601) | (none), `gt`, `gte`, `lt`, `lte`, `in`, `exists` |
| `filesize` | (none), `gt`, `gte`, `lt`, `lte`, `in`, `exists` |

`in` takes a comma-separated list; `exists` takes `true` (anything else means `false`); `regex`
takes `/pattern/flags` (flags `i`, `m`, `s`; `x` or an invalid pattern gives 400 `Invalid regex`);
`date` and `datetime` also take Unix milliseconds; for `boolean` anything but `true` means `false`;
an unknown operator matches exactly; `ne` also matches entities without the property; an invalid id
in a `reference` filter gives 400 `Invalid ID`. `_type.string` matches the type's `name`. Filters
are joined with AND."#;

// Examples, one per operation.

pub fn entity_example() -> Json {
    json!({
        "_id": "6571f3a4c2b9e8d7f6a5b4c3",
        "_type": [{"_id": "6571f3a4c2b9e8d7f6a5b4c4", "reference": "6571f3a4c2b9e8d7f6a5b401",
                   "string": "book", "entity_type": "entity", "property_type": "_type"}],
        "title": [{"_id": "6571f3a4c2b9e8d7f6a5b4c5", "string": "Dune"}],
        "photo": [{"_id": "6571f3a4c2b9e8d7f6a5b4c6", "filename": "cover.jpg", "filesize": 48213, "filetype": "image/jpeg"}],
    })
}

pub fn entity_list_example() -> Json {
    json!({"entities": [entity_example()], "count": 1, "limit": 100, "skip": 0})
}

pub fn entity_read_example() -> Json {
    json!({"entity": entity_example()})
}

pub fn write_body_example() -> Json {
    json!([
        {"type": "_type", "reference": "6571f3a4c2b9e8d7f6a5b401"},
        {"type": "title", "string": "Dune"},
        {"type": "no", "counter": true},
        {"type": "photo", "filename": "cover.jpg", "filesize": 48213, "filetype": "image/jpeg"},
    ])
}

pub fn written_example() -> Json {
    json!({
        "_id": "6571f3a4c2b9e8d7f6a5b4c3",
        "properties": [
            {"_id": "6571f3a4c2b9e8d7f6a5b4c4", "type": "_type", "reference": "6571f3a4c2b9e8d7f6a5b401"},
            {"_id": "6571f3a4c2b9e8d7f6a5b4c5", "type": "title", "string": "Dune"},
            {"_id": "6571f3a4c2b9e8d7f6a5b4c7", "type": "no", "string": "42", "number": 42},
            {"_id": "6571f3a4c2b9e8d7f6a5b4c6", "type": "photo", "filename": "cover.jpg", "filesize": 48213,
             "filetype": "image/jpeg", "upload": {
                "url": "http://127.0.0.1:8080/storage/demo/6571f3a4c2b9e8d7f6a5b4c3/6571f3a4c2b9e8d7f6a5b4c6?expires=1795000000&type=image%2Fjpeg&length=48213&signature=...",
                "method": "PUT",
                "headers": {"ACL": "private", "Content-Disposition": "inline;filename=\"cover.jpg\"",
                            "Content-Length": 48213, "Content-Type": "image/jpeg"}}},
        ],
    })
}

pub fn property_example() -> Json {
    json!({
        "_id": "6571f3a4c2b9e8d7f6a5b4c6", "type": "photo", "filename": "cover.jpg", "filesize": 48213,
        "filetype": "image/jpeg", "created": {"at": "2026-11-21T10:00:00.000Z", "by": "6571f3a4c2b9e8d7f6a5b402"},
        "url": "http://127.0.0.1:8080/storage/demo/6571f3a4c2b9e8d7f6a5b4c3/6571f3a4c2b9e8d7f6a5b4c6?expires=1795000000&signature=...",
    })
}

pub fn history_example() -> Json {
    json!({
        "changes": [{"type": "title", "at": "2026-11-21T10:05:00.000Z", "by": "6571f3a4c2b9e8d7f6a5b402",
                     "old": {"_id": "6571f3a4c2b9e8d7f6a5b4c5", "string": "Dune"},
                     "new": {"_id": "6571f3a4c2b9e8d7f6a5b4c8", "string": "Dune Messiah"}}],
        "count": 1,
    })
}

pub fn token_example() -> Json {
    json!({
        "accounts": [{"_id": "demo", "name": "demo", "user": {"_id": "6571f3a4c2b9e8d7f6a5b402", "name": "Demo Owner"}}],
        "user": {"name": "Demo Owner"},
        "token": "eyJhbGciOiJIUzI1NiJ9.eyJ1c2UiOiJhY2Nlc3MifQ.c2lnbmF0dXJl",
        "expires": "2026-11-21T22:00:00.000Z",
    })
}

pub fn thumbnail_example() -> Json {
    json!({"url": "http://127.0.0.1:8080/storage/demo/6571f3a4c2b9e8d7f6a5b4c3/6571f3a4c2b9e8d7f6a5b4c6/thumbnail/200?expires=1795000000&type=image%2Fjpeg&signature=..."})
}
