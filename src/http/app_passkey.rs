//! Passkeys for apps: the original's JSON ceremony, beside the passkey pages.
//! An app asks for the options (`GET /api/auth/passkey` to sign in, `GET
//! /api/{db}/passkey` to register), hands them to `navigator.credentials`,
//! and posts the credential back with the `challengeToken` it was given (5
//! minutes, single use, from the address that asked only). Signing in
//! answers as `GET /api/auth` does, so `POST /api/auth/passkey` is there.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use utoipa::ToSchema;

use super::views::passkey_pages::{self, Carried};
use super::views::responses::InvalidToken;
use super::{AppState, Caller, client_ip};
use crate::error::{ApiError, ErrorBody};
use crate::sign_in::app_passkey::{AppAnswer, app_asked};
use crate::sign_in::{Lang, accounts, check_invite};

#[derive(Debug, Deserialize)]
pub struct SignInQuery {
    next: Option<String>,
    lang: Option<String>,
    invite: Option<String>,
}

/// A passkey registered on the caller's person.
#[derive(Serialize, ToSchema)]
pub struct PasskeyAdded {
    /// Always `true`.
    success: bool,
    /// The person the passkey signs in as.
    #[serde(rename = "_id")]
    person: String,
}

/// Whether `req` is a browser's, asking for a page (`Accept` names
/// `text/html`); an app's `fetch` asks for JSON or for anything.
fn wants_page(req: &HttpRequest) -> bool {
    req.headers()
        .get_all(header::ACCEPT)
        .filter_map(|value| value.to_str().ok())
        .any(|value| value.to_ascii_lowercase().contains("text/html"))
}

fn options(options: Json) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header(("Cache-Control", "no-store"))
        .json(options)
}

#[utoipa::path(
    get, path = "/api/auth/passkey", operation_id = "passkey_sign_in", tag = "auth", summary = "Sign in with a passkey: the page, or an app's options",
    description = "A browser (its `Accept` names `text/html`), or any request with `next` or `invite`, gets an HTML page (English, or Estonian with `lang=et`) whose script asks the device for one of its passkeys (see `/api/auth/passkey/options` and `/finish`), linking to `/api/auth/passkey/register` to create one. An app gets JSON: the options for `navigator.credentials.get` (`publicKey`'s fields, binary ones base64url; no credentials listed: the device offers its own) with a `challengeToken` (5 minutes, single use, this address only) to post back beside the credential's fields to `POST /api/auth/passkey`.",
    params(
        ("next" = Option<String>, Query, description = "An https URL to send the browser to, with the session token appended"),
        ("lang" = Option<String>, Query, description = "`en` (default) or `et`: the page's language"),
        ("invite" = Option<String>, Query, description = "An invitation token, accepted once signed in"),
    ),
    responses(
        (status = 200, description = "The page, or an app's options",
         content((String = "text/html"), (Object = "application/json", example = json!({"challenge": "x3Jq0s5c8YQpZk1n2b7dWQ", "timeout": 300000, "rpId": "entu.example", "allowCredentials": [], "userVerification": "preferred", "challengeToken": "kq9x2ZbT0cVw5mRt7yHs1A"})))),
        (status = 400, description = "`next` is not an https URL, or a malformed invitation", body = ErrorBody),
        (status = 429, description = "Too many sign-ins pending from this address", body = ErrorBody),
        (status = 503, description = "Passkeys are not configured on this server (`auth.webauthn`)", body = ErrorBody),
    )
)]
pub async fn sign_in(
    state: web::Data<AppState>,
    req: HttpRequest,
    query: web::Query<SignInQuery>,
) -> Result<HttpResponse, ApiError> {
    state.sign_in.require_passkeys()?;
    let query = query.into_inner();
    let next = query
        .next
        .as_deref()
        .map(|next| state.sign_in.check_next(next))
        .transpose()?;
    query.invite.as_deref().map(check_invite).transpose()?;
    if next.is_some() || query.invite.is_some() || wants_page(&req) {
        let carried = Carried {
            next,
            invite: query.invite.as_deref(),
            db: None,
        };
        return Ok(passkey_pages::sign_in(
            Lang::from_query(query.lang.as_deref()),
            &carried,
        ));
    }
    let asked = app_asked(client_ip(&req, &state.trusted_proxies), None);
    let begun = state.sign_in.start_passkey_sign_in(asked, state.clock.now()).await?;
    Ok(options(begun.app_options()))
}

