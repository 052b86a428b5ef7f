//! `GET /api/new/{db}` (is a name free?) and `POST /api/new` (a database for
//! the signed-in login, which becomes its owner person).

use actix_web::{HttpResponse, web};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::views::responses::{InvalidToken, ReadUnavailable};
use super::{AppState, Caller};
use crate::db::databases;
use crate::error::{ApiError, ErrorBody};

#[derive(Serialize, ToSchema)]
pub struct Availability {
    pub available: bool,
    /// Why not: `format`, `reserved` or `taken`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
}

#[derive(Deserialize, ToSchema)]
pub struct NewDatabase {
    /// The name: `^[a-z][a-z0-9_]{3,31}$`, not reserved, not taken.
    database: String,
}

#[derive(Serialize, ToSchema)]
pub struct CreatedDatabase {
    db: String,
}

#[utoipa::path(
    get, path = "/api/new/{db}", operation_id = "database_name_available", tag = "databases", summary = "Is a database name free",
    params(("db" = String, Path, description = "The name to check", example = "my_books")),
    responses(
        (status = 200, description = "Whether the name can be used, and if not why", body = Availability, example = json!({"available": false, "reason": "taken"})),
        (status = 503, response = inline(ReadUnavailable)),
    )
)]
pub async fn available(state: web::Data<AppState>, db: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let reason = match databases::name_problem(&db) {
        Some(problem) => Some(problem),
        None => {
            let mut conn = state.pool.get().await?;
            databases::exists(&mut conn, &db).await?.then_some("taken")
        }
    };
    Ok(HttpResponse::Ok().json(Availability {
        available: reason.is_none(),
        reason,
    }))
}

#[utoipa::path(
    post, path = "/api/new", operation_id = "create_database", tag = "databases", summary = "Create a database",
    description = "With the access token of a provider login (not an API key's): creates the database with its system types, the login as its owner person (with the provider's name and e-mail). The next `GET /api/auth/refresh` lists it. A login creates at most `limits.new_databases_per_day` databases a day.",
    security(("jwt" = [])),
    request_body(content = NewDatabase, example = json!({"database": "my_books"})),
    responses(
        (status = 201, description = "Created", body = CreatedDatabase, example = json!({"db": "my_books"})),
        (status = 400, description = "A malformed body, or a name that is malformed or reserved (`invalid_database_name`)", body = ErrorBody),
        (status = 401, response = inline(InvalidToken)),
        (status = 403, description = "The token is an API key's, not a signed-in person's", body = ErrorBody),
        (status = 409, description = "The name is taken", body = ErrorBody),
        (status = 429, description = "The login created its databases for today", body = ErrorBody),
        (status = 503, response = inline(ReadUnavailable)),
    )
)]
pub async fn create(
    state: web::Data<AppState>,
    caller: Caller,
    body: web::Json<NewDatabase>,
) -> Result<HttpResponse, ApiError> {
    caller.require_write()?;
    let claims = caller.claims.ok_or_else(ApiError::token_required)?;
    let login = claims
        .login()
        .ok_or_else(|| ApiError::forbidden("Only a person signed in with a provider can create a database"))?;
    let name = body.into_inner().database;
    databases::create_for_login(
        &state.pool,
        &name,
        &login,
        state.new_databases_per_day,
        state.clock.now(),
    )
    .await?;
    Ok(HttpResponse::Created().json(CreatedDatabase { db: name }))
}

#[utoipa::path(
    put, path = "/api/new", operation_id = "create_database_put", tag = "databases", summary = "Create a database (as the original's clients send it)",
    description = "The same as `POST /api/new`: the original's web app creates databases with `PUT`.",
    security(("jwt" = [])),
    request_body(content = NewDatabase, example = json!({"database": "my_books"})),
    responses(
        (status = 201, description = "Created", body = CreatedDatabase, example = json!({"db": "my_books"})),
        (status = 400, description = "A malformed body, or a name that is malformed or reserved (`invalid_database_name`)", body = ErrorBody),
        (status = 401, response = inline(InvalidToken)),
        (status = 403, description = "The token is an API key's, not a signed-in person's", body = ErrorBody),
        (status = 409, description = "The name is taken", body = ErrorBody),
        (status = 429, description = "The login created its databases for today", body = ErrorBody),
        (status = 503, response = inline(ReadUnavailable)),
    )
)]
pub async fn create_by_put(
    state: web::Data<AppState>,
    caller: Caller,
    body: web::Json<NewDatabase>,
) -> Result<HttpResponse, ApiError> {
    create(state, caller, body).await
}
