//! The OAuth 2.1 authorization server's browser side, at `{api_url}`:
//! authorize (code + PKCE S256, one database per authorization, RFC 8707
//! resources), the sign-in's return, and the consent page's answers.
//! Authorize sends every error it may back to the client's redirect URI
//! (with `iss`, RFC 9207), and shows the rest to the person. The endpoints
//! a client calls itself are in `oauth_client`.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, ResponseError, web};
use serde::Deserialize;

use super::forms::FormOrigin;
use super::views::consent::{ConsentPage, consent_page};
use super::views::oauth::{ConsentForm, authorization_response, oauth_error};
use super::views::pages;
use super::{AppState, client_ip};
use crate::error::{ApiError, ErrorBody};
use crate::sign_in::Lang;
use crate::sign_in::authorize::{AuthorizeParams, AuthorizeRefusal, ClientRefusal};
use crate::sign_in::consent_flow::{AfterSignIn, CodeForClient};

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
    scope: Option<String>,
    lang: Option<String>,
}

/// A refusal sent back to the client's redirect URI.
fn to_client(state: &AppState, refusal: ClientRefusal) -> HttpResponse {
    authorization_response(
        &refusal.redirect_uri,
        &[
            ("error", Some(refusal.error)),
            ("error_description", Some(&refusal.description)),
            ("state", refusal.state.as_deref()),
        ],
        &state.sign_in.api_url,
    )
}

/// A refusal said to whom it names: back to the client's redirect URI, or
/// to the person here.
fn refused(state: &AppState, req: &HttpRequest, lang: Lang, refusal: AuthorizeRefusal) -> HttpResponse {
    match refusal {
        AuthorizeRefusal::ToPerson(error) => refused_here(req, lang, error),
        AuthorizeRefusal::ToClient(refusal) => to_client(state, refusal),
    }
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
    description = "Checks the client and its redirect URI (else 400: an HTML page, or JSON for `Accept: application/json`); every other problem goes back to `redirect_uri` as `error`, `error_description`, `state` and `iss`. Then the person signs in (`provider`, or the method chooser) and, unless they allowed this client, redirect URI and scopes in the database within 30 days, is asked on a consent page; allowed, the browser returns to `redirect_uri` with `code` (5 minutes, single use), `state` and `iss`.",
    params(
        ("client_id" = String, Query, description = "From registration, or the https URL of the client's metadata document (fetched, at most 5 s and 64 KB; its `client_id` must be that URL)"),
        ("redirect_uri" = String, Query, description = "One of the client's registered URIs"),
        ("response_type" = String, Query, description = "`code`"),
        ("code_challenge" = String, Query, description = "PKCE: base64url(SHA-256(verifier)), 43 characters"),
        ("code_challenge_method" = String, Query, description = "`S256` (`plain` is refused)"),
        ("state" = Option<String>, Query, description = "Returned as given; at most 1,024 bytes"),
        ("db" = Option<String>, Query, description = "The database the token is for"),
        ("resource" = Option<String>, Query, description = "Instead of `db` (RFC 8707): a URL on this service's host, e.g. the MCP URL `.../api/{db}/mcp`"),
        ("provider" = Option<String>, Query, description = "A sign-in provider; without it the person chooses"),
        ("scope" = Option<String>, Query, description = "Space-separated: `read` (the token reads as its person does), `write` (it also writes); unknown values are ignored; none means `read write`; neither `read` nor `write` → `error=invalid_scope`"),
        ("lang" = Option<String>, Query, description = "`en` (default) or `et`"),
    ),
    responses(
        (status = 302, description = "To the sign-in, or back to `redirect_uri` with `error`"),
        (status = 400, description = "Unknown `client_id` (also a metadata document that cannot be fetched or used), or a `redirect_uri` not registered for it (`invalid_client`): a page for the person in the browser, JSON for a client that asks for it",
         content((String = "text/html"), (ErrorBody = "application/json"))),
    )
)]
pub async fn authorize(
    state: web::Data<AppState>,
    req: HttpRequest,
    query: web::Query<AuthorizeQuery>,
) -> HttpResponse {
    let lang = Lang::from_query(query.lang.as_deref());
    let params = AuthorizeParams {
        redirect_uri: query.redirect_uri.as_deref(),
        response_type: query.response_type.as_deref(),
        code_challenge: query.code_challenge.as_deref(),
        code_challenge_method: query.code_challenge_method.as_deref(),
        state: query.state.as_deref(),
        db: query.db.as_deref(),
        resource: query.resource.as_deref(),
        provider: query.provider.as_deref(),
        scope: query.scope.as_deref(),
        lang,
    };
    let ip = client_ip(&req, &state.trusted_proxies);
    let known_database = async |db: &str| state.known_database(db).await;
    let begun = state
        .sign_in
        .authorize(
            &state.jwt,
            query.client_id.as_deref(),
            params,
            known_database,
            &ip,
            state.clock.now(),
        )
        .await;
    match begun {
        Ok(location) => HttpResponse::Found()
            .insert_header((header::LOCATION, location))
            .insert_header(("Cache-Control", "no-store"))
            .finish(),
        Err(refusal) => refused(&state, &req, lang, refusal),
    }
}

