//! The OAuth 2.1 server's endpoints a client calls itself, without the
//! person's browser: metadata (RFC 8414), dynamic registration (RFC 7591)
//! and the token endpoint. Their errors are the JSON error body with
//! `error` = the RFC code and `error_description`.

use actix_web::{HttpResponse, web};

use super::AppState;
use super::views::oauth::{Registered, Registration, ServerMetadata, TokenAnswer, TokenForm, oauth_error};
use crate::auth::oauth::{self, ACCESS_TOKEN_SECONDS};
use crate::auth::scope::SCOPES_SUPPORTED;
use crate::error::{ApiError, ErrorBody, ErrorCode};
use crate::sign_in::oauth::Redemption;

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
        authorization_response_iss_parameter_supported: true,
        client_id_metadata_document_supported: true,
        scopes_supported: SCOPES_SUPPORTED,
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
        Ok(redeemed) => HttpResponse::Ok()
            .insert_header(("Cache-Control", "no-store"))
            .json(TokenAnswer {
                access_token: redeemed.access_token,
                token_type: "Bearer",
                expires_in: ACCESS_TOKEN_SECONDS,
                scope: redeemed.scope,
            }),
        Err(error) => oauth_error(&error),
    }
}
