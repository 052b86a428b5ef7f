//! `GET /api/auth/{provider}` and the e-mail provider's form: a person signs
//! in with a provider, and the browser gets a session token (JSON `{key}`,
//! or appended to `next`) to exchange at `GET /api/auth`.

use actix_web::{HttpRequest, HttpResponse, web};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::forms::FormOrigin;
use super::views::pages;
use super::{AppState, client_ip};
use crate::auth::login::{EMAIL_PROVIDER, PROVIDERS};
use crate::error::{ApiError, ErrorBody, ErrorCode};
use crate::mail;
use crate::service::rate_limits::RateLimits;
use crate::sign_in::email::LinkAsked;
use crate::sign_in::oidc::Returned;
use crate::sign_in::{Completed, Lang, check_invite};

#[derive(Debug, Deserialize)]
pub struct SignInQuery {
    next: Option<String>,
    lang: Option<String>,
    /// A mailed sign-in link's token (the e-mail provider).
    token: Option<String>,
    /// An invitation to accept once signed in.
    invite: Option<String>,
    /// An OpenID Connect provider's answer: `code` and `state`, or `error`.
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

/// A form POSTed to a provider: the e-mail provider's form, or an OpenID
/// Connect provider's answer sent as a form (Apple's `form_post`).
#[derive(Debug, Deserialize, ToSchema)]
pub struct SignInForm {
    /// The e-mail provider: where to mail the sign-in link.
    email: Option<String>,
    next: Option<String>,
    lang: Option<String>,
    invite: Option<String>,
    /// An OpenID Connect provider's answer.
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    /// Apple's profile of a first sign-in (JSON).
    user: Option<String>,
}

/// The session token, when no `next` was given.
#[derive(Serialize, ToSchema)]
pub struct TemporaryKey {
    /// A session token: 5 minutes, single use, from this address only; exchange it at `GET /api/auth`.
    key: String,
}

/// 404 for an unknown provider; 503 for one this server is not configured for.
fn provider_checked(state: &AppState, provider: &str) -> Result<(), ApiError> {
    if state.sign_in.offers(provider) {
        return Ok(());
    }
    if PROVIDERS.contains(&provider) {
        return Err(ApiError::new(
            ErrorCode::ProviderUnavailable,
            format!("Sign-in with {provider} is not configured on this server"),
        ));
    }
    Err(ApiError::not_found("Unknown sign-in provider"))
}

#[utoipa::path(
    get, path = "/api/auth/{provider}", operation_id = "sign_in", tag = "auth", summary = "Sign in with a provider",
    description = "Browser sign-in (`passkey`: see `GET /api/auth/passkey`). `e-mail`: without `token`, an HTML form asking for the address; the mailed link (the same path with `token`) completes the sign-in from the address that asked, once, within 15 minutes. `google`, `apple`, `smart-id`, `mobile-id`, `id-card` (OpenID Connect, when configured): a redirect to the provider, which sends the browser back here with `code` and `state` (Apple POSTs them) within 10 minutes. Completed: without `next`, JSON `{key}`; with `next`, a redirect to `next` with the session token appended. The session token lives 5 minutes, is single use and bound to the browser's address; exchange it at `GET /api/auth`.",
    params(
        ("provider" = String, Path, description = "`passkey`, `apple`, `google`, `e-mail`, `smart-id`, `mobile-id` or `id-card`", example = "e-mail"),
        ("next" = Option<String>, Query, description = "An https URL to send the browser to, with the session token appended", example = "https://app.example.com/signed-in?key="),
        ("lang" = Option<String>, Query, description = "`en` (default) or `et`: the page's language"),
        ("token" = Option<String>, Query, description = "A mailed sign-in link's token"),
        ("invite" = Option<String>, Query, description = "An invitation token, accepted once signed in"),
        ("code" = Option<String>, Query, description = "An OpenID Connect provider's answer: the authorization code"),
        ("state" = Option<String>, Query, description = "An OpenID Connect provider's answer: the request it answers"),
        ("error" = Option<String>, Query, description = "An OpenID Connect provider's answer: why it refused"),
    ),
    responses(
        (status = 200, description = "The provider's page (HTML), or the session token when no `next` was given",
         content((String = "text/html"), (TemporaryKey = "application/json", example = json!({"key": "eyJhbGciOiJIUzI1NiJ9.eyJ1c2UiOiJzZXNzaW9uIn0.c2ln"})))),
        (status = 302, description = "To the provider; or, signed in, to `next` with the session token appended"),
        (status = 400, description = "`next` is not an https URL; or the link or provider answer is unknown, used, expired, from another address, or refused (`invalid_sign_in`)", body = ErrorBody),
        (status = 404, description = "Unknown provider", body = ErrorBody),
        (status = 429, description = "Too many sign-ins from this address", body = ErrorBody),
        (status = 503, description = "The provider is not configured on this server, or cannot be reached", body = ErrorBody),
    )
)]
pub async fn start(
    state: web::Data<AppState>,
    req: HttpRequest,
    provider: web::Path<String>,
    query: web::Query<SignInQuery>,
) -> Result<HttpResponse, ApiError> {
    provider_checked(&state, &provider)?;
    let query = query.into_inner();
    let next = query
        .next
        .as_deref()
        .map(|next| state.sign_in.check_next(next))
        .transpose()?;
    query.invite.as_deref().map(check_invite).transpose()?;
    let ip = client_ip(&req, &state.trusted_proxies);
    let now = state.clock.now();
    if provider.as_str() != EMAIL_PROVIDER {
        if query.code.is_none() && query.state.is_none() && query.error.is_none() {
            let url = state
                .sign_in
                .start_oidc(&provider, next.map(str::to_owned), query.invite, &ip, now)
                .await?;
            return Ok(HttpResponse::Found()
                .insert_header(("Location", url))
                .insert_header(("Cache-Control", "no-store"))
                .finish());
        }
        let returned = Returned {
            code: query.code.as_deref(),
            state: query.state.as_deref(),
            error: query.error.as_deref(),
            apple_user: None,
        };
        let done = state.sign_in.finish_oidc(&provider, returned, &ip, now).await?;
        return signed_in(&state, done, &ip).await;
    }
    let Some(token) = &query.token else {
        let lang = Lang::from_query(query.lang.as_deref());
        return Ok(pages::email_form(lang, next, query.invite.as_deref()));
    };
    let opened = state.sign_in.open_link(token, &ip, now).await?;
    signed_in(&state, opened, &ip).await
}