#[utoipa::path(
    get, path = "/api/{db}/passkey", operation_id = "passkey_app_register_options", tag = "auth", summary = "Begin adding a passkey to oneself (an app's ceremony)",
    description = "The options for `navigator.credentials.create` (`publicKey`'s fields, binary ones base64url) with their `challengeToken`: 5 minutes, single use, from this address only. The device lists the passkey under the database's name.",
    params(("db" = String, Path, description = "The database whose person gets the passkey", example = "demo")),
    responses(
        (status = 200, description = "The creation options and `challengeToken`", body = Object,
         example = json!({"rp": {"name": "eds", "id": "entu.example"}, "user": {"id": "9yL3cQ", "name": "demo", "displayName": "demo"}, "challenge": "x3Jq0s5c8YQpZk1n2b7dWQ", "pubKeyCredParams": [{"type": "public-key", "alg": -7}], "authenticatorSelection": {"residentKey": "required", "userVerification": "required"}, "challengeToken": "kq9x2ZbT0cVw5mRt7yHs1A"})),
        (status = 401, response = inline(InvalidToken)),
        (status = 403, description = "A token for other databases only, or one the OAuth server issued (it cannot add credentials)", body = ErrorBody),
        (status = 404, description = "No such database", body = ErrorBody),
        (status = 503, description = "Passkeys are not configured on this server", body = ErrorBody),
    )
)]
pub async fn register_options(
    state: web::Data<AppState>,
    req: HttpRequest,
    db: web::Path<String>,
    caller: Caller,
) -> Result<HttpResponse, ApiError> {
    caller.refuse_oauth_credentials()?;
    caller.require_person(&db)?;
    let asked = app_asked(client_ip(&req, &state.trusted_proxies), Some(db.into_inner()));
    let begun = state
        .sign_in
        .start_passkey_registration(asked, state.clock.now())
        .await?;
    Ok(options(begun.app_options()))
}

#[utoipa::path(
    post, path = "/api/{db}/passkey", operation_id = "passkey_app_register", tag = "auth", summary = "Add a passkey to oneself (an app's ceremony)",
    description = "The body is the new `PublicKeyCredential` (binary fields base64url) with the `challengeToken` of `GET /api/{db}/passkey` and an optional `deviceName` (at most 100 characters kept; default \"Passkey\") beside its fields. Verified, it is stored as a `service_user` login of the caller's person.",
    params(("db" = String, Path, description = "The database whose person gets the passkey", example = "demo")),
    request_body(content = Object, description = "`{...credential, challengeToken, deviceName?}`"),
    responses(
        (status = 200, description = "Stored", body = PasskeyAdded, example = json!({"success": true, "_id": "65f1c0ffee0000000000abcd"})),
        (status = 400, description = "No `challengeToken` (`bad_request`); an unknown, used, expired or foreign `challengeToken`, or a credential that does not verify (`invalid_sign_in`)", body = ErrorBody),
        (status = 401, response = inline(InvalidToken)),
        (status = 403, description = "A token for other databases only, or one the OAuth server issued (it cannot add credentials)", body = ErrorBody),
        (status = 404, description = "No such database", body = ErrorBody),
        (status = 503, description = "Passkeys are not configured on this server", body = ErrorBody),
    )
)]
pub async fn register(
    state: web::Data<AppState>,
    req: HttpRequest,
    db: web::Path<String>,
    caller: Caller,
    body: web::Json<Json>,
) -> Result<HttpResponse, ApiError> {
    caller.refuse_oauth_credentials()?;
    let person = caller.require_person(&db)?.to_owned();
    let answer = AppAnswer::read(body.into_inner())?;
    let ip = client_ip(&req, &state.trusted_proxies);
    let done = state
        .sign_in
        .finish_passkey_registration(
            &answer.challenge_token,
            answer.credential,
            answer.device_name.as_deref(),
            &ip,
            state.clock.now(),
        )
        .await?;
    accounts::add_login(&state.writers, &db, &person, &done.login).await?;
    Ok(HttpResponse::Ok()
        .insert_header(("Cache-Control", "no-store"))
        .json(PasskeyAdded { success: true, person }))
}
