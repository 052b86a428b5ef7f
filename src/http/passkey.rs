//! Passkeys over HTTP: the registration page, the script both passkey pages
//! run, and the JSON ceremony endpoints that script calls. (The sign-in
//! page is `GET /api/auth/passkey`, the generic provider route.)

use actix_web::{HttpRequest, HttpResponse, web};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use utoipa::ToSchema;

use super::views::passkey_pages::{self, Carried};
use super::views::responses::InvalidToken;
use super::{AppState, Caller, client_ip};
use crate::auth::login::PASSKEY_PROVIDER;
use crate::error::{ApiError, ErrorBody, ErrorCode};
use crate::sign_in::passkey::{Begun, PasskeyAsked};
use crate::sign_in::{Completed, Lang, accounts, check_invite};

#[derive(Debug, Deserialize)]
pub struct RegisterPageQuery {
    next: Option<String>,
    lang: Option<String>,
    invite: Option<String>,
    /// A signed-in person adding a passkey to themselves in this database
    /// (their token follows in the URL's fragment, `#token=...`).
    db: Option<String>,
}

/// What a passkey page asks to begin.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CeremonyAsked {
    /// Registration: the name of the device (at most 100 characters kept; default "Passkey").
    device: Option<String>,
    /// An https URL to send the browser to once signed in.
    next: Option<String>,
    /// An invitation token, accepted once signed in.
    invite: Option<String>,
}

/// A ceremony begun.
#[derive(Serialize, ToSchema)]
pub struct CeremonyBegun {
    /// Names this ceremony in its answer: 5 minutes, single use, from this address only.
    ceremony: String,
    /// The options for `navigator.credentials.create` (registration) or `.get` (sign-in); binary fields are base64url.
    #[serde(rename = "publicKey")]
    #[schema(value_type = Object)]
    public_key: Json,
}

/// The browser's answer to a ceremony.
#[derive(Debug, Deserialize, ToSchema)]
pub struct CeremonyAnswer {
    ceremony: String,
    /// The `PublicKeyCredential` as JSON, binary fields base64url.
    #[schema(value_type = Object)]
    credential: Json,
    /// Registration by a signed-in person (bearer token): the database whose person gets the passkey.
    db: Option<String>,
}

/// Signed in: the session token, or (with `next`) where to send the browser.
#[derive(Serialize, ToSchema)]
pub struct PasskeySignedIn {
    /// A session token (5 minutes, single use, this address only) to exchange at `GET /api/auth`; without `next`.
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    /// `next` with the session token appended.
    #[serde(skip_serializing_if = "Option::is_none")]
    location: Option<String>,
}

fn offered(state: &AppState) -> Result<(), ApiError> {
    if state.sign_in.offers(PASSKEY_PROVIDER) {
        Ok(())
    } else {
        Err(ApiError::new(
            ErrorCode::ProviderUnavailable,
            "Sign-in with passkey is not configured on this server",
        ))
    }
}

#[utoipa::path(
    get, path = "/api/auth/passkey/register", operation_id = "passkey_register_page", tag = "auth", summary = "Create a passkey (page)",
    description = "An HTML page (English, or Estonian with `lang=et`) asking for a device name; its script makes a discoverable passkey on the device and signs in with it: sign-up, accepting an invitation (`invite`), or, with `db` and the person's token in the fragment (`#token=...`), adding a passkey to one's own person. Completed: with `next`, the browser goes to `next` with the session token appended; without, the page shows the session token.",
    params(
        ("next" = Option<String>, Query, description = "An https URL to send the browser to, with the session token appended"),
        ("lang" = Option<String>, Query, description = "`en` (default) or `et`"),
        ("invite" = Option<String>, Query, description = "An invitation token, accepted once signed in"),
        ("db" = Option<String>, Query, description = "Adding a passkey to one's own person in this database"),
    ),
    responses(
        (status = 200, description = "The page (HTML)"),
        (status = 400, description = "`next` is not an https URL", body = ErrorBody),
        (status = 503, description = "Passkeys are not configured on this server (`auth.webauthn`)", body = ErrorBody),
    )
)]
pub async fn register_page(
    state: web::Data<AppState>,
    query: web::Query<RegisterPageQuery>,
) -> Result<HttpResponse, ApiError> {
    offered(&state)?;
    let next = query
        .next
        .as_deref()
        .map(|next| state.sign_in.check_next(next))
        .transpose()?;
    query.invite.as_deref().map(check_invite).transpose()?;
    let carried = Carried {
        next,
        invite: query.invite.as_deref(),
        db: query.db.as_deref(),
    };
    Ok(passkey_pages::register(
        Lang::from_query(query.lang.as_deref()),
        &carried,
    ))
}