#[utoipa::path(
    post, path = "/api/auth/{provider}", operation_id = "sign_in_form", tag = "auth", summary = "Mail a sign-in link, or take a provider's form answer",
    description = "`e-mail`: the form (`application/x-www-form-urlencoded`) mails one link to `email`, which signs in once, within 15 minutes, from this address; mails are limited per recipient and per client address (`limits.mails_per_hour_*`). `apple` (and any OpenID Connect provider answering by `form_post`): `code`, `state` or `error`, completing the sign-in as the GET does.",
    params(("provider" = String, Path, description = "`e-mail`, or an OpenID Connect provider answering by form", example = "e-mail")),
    request_body(content = SignInForm, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "An HTML page: the link is mailed; or, signed in without `next`, JSON `{key}`"),
        (status = 302, description = "Signed in: to `next` with the session token appended"),
        (status = 400, description = "Not an e-mail address, or `next` is not an https URL", body = ErrorBody),
        (status = 403, description = "`cross_site_form`: the e-mail form posted from another site's page", body = ErrorBody),
        (status = 404, description = "Unknown provider", body = ErrorBody),
        (status = 429, description = "Too many mails to this recipient or from this address", body = ErrorBody),
        (status = 503, description = "The mail server did not take the mail, or the provider is not configured", body = ErrorBody),
    )
)]
pub async fn send_link(
    state: web::Data<AppState>,
    limits: web::Data<RateLimits>,
    req: HttpRequest,
    provider: web::Path<String>,
    origin: FormOrigin,
    form: web::Form<SignInForm>,
) -> Result<HttpResponse, ApiError> {
    provider_checked(&state, &provider)?;
    let form = form.into_inner();
    let ip = client_ip(&req, &state.trusted_proxies);
    // an OpenID Connect provider's `form_post` comes from its own site
    if provider.as_str() != EMAIL_PROVIDER {
        let returned = Returned {
            code: form.code.as_deref(),
            state: form.state.as_deref(),
            error: form.error.as_deref(),
            apple_user: form.user.as_deref(),
        };
        let done = state
            .sign_in
            .finish_oidc(&provider, returned, &ip, state.clock.now())
            .await?;
        return signed_in(&state, done, &ip).await;
    }
    origin.require_own_pages()?;
    let next = form
        .next
        .as_deref()
        .map(|next| state.sign_in.check_next(next))
        .transpose()?
        .map(str::to_owned);
    form.invite.as_deref().map(check_invite).transpose()?;
    let email = mail::address(form.email.as_deref().unwrap_or_default())?;
    limits.charge_mail(email.as_ref(), &ip)?;
    let lang = Lang::from_query(form.lang.as_deref());
    let asked = LinkAsked {
        email,
        next,
        invite: form.invite,
        lang,
        client_ip: ip,
    };
    state.sign_in.send_link(asked, state.clock.now()).await?;
    Ok(pages::email_sent(lang))
}

#[derive(Debug, Deserialize)]
pub struct ChooserQuery {
    next: Option<String>,
    lang: Option<String>,
    invite: Option<String>,
}

