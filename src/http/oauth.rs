//! The OAuth 2.1 authorization server, at `{api_url}`: metadata (RFC 8414),
//! dynamic registration (RFC 7591), authorize (code + PKCE S256, one
//! database per authorization, RFC 8707 resources), the sign-in's return,
//! and the token endpoint. Errors at the token and registration endpoints
//! are the JSON error body with `error` = the RFC code and
//! `error_description`; authorize sends every error it may back to the
//! client's redirect URI, and shows the rest to the person.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;

use super::views::oauth::{Registered, Registration, ServerMetadata, TokenAnswer, TokenForm, oauth_error};
use super::views::pages;
use super::{AppState, client_ip};
use crate::auth::login::PROVIDERS;
use crate::auth::oauth::{self, ACCESS_TOKEN_SECONDS};
use crate::error::{ApiError, ErrorBody, ErrorCode};
use crate::sign_in::oauth::{Authorization, Redemption};
use crate::sign_in::{Lang, accounts};

#[utoipa::path(
    get, path = "/.well-known/oauth-authorization-server", operation_id = "oauth_metadata", tag = "oauth", summary = "Authorization server metadata (RFC 8414)",
    description = "At `{api_url}` (`http.api_url`, else `http.public_url`); not under `/api`, since discovery documents sit at the issuer's root.",
    responses((status = 200, description = "The metadata", body = ServerMetadata))
)]
pub async fn metadata(state: web::Data<AppState>) -> HttpResponse {
    let issuer = state.sign_in.api_url.clone();
    HttpResponse::Ok().json(ServerMetadata {
        authorization_endpoint: format!("{issuer}/auth/authorize"),
        token_endpoint: format!("{issuer}/auth/token"),
        registration_endpoint: format!("{issuer}/auth/register"),
        issuer,
        response_types_supported: ["code"],
        grant_types_supported: ["authorization_code"],
        code_challenge_methods_supported: ["S256"],
        token_endpoint_auth_methods_supported: ["none"],
    })
}

#[utoipa::path(
    post, path = "/auth/register", operation_id = "oauth_register", tag = "oauth", summary = "Register a client (RFC 7591)",
    description = "No form, no secret: the answer's `client_id` embeds the redirect URIs, is signed, and is valid one year.",
    request_body = Registration,
    responses(
        (status = 201, description = "Registered", body = Registered),
        (status = 400, description = "`invalid_redirect_uri` (not 1 to 10 absolute URIs) or `invalid_client_metadata` (a malformed body)", body = ErrorBody),
    )
)]
pub async fn register(state: web::Data<AppState>, body: web::Bytes) -> HttpResponse {
    let registration: Registration = match serde_json::from_slice(&body) {
        Ok(registration) => registration,
        Err(error) => {
            let error = ApiError::new(
                ErrorCode::InvalidClientMetadata,
                format!("The registration is not {{client_name?, redirect_uris}}: {error}"),
            );
            return oauth_error(&error);
        }
    };
    let registered = oauth::register(
        &state.jwt,
        registration.client_name.as_deref(),
        registration.redirect_uris,
        state.clock.now(),
    );
    match registered {
        Ok((client_id, client)) => HttpResponse::Created()
            .insert_header(("Cache-Control", "no-store"))
            .json(Registered {
                client_id,
                client_name: client.client_name,
                redirect_uris: client.redirect_uris,
                client_id_issued_at: client.iat,
                token_endpoint_auth_method: "none",
                grant_types: ["authorization_code"],
                response_types: ["code"],
            }),
        Err(error) => oauth_error(&error),
    }
}

#[derive(Debug, Deserialize)]
pub struct AuthorizeQuery {
    client_id: Option<String>,
    redirect_uri: Option<String>,
    response_type: Option<String>,
    code_challenge: Option<String>,
    code_challenge_method: Option<String>,
    state: Option<String>,
    db: Option<String>,
    resource: Option<String>,
    provider: Option<String>,
    lang: Option<String>,
}

/// `redirect_uri` with `pairs` added to its query.
fn redirect_to(redirect_uri: &str, pairs: &[(&str, Option<&str>)]) -> HttpResponse {
    let location = match url::Url::parse(redirect_uri) {
        Ok(mut url) => {
            for (name, value) in pairs {
                if let Some(value) = value {
                    url.query_pairs_mut().append_pair(name, value);
                }
            }
            url.to_string()
        }
        Err(_) => redirect_uri.to_owned(), // registered URIs parse: never here
    };
    HttpResponse::Found()
        .insert_header((header::LOCATION, location))
        .insert_header(("Cache-Control", "no-store"))
        .finish()
}

/// A 400 for the person (HTML) or for a client that asks for JSON.
fn refused_here(req: &HttpRequest, lang: Lang, error: ApiError) -> HttpResponse {
    let wants_json = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|accept| accept.to_str().ok())
        .is_some_and(|accept| accept.contains("application/json"));
    if wants_json {
        oauth_error(&error)
    } else {
        pages::refused(lang, &error.message)
    }
}

