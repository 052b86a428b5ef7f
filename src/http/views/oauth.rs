//! The OAuth server's bodies: metadata, registration, the consent and token
//! forms, the token answer, its JSON errors (the error body plus
//! `error_description`), and authorization responses (redirects).

use actix_web::HttpResponse;
use actix_web::http::header;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use crate::error::ApiError;

/// An OAuth error as JSON: the error body, `error_description` added.
pub fn oauth_error(error: &ApiError) -> HttpResponse {
    HttpResponse::build(error.status())
        .insert_header(("Cache-Control", "no-store"))
        .json(json!({
            "status": error.status().as_u16(),
            "error": error.code.as_str(),
            "message": error.message,
            "error_description": error.message,
        }))
}

/// An authorization response: the browser sent to `redirect_uri` with
/// `pairs` added to its query, and `iss` (RFC 9207), the issuer as the
/// metadata names it.
pub fn authorization_response(redirect_uri: &str, pairs: &[(&str, Option<&str>)], issuer: &str) -> HttpResponse {
    let location = match url::Url::parse(redirect_uri) {
        Ok(mut url) => {
            {
                let mut query = url.query_pairs_mut();
                for (name, value) in pairs {
                    if let Some(value) = value {
                        query.append_pair(name, value);
                    }
                }
                query.append_pair("iss", issuer);
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

#[derive(Serialize, ToSchema)]
pub struct ServerMetadata {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub registration_endpoint: String,
    pub response_types_supported: [&'static str; 1],
    pub grant_types_supported: [&'static str; 1],
    pub code_challenge_methods_supported: [&'static str; 1],
    pub token_endpoint_auth_methods_supported: [&'static str; 1],
    /// Every authorization response carries `iss` (RFC 9207).
    pub authorization_response_iss_parameter_supported: bool,
    /// A `client_id` may be the https URL of the client's metadata document.
    pub client_id_metadata_document_supported: bool,
    /// `read` (reads as the person does) and `write` (writes too).
    pub scopes_supported: [&'static str; 2],
}

#[derive(Deserialize, ToSchema)]
pub struct Registration {
    /// Cut to 200 characters.
    pub client_name: Option<String>,
    /// 1 to 10 absolute URIs, any scheme, no fragment.
    pub redirect_uris: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub struct Registered {
    /// Signed; holds the redirect URIs; valid one year: store it, do not register at every start.
    pub client_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_name: Option<String>,
    pub redirect_uris: Vec<String>,
    pub client_id_issued_at: i64,
    pub token_endpoint_auth_method: &'static str,
    pub grant_types: [&'static str; 1],
    pub response_types: [&'static str; 1],
}

/// The consent page's form: submitted as it is, it allows.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ConsentForm {
    /// The single-use token the page carries.
    pub consent: String,
    /// `en` or `et`, for a page shown if the consent cannot be taken.
    pub lang: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct TokenForm {
    /// `authorization_code`
    pub grant_type: Option<String>,
    pub code: Option<String>,
    pub redirect_uri: Option<String>,
    pub code_verifier: Option<String>,
    /// If given, must be the client the code was issued to.
    pub client_id: Option<String>,
    /// If given, must be the authorization's `resource`.
    pub resource: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct TokenAnswer {
    /// An access JWT for the authorization's database, bound to no address; it cannot be refreshed.
    pub access_token: String,
    pub token_type: &'static str,
    pub expires_in: i64,
    /// The scopes granted, space-separated: `read`, `write` or `read write`.
    pub scope: String,
}