#[utoipa::path(
    get, path = "/api/auth/passkey/passkey.js", operation_id = "passkey_script", tag = "auth", summary = "The passkey pages' script",
    responses((status = 200, description = "JavaScript", content_type = "text/javascript"))
)]
pub async fn script() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/javascript; charset=utf-8")
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .insert_header(("Cache-Control", "public, max-age=300"))
        .body(passkey_pages::SCRIPT)
}

/// Checks what a page asks to begin, from `req`'s address.
fn asked(state: &AppState, req: &HttpRequest, body: CeremonyAsked) -> Result<PasskeyAsked, ApiError> {
    offered(state)?;
    let next = body
        .next
        .as_deref()
        .map(|next| state.sign_in.check_next(next))
        .transpose()?
        .map(str::to_owned);
    body.invite.as_deref().map(check_invite).transpose()?;
    Ok(PasskeyAsked {
        device: body.device,
        listed_as: None,
        next,
        invite: body.invite,
        client_ip: client_ip(req, &state.trusted_proxies),
    })
}

fn begun(begun: Begun) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header(("Cache-Control", "no-store"))
        .json(CeremonyBegun {
            ceremony: begun.token,
            public_key: begun.options["publicKey"].clone(),
        })
}

#[utoipa::path(
    post, path = "/api/auth/passkey/register/options", operation_id = "passkey_register_options", tag = "auth", summary = "Begin creating a passkey",
    request_body = CeremonyAsked,
    responses(
        (status = 200, description = "The ceremony and the options for `navigator.credentials.create`", body = CeremonyBegun),
        (status = 400, description = "`next` is not an https URL, or a malformed body", body = ErrorBody),
        (status = 401, response = inline(InvalidToken)),
        (status = 403, description = "A token the OAuth server issued: it cannot add credentials", body = ErrorBody),
        (status = 503, description = "Passkeys are not configured on this server", body = ErrorBody),
    )
)]
pub async fn register_options(
    state: web::Data<AppState>,
    req: HttpRequest,
    caller: Caller,
    body: web::Json<CeremonyAsked>,
) -> Result<HttpResponse, ApiError> {
    caller.refuse_oauth_credentials()?;
    let asked = asked(&state, &req, body.into_inner())?;
    Ok(begun(
        state
            .sign_in
            .start_passkey_registration(asked, state.clock.now())
            .await?,
    ))
}

#[utoipa::path(
    post, path = "/api/auth/passkey/register/finish", operation_id = "passkey_register_finish", tag = "auth", summary = "Finish creating a passkey, and sign in with it",
    description = "Verifies the new credential against the ceremony (from the address that began it, once, within 5 minutes). With `db` and a bearer token, the passkey is stored on the caller's person there at once; otherwise it is stored where the login is next linked (an invitation, `add_user`, `POST /api/new`).",
    request_body = CeremonyAnswer,
    responses(
        (status = 200, description = "Signed in", body = PasskeySignedIn),
        (status = 400, description = "Unknown, used or expired ceremony, or a credential that does not verify (`invalid_sign_in`)", body = ErrorBody),
        (status = 401, response = inline(InvalidToken)),
        (status = 403, description = "`db` is given, but the token is not for a person there; or a token the OAuth server issued, which cannot add credentials", body = ErrorBody),
        (status = 503, description = "Passkeys are not configured on this server", body = ErrorBody),
    )
)]
pub async fn register_finish(
    state: web::Data<AppState>,
    req: HttpRequest,
    caller: Caller,
    body: web::Json<CeremonyAnswer>,
) -> Result<HttpResponse, ApiError> {
    caller.refuse_oauth_credentials()?;
    offered(&state)?;
    let body = body.into_inner();
    let owner = match &body.db {
        Some(db) => Some((db.as_str(), caller.require_person(db)?)),
        None => None,
    };
    let ip = client_ip(&req, &state.trusted_proxies);
    let done = state
        .sign_in
        .finish_passkey_registration(&body.ceremony, body.credential, None, &ip, state.clock.now())
        .await?;
    if let Some((db, person)) = owner {
        accounts::add_login(&state.writers, db, person, &done.login).await?;
    }
    signed_in(&state, done, &ip).await
}