#[utoipa::path(
    get, path = "/auth/authorize", operation_id = "oauth_authorize", tag = "oauth", summary = "Authorize a client (code flow with PKCE)",
    description = "Checks the client and its redirect URI (else 400: an HTML page, or JSON for `Accept: application/json`); every other problem goes back to `redirect_uri` as `error`, `error_description` and `state`. Then the person signs in (`provider`, or the method chooser) and the browser returns to `redirect_uri` with `code` (5 minutes, single use) and `state`.",
    params(
        ("client_id" = String, Query, description = "From registration"),
        ("redirect_uri" = String, Query, description = "One of the client's registered URIs"),
        ("response_type" = String, Query, description = "`code`"),
        ("code_challenge" = String, Query, description = "PKCE: base64url(SHA-256(verifier))"),
        ("code_challenge_method" = String, Query, description = "`S256` (`plain` is refused)"),
        ("state" = Option<String>, Query, description = "Returned as given"),
        ("db" = Option<String>, Query, description = "The database the token is for"),
        ("resource" = Option<String>, Query, description = "Instead of `db` (RFC 8707): a URL on this service's host, e.g. the MCP URL `.../api/{db}/mcp`"),
        ("provider" = Option<String>, Query, description = "A sign-in provider; without it the person chooses"),
        ("lang" = Option<String>, Query, description = "`en` (default) or `et`"),
    ),
    responses(
        (status = 302, description = "To the sign-in, or back to `redirect_uri` with `error`"),
        (status = 400, description = "Unknown `client_id`, or a `redirect_uri` not registered for it (`invalid_client`): a page for the person in the browser, JSON for a client that asks for it",
         content((String = "text/html"), (ErrorBody = "application/json"))),
    )
)]
pub async fn authorize(
    state: web::Data<AppState>,
    req: HttpRequest,
    query: web::Query<AuthorizeQuery>,
) -> HttpResponse {
    let query = query.into_inner();
    let now = state.clock.now();
    let lang = Lang::from_query(query.lang.as_deref());
    let client = query
        .client_id
        .as_deref()
        .and_then(|id| oauth::client(&state.jwt, id, now));
    let Some(client) = client else {
        let error = ApiError::new(ErrorCode::InvalidClient, "Unknown or expired client_id");
        return refused_here(&req, lang, error);
    };
    let Some(redirect_uri) = query.redirect_uri.filter(|uri| client.redirect_uris.contains(uri)) else {
        let error = ApiError::new(
            ErrorCode::InvalidClient,
            "redirect_uri is not registered for this client",
        );
        return refused_here(&req, lang, error);
    };
    let given_state = query.state.as_deref();
    let back = |error: &str, description: &str| {
        redirect_to(
            &redirect_uri,
            &[
                ("error", Some(error)),
                ("error_description", Some(description)),
                ("state", given_state),
            ],
        )
    };
    if query.response_type.as_deref() != Some("code") {
        return back("unsupported_response_type", "response_type must be code");
    }
    let Some(code_challenge) = query.code_challenge.filter(|challenge| !challenge.is_empty()) else {
        return back("invalid_request", "code_challenge is required (PKCE)");
    };
    if query.code_challenge_method.as_deref() != Some("S256") {
        return back("invalid_request", "code_challenge_method must be S256");
    }
    let hosts = own_hosts(&state);
    let hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
    let db = query.db.clone().or_else(|| {
        query
            .resource
            .as_deref()
            .and_then(|resource| oauth::resource_database(resource, &hosts))
    });
    let Some(db) = db else {
        return back("invalid_request", "db, or a resource naming a database, is required");
    };
    match state.known_database(&db).await {
        Ok(true) => {}
        Ok(false) => return back("invalid_request", "Unknown database"),
        Err(error) => return back("temporarily_unavailable", &error.message),
    }
    let provider = match query.provider.as_deref() {
        None => "choose",
        Some(provider) if PROVIDERS.contains(&provider) && state.sign_in.offers(provider) => provider,
        Some(_) => return back("invalid_request", "Unknown or unavailable provider"),
    };
    let authorization = Authorization {
        client_id: query.client_id.unwrap_or_default(),
        redirect_uri: redirect_uri.clone(),
        code_challenge,
        state: query.state.clone(),
        db,
        resource: query.resource.clone(),
    };
    let ip = client_ip(&req, &state.trusted_proxies);
    let next = match state.sign_in.begin_authorization(&authorization, &ip, now).await {
        Ok(next) => next,
        Err(error) => return back("temporarily_unavailable", &error.message),
    };
    let query = serde_urlencoded::to_string([("next", next.as_str()), ("lang", lang.code())]).unwrap_or_default();
    HttpResponse::Found()
        .insert_header((
            header::LOCATION,
            format!("{}/api/auth/{provider}?{query}", state.sign_in.public_url),
        ))
        .insert_header(("Cache-Control", "no-store"))
        .finish()
}

/// The hosts a `resource` may name: those of `{api_url}` and `{base_url}`.
fn own_hosts(state: &AppState) -> Vec<String> {
    [&state.sign_in.api_url, &state.sign_in.public_url]
        .into_iter()
        .filter_map(|origin| url::Url::parse(origin).ok()?.host_str().map(str::to_owned))
        .collect()
}

