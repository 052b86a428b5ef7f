//! `GET /api/auth` (an API key or a session token for an access token, an
//! invitation accepted on the way), `GET /api/auth/refresh`, and an app's
//! passkey sign-in, which answers as `GET /api/auth` does.

use actix_web::{HttpRequest, HttpResponse, web};
use chrono::DateTime;
use serde::Deserialize;
use serde_json::Value as Json;

use super::views::auth::{Account, AccountUser, TokenResponse, TokenUser, token_example};
use super::views::responses::ReadUnavailable;
use super::{AppState, bearer, client_ip};
use crate::auth::api_key;
use crate::auth::jwt::Claims;
use crate::auth::subject::Subject;
use crate::error::{ApiError, ErrorBody};
use crate::metrics;
use crate::model::json::format_datetime;
use crate::service::accounts;
use crate::sign_in::accounts::{SignInTo, SignedIn, accounts_of, accounts_of_sub};
use crate::sign_in::app_passkey::AppAnswer;

#[derive(Debug, Deserialize)]
pub struct AuthQuery {
    db: Option<String>,
    /// Alias of `db`.
    account: Option<String>,
    /// An invitation to accept (with a provider login).
    invite: Option<String>,
}

#[utoipa::path(
    get, path = "/api/auth", operation_id = "authenticate", tag = "auth", summary = "Exchange an API key or a session token for an access token",
    description = "Send an API key, or the session token a provider sign-in gave (`GET /api/auth/{provider}`), as `Authorization: Bearer <credential>`. The answer's `token` is a 12-hour JWT for every other call. A provider login reaches every database where a person holds it; one that matches none gets a token with empty `accounts` (to create a database with `POST /api/new`). `invite` links the login to the invited person and limits the token to that database; when the login is another person there, the answer carries `conflict: \"invite\"` and the login's own accounts.",
    security(("apiKey" = [])),
    params(
        ("db" = Option<String>, Query, description = "Limit the token to this database", example = "demo"),
        ("account" = Option<String>, Query, description = "Alias of `db`"),
        ("invite" = Option<String>, Query, description = "An invitation token to accept (provider logins)"),
    ),
    responses(
        (status = 200, description = "The token and the databases it reaches", body = TokenResponse, example = token_example),
        (status = 400, description = "Malformed query string, or `Invalid or expired invite`", body = ErrorBody),
        (status = 401, description = "No key (`No key`), an unknown key (`Invalid API key`), a used, expired or foreign session token (`Invalid token`), or none of its databases match `db` (`No accessible accounts`)", body = ErrorBody),
        (status = 503, response = inline(ReadUnavailable)),
    )
)]
pub async fn authenticate(
    state: web::Data<AppState>,
    req: HttpRequest,
    query: web::Query<AuthQuery>,
) -> Result<HttpResponse, ApiError> {
    let credential = bearer(&req).ok_or_else(|| refused(LOGIN, "missing", "No key"))?;
    if api_key::looks_like_key(credential) {
        return key_login(&state, &req, credential, query.db.as_ref().or(query.account.as_ref())).await;
    }
    if !credential.contains('.') {
        return Err(refused(LOGIN, "invalid_key", "Invalid API key"));
    }
    let ip = client_ip(&req, &state.trusted_proxies);
    let now = state.clock.now();
    let (login, carried_invite) = state.sign_in.exchange_session(&state.jwt, credential, &ip, now).await?;
    let wanted = query.db.as_deref().or(query.account.as_deref());
    let invite = query.invite.as_deref().or(carried_invite.as_deref());
    let directory = SignInTo {
        clusters: &state.clusters,
        writers: &state.writers,
        jwt: &state.jwt,
        now,
    };
    let SignedIn { accounts, conflict } = directory.sign_in_to(&login, wanted, invite).await?;
    let mut claims = Claims::access(login.sub(), accounts, Some(ip), now);
    claims.set_profile(&login);
    token_response(&state, &claims, LOGIN, conflict).await
}

#[utoipa::path(
    post, path = "/api/auth/passkey", operation_id = "passkey_app_sign_in", tag = "auth", summary = "Sign in with a passkey (an app's ceremony)",
    description = "The original's JSON ceremony: the body is the `PublicKeyCredential` the device gave for the options of `GET /api/auth/passkey` (asked for as JSON), binary fields base64url, with that answer's `challengeToken` beside its fields. The passkey's stored credential is found in every database holding it; the answer is `GET /api/auth`'s.",
    request_body(content = Object, description = "`{...credential, challengeToken}`"),
    responses(
        (status = 200, description = "Signed in: the token and the databases it reaches", body = TokenResponse, example = token_example),
        (status = 400, description = "No `challengeToken` (`bad_request`); an unknown, used, expired or foreign `challengeToken`, a passkey no person holds, or an answer that does not verify (`invalid_sign_in`)", body = ErrorBody),
        (status = 503, description = "Passkeys are not configured on this server", body = ErrorBody),
    )
)]
pub async fn passkey_sign_in(
    state: web::Data<AppState>,
    req: HttpRequest,
    body: web::Json<Json>,
) -> Result<HttpResponse, ApiError> {
    let answer = AppAnswer::read(body.into_inner())?;
    let ip = client_ip(&req, &state.trusted_proxies);
    let now = state.clock.now();
    let done = state
        .sign_in
        .finish_passkey_sign_in(&state.clusters, &answer.challenge_token, answer.credential, &ip, now)
        .await?;
    let accounts = accounts_of(&state.clusters, &done.login.subject()).await?;
    let mut claims = Claims::access(done.login.sub(), accounts, Some(ip), now);
    claims.set_profile(&done.login);
    token_response(&state, &claims, LOGIN, false).await
}