#[utoipa::path(
    post, path = "/api/auth/passkey/options", operation_id = "passkey_sign_in_options", tag = "auth", summary = "Begin signing in with a passkey",
    request_body = CeremonyAsked,
    responses(
        (status = 200, description = "The ceremony and the options for `navigator.credentials.get` (no credentials listed: the device offers its own)", body = CeremonyBegun),
        (status = 400, description = "`next` is not an https URL, or a malformed body", body = ErrorBody),
        (status = 503, description = "Passkeys are not configured on this server", body = ErrorBody),
    )
)]
pub async fn sign_in_options(
    state: web::Data<AppState>,
    req: HttpRequest,
    body: web::Json<CeremonyAsked>,
) -> Result<HttpResponse, ApiError> {
    let asked = asked(&state, &req, body.into_inner())?;
    Ok(begun(
        state.sign_in.start_passkey_sign_in(asked, state.clock.now()).await?,
    ))
}

#[utoipa::path(
    post, path = "/api/auth/passkey/finish", operation_id = "passkey_sign_in_finish", tag = "auth", summary = "Finish signing in with a passkey",
    description = "Verifies the device's answer against the passkey's stored credential, found by its id in every database; the person is that passkey's in each database holding it.",
    request_body = CeremonyAnswer,
    responses(
        (status = 200, description = "Signed in", body = PasskeySignedIn),
        (status = 400, description = "Unknown, used or expired ceremony, a passkey no person holds, or an answer that does not verify (`invalid_sign_in`)", body = ErrorBody),
        (status = 503, description = "Passkeys are not configured on this server", body = ErrorBody),
    )
)]
pub async fn sign_in_finish(
    state: web::Data<AppState>,
    req: HttpRequest,
    body: web::Json<CeremonyAnswer>,
) -> Result<HttpResponse, ApiError> {
    offered(&state)?;
    let body = body.into_inner();
    let ip = client_ip(&req, &state.trusted_proxies);
    let done = state
        .sign_in
        .finish_passkey_sign_in(&state.clusters, &body.ceremony, body.credential, &ip, state.clock.now())
        .await?;
    signed_in(&state, done, &ip).await
}

/// A session token for the completed sign-in, as JSON: the page's script
/// shows it, or sends the browser to `next` with it appended.
async fn signed_in(state: &AppState, done: Completed, ip: &str) -> Result<HttpResponse, ApiError> {
    let now = state.clock.now();
    if let Some(held) = state.sign_in.hold_for_confirmation(&state.jwt, &done, ip, now).await? {
        // the page's script goes there: the invitation is confirmed first
        return Ok(HttpResponse::Ok()
            .insert_header(("Cache-Control", "no-store"))
            .json(PasskeySignedIn {
                key: None,
                location: Some(state.sign_in.confirmation_url(&held)),
            }));
    }
    let key = state
        .sign_in
        .issue_session(&state.jwt, &done.login, done.invite.as_deref(), ip, state.clock.now())
        .await?;
    let answer = match done.next {
        Some(next) => PasskeySignedIn {
            key: None,
            location: Some(format!("{next}{key}")),
        },
        None => PasskeySignedIn {
            key: Some(key),
            location: None,
        },
    };
    Ok(HttpResponse::Ok()
        .insert_header(("Cache-Control", "no-store"))
        .json(answer))
}