#[derive(Debug, Deserialize)]
pub struct CompleteQuery {
    request: String,
    key: String,
}

#[utoipa::path(
    get, path = "/auth/authorize/complete", operation_id = "oauth_authorize_complete", tag = "oauth", summary = "Where the sign-in returns during an authorization",
    description = "The `next` of the sign-in an authorization began: takes the session token (`key`) from the browser that began it and shows the consent page (which app, where it sends the person, the database, the access asked; one form that allows, a link that denies). When the person allowed this client, redirect URI and scopes in the database within 30 days, the browser goes straight to `redirect_uri` with `code`, `state` and `iss`. A sign-in that did not complete goes back with `error=access_denied`.",
    params(
        ("request" = String, Query, description = "The authorization, as authorize named it"),
        ("key" = String, Query, description = "The sign-in's session token"),
    ),
    responses(
        (status = 200, description = "The consent page", content_type = "text/html"),
        (status = 302, description = "To the client's `redirect_uri`"),
        (status = 400, description = "The authorization is unknown, used or expired (an HTML page)"),
    )
)]
pub async fn complete(state: web::Data<AppState>, req: HttpRequest, query: web::Query<CompleteQuery>) -> HttpResponse {
    let ip = client_ip(&req, &state.trusted_proxies);
    let now = state.clock.now();
    let step = state
        .sign_in
        .complete_authorization(&state.jwt, &state.clusters, &query.request, &query.key, &ip, now)
        .await;
    let (pending, token) = match step {
        Ok(AfterSignIn::AskConsent { pending, token }) => (pending, token),
        Ok(AfterSignIn::Code(code)) => return code_to_client(&state, &code),
        Err(refusal) => return refused(&state, &req, Lang::En, refusal),
    };
    let api_url = &state.sign_in.api_url;
    let deny_url = format!(
        "{api_url}/auth/authorize/deny?{}",
        serde_urlencoded::to_string([("consent", &token)]).unwrap_or_default()
    );
    consent_page(&ConsentPage {
        lang: Lang::from_query(Some(&pending.authorization.lang)),
        client_name: pending.authorization.client_name.as_deref(),
        client_host: pending.authorization.client_host.as_deref(),
        redirect_uri: &pending.authorization.redirect_uri,
        db: &pending.authorization.db,
        scope: &pending.authorization.scope,
        allow_url: &format!("{api_url}/auth/authorize/consent"),
        deny_url: &deny_url,
        token: &token,
    })
}

/// Sends the browser back to the client with its code.
fn code_to_client(state: &AppState, code: &CodeForClient) -> HttpResponse {
    authorization_response(
        &code.redirect_uri,
        &[("code", Some(&code.code)), ("state", code.state.as_deref())],
        &state.sign_in.api_url,
    )
}

#[utoipa::path(
    post, path = "/auth/authorize/consent", operation_id = "oauth_consent_allow", tag = "oauth", summary = "Allow the client (the consent page's form)",
    description = "Uses up the page's single-use token, from the browser it was shown to; makes the person where the database's `add_user` says if the login is none yet, remembers the consent for 30 days, and sends the browser to `redirect_uri` with `code`, `state` and `iss` (or `error=access_denied` when the login is no person in the database).",
    request_body(content = ConsentForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 302, description = "To the client's `redirect_uri`"),
        (status = 400, description = "The consent is unknown, used, expired or from another address (an HTML page)"),
        (status = 403, description = "`cross_site_form`: posted from another site's page", body = ErrorBody),
    )
)]
pub async fn allow(
    state: web::Data<AppState>,
    req: HttpRequest,
    origin: FormOrigin,
    form: web::Form<ConsentForm>,
) -> HttpResponse {
    if let Err(cross_site) = origin.require_own_pages() {
        return cross_site.error_response();
    }
    let ip = client_ip(&req, &state.trusted_proxies);
    let lang = Lang::from_query(form.lang.as_deref());
    let allowed = state
        .sign_in
        .allow(&state.clusters, &state.writers, &form.consent, &ip, state.clock.now())
        .await;
    match allowed {
        Ok(code) => code_to_client(&state, &code),
        Err(refusal) => refused(&state, &req, lang, refusal),
    }
}

#[derive(Debug, Deserialize)]
pub struct DenyQuery {
    consent: String,
}

#[utoipa::path(
    get, path = "/auth/authorize/deny", operation_id = "oauth_consent_deny", tag = "oauth", summary = "Deny the client (the consent page's link)",
    description = "Uses up the page's single-use token, from the browser it was shown to, and sends the browser to `redirect_uri` with `error=access_denied`, `state` and `iss`. No person is made and no code issued.",
    params(("consent" = String, Query, description = "The consent page's token")),
    responses(
        (status = 302, description = "To the client's `redirect_uri` with `error=access_denied`"),
        (status = 400, description = "The consent is unknown, used, expired or from another address (an HTML page)"),
    )
)]
pub async fn deny(state: web::Data<AppState>, req: HttpRequest, query: web::Query<DenyQuery>) -> HttpResponse {
    let ip = client_ip(&req, &state.trusted_proxies);
    let refusal = state.sign_in.deny(&query.consent, &ip, state.clock.now()).await;
    refused(&state, &req, Lang::En, refusal)
}