/// An API key exchanged for a token for its person (in `wanted` only, if given).
async fn key_login(
    state: &AppState,
    req: &HttpRequest,
    credential: &str,
    wanted: Option<&String>,
) -> Result<HttpResponse, ApiError> {
    let mut candidates = accounts::api_key_candidates(&state.clusters, &api_key::lookup(credential)).await?;
    // An imported copy holds its source's key hashes: try the wanted database first.
    candidates.sort_by_key(|candidate| wanted.is_some_and(|wanted| *wanted != candidate.db));
    let plain = credential.to_owned();
    let matched = tokio::task::spawn_blocking(move || {
        candidates
            .into_iter()
            .find(|candidate| api_key::verify(&plain, &candidate.hash))
    })
    .await
    .map_err(|e| ApiError::internal("key verification failed", e))?
    .ok_or_else(|| refused(LOGIN, "invalid_key", "Invalid API key"))?;

    if wanted.is_some_and(|wanted| *wanted != matched.db) {
        return Err(refused(LOGIN, NO_ACCOUNTS, "No accessible accounts"));
    }
    let subject = Subject::ApiKey {
        db: matched.db,
        value_id: matched.value_id,
    };
    let accounts = accounts_of(&state.clusters, &subject).await?;
    if accounts.is_empty() {
        return Err(refused(LOGIN, NO_ACCOUNTS, "No accessible accounts"));
    }
    let claims = Claims::access(
        subject.to_string(),
        accounts,
        Some(client_ip(req, &state.trusted_proxies)),
        state.clock.now(),
    );
    token_response(state, &claims, LOGIN, false).await
}

/// `GET /api/auth/refresh`: a new token for a still valid or recently expired
/// one, with database access looked up again.
#[utoipa::path(
    get, path = "/api/auth/refresh", operation_id = "refresh_token", tag = "auth", summary = "Refresh an access token",
    description = "A new token for a valid or recently expired one, with database access looked up again. Idle limit 14 days from the presented token's issue, absolute limit 30 days from the original login.",
    security(("jwt" = [])),
    responses(
        (status = 200, description = "A new token", body = TokenResponse, example = token_example),
        (status = 401, description = "`Invalid token`, `No accessible accounts`, `Token too old, re-authenticate` or `Session expired, re-authenticate`", body = ErrorBody),
        (status = 503, response = inline(ReadUnavailable)),
    )
)]
pub async fn refresh(state: web::Data<AppState>, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let token = bearer(&req).ok_or_else(|| refused(REFRESH, "missing", "No token"))?;
    let ip = client_ip(&req, &state.trusted_proxies);
    let now = state.clock.now();
    let claims = state.jwt.verify_refresh(token, &ip, now).map_err(|refusal| {
        metrics::token_refused(REFRESH, refusal.reason());
        ApiError::from(refusal)
    })?;
    let accounts = accounts_of_sub(&state.clusters, &claims.sub).await?;
    if accounts.is_empty() {
        return Err(refused(REFRESH, NO_ACCOUNTS, "No accessible accounts"));
    }
    token_response(&state, &claims.refreshed(accounts, ip, now), REFRESH, false).await
}

/// Names of the token flows and refusal reasons in the metrics.
const LOGIN: &str = "login";
const REFRESH: &str = "refresh";
const NO_ACCOUNTS: &str = "no_accounts";

/// A refused credential: counted, and answered 401 with `message`.
fn refused(flow: &'static str, reason: &'static str, message: &'static str) -> ApiError {
    metrics::token_refused(flow, reason);
    ApiError::unauthorized(message)
}

/// `{accounts, user, token, expires}` for signed `claims`, issued through
/// `flow`; with `conflict`, an invitation was refused (`conflict: "invite"`).
async fn token_response(
    state: &AppState,
    claims: &Claims,
    flow: &'static str,
    conflict: bool,
) -> Result<HttpResponse, ApiError> {
    let mut accounts = Vec::new();
    let mut user_name = None;
    for (db, person) in &claims.accounts {
        let name = accounts::person_name(&state.clusters, db, person).await?;
        // `user.name` is the person's name in the first database (by name) that has one.
        if user_name.is_none() {
            user_name.clone_from(&name);
        }
        accounts.push(Account {
            id: db,
            name: db,
            user: AccountUser { id: person, name },
        });
    }
    let token = state.jwt.sign(claims)?;
    metrics::token_issued(flow);
    let expires = DateTime::from_timestamp(claims.exp, 0).unwrap_or_default();
    Ok(HttpResponse::Ok().json(TokenResponse {
        accounts,
        user: TokenUser { name: user_name },
        token,
        expires: format_datetime(expires),
        conflict: conflict.then_some("invite"),
    }))
}