#[derive(Debug, Deserialize)]
pub struct CompleteQuery {
    request: String,
    key: String,
}

#[utoipa::path(
    get, path = "/auth/authorize/complete", operation_id = "oauth_authorize_complete", tag = "oauth", summary = "Where the sign-in returns during an authorization",
    description = "The `next` of the sign-in an authorization began: takes the session token (`key`) from the browser that began it, and sends the browser to the client's `redirect_uri` with `code` and `state`, or with `error=access_denied` when the login is no person in the database.",
    params(
        ("request" = String, Query, description = "The authorization, as authorize named it"),
        ("key" = String, Query, description = "The sign-in's session token"),
    ),
    responses(
        (status = 302, description = "To the client's `redirect_uri`"),
        (status = 400, description = "The authorization is unknown, used or expired (an HTML page)"),
    )
)]
pub async fn complete(state: web::Data<AppState>, req: HttpRequest, query: web::Query<CompleteQuery>) -> HttpResponse {
    let ip = client_ip(&req, &state.trusted_proxies);
    let now = state.clock.now();
    let authorization = match state.sign_in.take_authorization(&query.request, &ip, now).await {
        Ok(authorization) => authorization,
        Err(error) => return refused_here(&req, Lang::En, error),
    };
    let redirect_uri = authorization.redirect_uri.clone();
    let given_state = authorization.state.clone();
    let back = |pairs: &[(&str, Option<&str>)]| {
        let mut pairs = pairs.to_vec();
        pairs.push(("state", given_state.as_deref()));
        redirect_to(&redirect_uri, &pairs)
    };
    let denied = |description: &str| {
        back(&[
            ("error", Some("access_denied")),
            ("error_description", Some(description)),
        ])
    };
    let Ok((login, _)) = state.sign_in.exchange_session(&state.jwt, &query.key, &ip, now).await else {
        return denied("The sign-in did not complete");
    };
    let person = match person_for(&state, &authorization.db, &login).await {
        Ok(Some(person)) => person,
        Ok(None) => return denied("This login is no person in the database"),
        Err(error) => {
            return back(&[
                ("error", Some("temporarily_unavailable")),
                ("error_description", Some(&error.message)),
            ]);
        }
    };
    match state.sign_in.issue_code(authorization, &login, person, now).await {
        Ok(code) => back(&[("code", Some(&code))]),
        Err(error) => back(&[
            ("error", Some("temporarily_unavailable")),
            ("error_description", Some(&error.message)),
        ]),
    }
}

/// The login's person in `db`: the one holding it, else one made where
/// the database's `add_user` says (with no connection held meanwhile).
async fn person_for(state: &AppState, db: &str, login: &crate::auth::login::Login) -> Result<Option<String>, ApiError> {
    let mut accounts = accounts::accounts_of(&mut *state.pool.get().await?, &login.sub()).await?;
    if let Some(person) = accounts.remove(db) {
        return Ok(Some(person));
    }
    accounts::add_user(&state.pool, &state.writers, db, login).await
}

#[utoipa::path(
    post, path = "/auth/token", operation_id = "oauth_token", tag = "oauth", summary = "Exchange a code for an access token",
    description = "Codes are single use (also across processes: the first attempt uses it, right or wrong) and live 5 minutes; the verifier must match the challenge (S256).",
    request_body(content = TokenForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "The access token", body = TokenAnswer),
        (status = 400, description = "`invalid_request`, `unsupported_grant_type`, `invalid_grant` or `invalid_target`, with `error_description`", body = ErrorBody),
    )
)]
pub async fn token(state: web::Data<AppState>, form: web::Form<TokenForm>) -> HttpResponse {
    let form = form.into_inner();
    match form.grant_type.as_deref() {
        Some("authorization_code") => {}
        None => return oauth_error(&ApiError::new(ErrorCode::InvalidRequest, "grant_type is required")),
        Some(_) => {
            return oauth_error(&ApiError::new(
                ErrorCode::UnsupportedGrantType,
                "grant_type must be authorization_code",
            ));
        }
    }
    let (Some(code), Some(redirect_uri), Some(code_verifier)) = (&form.code, &form.redirect_uri, &form.code_verifier)
    else {
        return oauth_error(&ApiError::new(
            ErrorCode::InvalidRequest,
            "code, redirect_uri and code_verifier are required",
        ));
    };
    let redemption = Redemption {
        code,
        redirect_uri,
        code_verifier,
        client_id: form.client_id.as_deref(),
        resource: form.resource.as_deref(),
    };
    match state
        .sign_in
        .redeem_code(&state.jwt, redemption, state.clock.now())
        .await
    {
        Ok(access_token) => HttpResponse::Ok()
            .insert_header(("Cache-Control", "no-store"))
            .json(TokenAnswer {
                access_token,
                token_type: "Bearer",
                expires_in: ACCESS_TOKEN_SECONDS,
            }),
        Err(error) => oauth_error(&error),
    }
}