#[utoipa::path(
    get, path = "/api/auth/choose", operation_id = "choose_sign_in", tag = "auth", summary = "Choose how to sign in",
    description = "An HTML page (English, or Estonian with `lang=et`) linking to each sign-in provider this server offers, carrying `next`, `lang` and `invite` along.",
    params(
        ("next" = Option<String>, Query, description = "An https URL to send the browser to once signed in"),
        ("lang" = Option<String>, Query, description = "`en` (default) or `et`"),
        ("invite" = Option<String>, Query, description = "An invitation token, accepted once signed in"),
    ),
    responses(
        (status = 200, description = "The page (HTML)"),
        (status = 400, description = "`next` is not an https URL", body = ErrorBody),
    )
)]
pub async fn choose(state: web::Data<AppState>, query: web::Query<ChooserQuery>) -> Result<HttpResponse, ApiError> {
    let next = query
        .next
        .as_deref()
        .map(|next| state.sign_in.check_next(next))
        .transpose()?;
    query.invite.as_deref().map(check_invite).transpose()?;
    let offered: Vec<&str> = PROVIDERS
        .into_iter()
        .filter(|provider| state.sign_in.offers(provider))
        .collect();
    let lang = Lang::from_query(query.lang.as_deref());
    Ok(pages::chooser(lang, &offered, next, query.invite.as_deref()))
}

/// The end of every provider's flow: a sign-in carrying an invitation goes
/// to the invitation's confirmation first; any other gets its session token.
async fn signed_in(state: &AppState, done: Completed, ip: &str) -> Result<HttpResponse, ApiError> {
    match state
        .sign_in
        .hold_for_confirmation(&state.jwt, &done, ip, state.clock.now())
        .await?
    {
        Some(held) => Ok(HttpResponse::Found()
            .insert_header(("Location", state.sign_in.confirmation_url(&held)))
            .insert_header(("Cache-Control", "no-store"))
            .finish()),
        None => hand_over(state, done, ip).await,
    }
}

/// A session token for `done`'s login (carrying its invitation, if any),
/// as JSON `{key}` or appended to its `next`.
async fn hand_over(state: &AppState, done: Completed, ip: &str) -> Result<HttpResponse, ApiError> {
    let key = state
        .sign_in
        .issue_session(&state.jwt, &done.login, done.invite.as_deref(), ip, state.clock.now())
        .await?;
    Ok(match done.next {
        None => HttpResponse::Ok()
            .insert_header(("Cache-Control", "no-store"))
            .json(TemporaryKey { key }),
        Some(next) => HttpResponse::Found()
            .insert_header(("Location", format!("{next}{key}")))
            .insert_header(("Cache-Control", "no-store"))
            .finish(),
    })
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct ConfirmationQuery {
    /// The held sign-in, as the sign-in's end named it.
    confirmation: String,
    lang: Option<String>,
}

#[utoipa::path(
    get, path = "/api/auth/invitation", operation_id = "invitation_confirmation", tag = "auth", summary = "Confirm the invitation a sign-in carries",
    description = "Where a sign-in that carries an invitation (`invite`) ends: an HTML page naming the database the invitation is to, with one form that accepts it. Nothing is linked before the person accepts.",
    params(
        ("confirmation" = String, Query, description = "The held sign-in, as the sign-in's end named it"),
        ("lang" = Option<String>, Query, description = "`en` (default) or `et`"),
    ),
    responses(
        (status = 200, description = "The page (HTML)", content_type = "text/html"),
        (status = 400, description = "The confirmation is unknown, used, expired or from another address (`invalid_sign_in`)", body = ErrorBody),
    )
)]
pub async fn invitation_page(
    state: web::Data<AppState>,
    req: HttpRequest,
    query: web::Query<ConfirmationQuery>,
) -> Result<HttpResponse, ApiError> {
    let ip = client_ip(&req, &state.trusted_proxies);
    let db = state
        .sign_in
        .confirmation_database(&query.confirmation, &ip, state.clock.now())
        .await?;
    let lang = Lang::from_query(query.lang.as_deref());
    Ok(pages::invitation_confirmation(lang, &db, &query.confirmation))
}

#[utoipa::path(
    post, path = "/api/auth/invitation", operation_id = "invitation_accept", tag = "auth", summary = "Accept the invitation a sign-in carries",
    description = "The confirmation page's form, from that page only: ends the sign-in as any provider's end does (JSON `{key}`, or a redirect to `next` with the session token appended); the invitation is linked when the session token is exchanged at `GET /api/auth`.",
    request_body(content = ConfirmationQuery, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "Without `next`: the session token", body = TemporaryKey),
        (status = 302, description = "To `next` with the session token appended"),
        (status = 400, description = "The confirmation is unknown, used, expired or from another address (`invalid_sign_in`)", body = ErrorBody),
        (status = 403, description = "`cross_site_form`: posted from another site's page", body = ErrorBody),
    )
)]
pub async fn accept_invitation(
    state: web::Data<AppState>,
    req: HttpRequest,
    origin: FormOrigin,
    form: web::Form<ConfirmationQuery>,
) -> Result<HttpResponse, ApiError> {
    origin.require_own_pages()?;
    let ip = client_ip(&req, &state.trusted_proxies);
    let done = state
        .sign_in
        .confirm_invitation(&form.confirmation, &ip, state.clock.now())
        .await?;
    hand_over(&state, done, &ip).await
}
