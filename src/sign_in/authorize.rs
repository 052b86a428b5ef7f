//! The checks of an authorization request, without I/O: which problems the
//! person is shown (an unknown client or redirect URI: sending them back
//! would hand the answer to whoever forged the link) and which go back to the
//! client, and the caps that keep a pending authorization small.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::Lang;
use super::oauth::{Authorization, digest};
use crate::auth::login::PROVIDERS;
use crate::auth::oauth::{Client, resource_database};
use crate::auth::scope;
use crate::error::{ApiError, ErrorCode};

/// A PKCE S256 challenge: base64url of a SHA-256, unpadded.
const CODE_CHALLENGE_CHARS: usize = 43;
/// The longest `state` kept (and echoed) in bytes.
pub const MAX_STATE_BYTES: usize = 1024;

/// The query of `GET /auth/authorize`, as given.
#[derive(Debug, Default, Clone, Copy)]
pub struct AuthorizeParams<'a> {
    pub redirect_uri: Option<&'a str>,
    pub response_type: Option<&'a str>,
    pub code_challenge: Option<&'a str>,
    pub code_challenge_method: Option<&'a str>,
    pub state: Option<&'a str>,
    pub db: Option<&'a str>,
    pub resource: Option<&'a str>,
    pub provider: Option<&'a str>,
    /// The scopes asked, space-separated.
    pub scope: Option<&'a str>,
    pub lang: Lang,
}

/// What the server knows around a request: the client its `client_id` names
/// (with the id's digest), its own hosts, and the providers it offers.
pub struct AuthorizeContext<'a> {
    pub client: Option<(&'a Client, String)>,
    pub hosts: &'a [&'a str],
    pub offers: &'a dyn Fn(&str) -> bool,
}

/// An authorization request that passed the checks, and the sign-in it goes
/// to (`choose`: the method chooser).
#[derive(Debug)]
pub struct Checked {
    pub authorization: Authorization,
    pub provider: String,
}

/// Why an authorization request is refused, and to whom that is said.
#[derive(Debug)]
pub enum AuthorizeRefusal {
    /// A 400 for the person: the client or its redirect URI is unknown.
    ToPerson(ApiError),
    /// A redirect back to the client's `redirect_uri`.
    ToClient(ClientRefusal),
}

/// An error the client receives at its redirect URI.
#[derive(Debug)]
pub struct ClientRefusal {
    pub redirect_uri: String,
    pub error: &'static str,
    pub description: String,
    /// The client's `state`, if within the limit.
    pub state: Option<String>,
}

impl ClientRefusal {
    /// `error` for the client of `authorization`.
    pub fn to(authorization: &Authorization, error: &'static str, description: impl Into<String>) -> ClientRefusal {
        ClientRefusal {
            redirect_uri: authorization.redirect_uri.clone(),
            error,
            description: description.into(),
            state: authorization.state.clone(),
        }
    }
}

/// Checks an authorization request: the client and redirect URI first (a
/// refusal for the person), then everything else (a refusal for the client).
pub fn check_authorize_request(
    params: AuthorizeParams<'_>,
    context: &AuthorizeContext<'_>,
) -> Result<Checked, AuthorizeRefusal> {
    let Some((client, client_digest)) = &context.client else {
        let error = ApiError::new(ErrorCode::InvalidClient, "Unknown or expired client_id");
        return Err(AuthorizeRefusal::ToPerson(error));
    };
    let Some(redirect_uri) = params
        .redirect_uri
        .filter(|uri| client.redirect_uris.iter().any(|registered| registered == uri))
    else {
        let error = ApiError::new(
            ErrorCode::InvalidClient,
            "redirect_uri is not registered for this client",
        );
        return Err(AuthorizeRefusal::ToPerson(error));
    };
    let state = params.state.filter(|state| state.len() <= MAX_STATE_BYTES);
    let back = |error: &'static str, description: &str| {
        AuthorizeRefusal::ToClient(ClientRefusal {
            redirect_uri: redirect_uri.to_owned(),
            error,
            description: description.to_owned(),
            state: state.map(str::to_owned),
        })
    };
    if params.state.is_some() && state.is_none() {
        return Err(back("invalid_request", "state must be at most 1024 bytes"));
    }
    if params.response_type != Some("code") {
        return Err(back("unsupported_response_type", "response_type must be code"));
    }
    let Some(code_challenge) = params.code_challenge.filter(|challenge| !challenge.is_empty()) else {
        return Err(back("invalid_request", "code_challenge is required (PKCE)"));
    };
    if params.code_challenge_method != Some("S256") {
        return Err(back("invalid_request", "code_challenge_method must be S256"));
    }
    if !is_s256_challenge(code_challenge) {
        return Err(back(
            "invalid_request",
            "code_challenge must be 43 base64url characters (S256)",
        ));
    }
    let Some(scope) = scope::granted(params.scope) else {
        return Err(back("invalid_scope", "scope must hold read, write or both"));
    };
    let db = match (params.db, params.resource) {
        (Some(db), _) => Some(db.to_owned()),
        (None, Some(resource)) => resource_database(resource, context.hosts),
        (None, None) => None,
    };
    let Some(db) = db else {
        return Err(back(
            "invalid_request",
            "db, or a resource naming a database, is required",
        ));
    };
    let provider = match params.provider {
        None => "choose",
        Some(provider) if PROVIDERS.contains(&provider) && (context.offers)(provider) => provider,
        Some(_) => return Err(back("invalid_request", "Unknown or unavailable provider")),
    };
    let authorization = Authorization {
        client_digest: client_digest.clone(),
        client_name: client.client_name.clone(),
        client_host: None,
        redirect_uri: redirect_uri.to_owned(),
        code_challenge: code_challenge.to_owned(),
        state: state.map(str::to_owned),
        db,
        resource_digest: params.resource.map(digest),
        scope,
        lang: params.lang.code().to_owned(),
    };
    Ok(Checked {
        authorization,
        provider: provider.to_owned(),
    })
}

/// 43 base64url characters that decode: what base64url(SHA-256) is.
fn is_s256_challenge(challenge: &str) -> bool {
    challenge.len() == CODE_CHALLENGE_CHARS && URL_SAFE_NO_PAD.decode(challenge).is_ok_and(|bytes| bytes.len() == 32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::jwt::JwtKeys;
    use chrono::{NaiveDate, Utc};

    const REDIRECT: &str = "https://client.example/cb";
    const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

    fn client() -> Client {
        let keys = JwtKeys::new(b"secret", NaiveDate::from_ymd_opt(2026, 11, 6).unwrap());
        crate::auth::oauth::register(&keys, Some("App"), vec![REDIRECT.to_owned()], Utc::now())
            .unwrap()
            .1
    }

    fn params() -> AuthorizeParams<'static> {
        AuthorizeParams {
            redirect_uri: Some(REDIRECT),
            response_type: Some("code"),
            code_challenge: Some(CHALLENGE),
            code_challenge_method: Some("S256"),
            state: Some("st4te"),
            db: Some("demo"),
            provider: Some("e-mail"),
            ..AuthorizeParams::default()
        }
    }

    fn check(params: AuthorizeParams<'_>, client: Option<&Client>) -> Result<Checked, AuthorizeRefusal> {
        let offers = |provider: &str| provider == "e-mail";
        let context = AuthorizeContext {
            client: client.map(|client| (client, digest("the-client-id"))),
            hosts: &["eds.example"],
            offers: &offers,
        };
        check_authorize_request(params, &context)
    }

    /// The error and echoed state of a refusal to the client.
    fn to_client(refusal: Result<Checked, AuthorizeRefusal>) -> (&'static str, Option<String>) {
        match refusal {
            Err(AuthorizeRefusal::ToClient(refusal)) => {
                assert_eq!(refusal.redirect_uri, REDIRECT);
                (refusal.error, refusal.state)
            }
            other => panic!("not a refusal to the client: {other:?}"),
        }
    }

    #[test]
    fn an_unknown_client_or_redirect_uri_is_told_to_the_person_never_the_client() {
        let client = client();
        for refused in [
            check(params(), None),
            check(
                AuthorizeParams {
                    redirect_uri: Some("https://evil.example/cb"),
                    ..params()
                },
                Some(&client),
            ),
            check(
                AuthorizeParams {
                    redirect_uri: None,
                    ..params()
                },
                Some(&client),
            ),
        ] {
            match refused {
                Err(AuthorizeRefusal::ToPerson(error)) => assert_eq!(error.code, ErrorCode::InvalidClient),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn a_valid_request_keeps_digests_of_the_client_id_and_resource_and_the_full_scope() {
        let client = client();
        let resource = "https://eds.example/api/books/mcp";
        let given = AuthorizeParams {
            db: None,
            resource: Some(resource),
            provider: None,
            ..params()
        };
        let checked = check(given, Some(&client)).unwrap();
        assert_eq!(checked.provider, "choose");
        let authorization = checked.authorization;
        assert_eq!(authorization.client_digest, digest("the-client-id"));
        assert_eq!(authorization.client_name.as_deref(), Some("App"));
        assert_eq!(authorization.db, "books");
        assert_eq!(authorization.resource_digest, Some(digest(resource)));
        assert_eq!(authorization.scope, scope::FULL_SCOPE);
        assert_eq!(authorization.state.as_deref(), Some("st4te"));
    }

    #[test]
    fn the_scope_asked_is_kept_without_unknown_values() {
        let client = client();
        let given = AuthorizeParams {
            scope: Some("openid read"),
            ..params()
        };
        assert_eq!(check(given, Some(&client)).unwrap().authorization.scope, "read");
    }

    #[test]
    fn the_challenge_must_be_43_base64url_characters() {
        let client = client();
        for bad in [
            "",
            "short",
            &"A".repeat(44),
            &"A".repeat(4000),
            &format!("{}+", &CHALLENGE[..42]),
        ] {
            let given = AuthorizeParams {
                code_challenge: Some(bad),
                ..params()
            };
            assert_eq!(
                to_client(check(given, Some(&client))),
                ("invalid_request", Some("st4te".to_owned())),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_state_over_1024_bytes_is_refused_and_not_echoed() {
        let client = client();
        let longest = "s".repeat(MAX_STATE_BYTES);
        let within = AuthorizeParams {
            state: Some(&longest),
            ..params()
        };
        assert_eq!(
            check(within, Some(&client)).unwrap().authorization.state,
            Some(longest.clone())
        );
        let over = format!("{longest}s");
        let given = AuthorizeParams {
            state: Some(&over),
            response_type: Some("token"),
            ..params()
        };
        assert_eq!(to_client(check(given, Some(&client))), ("invalid_request", None));
    }

    #[test]
    fn other_problems_go_back_to_the_client_with_the_state() {
        let client = client();
        for (given, error) in [
            (
                AuthorizeParams {
                    response_type: Some("token"),
                    ..params()
                },
                "unsupported_response_type",
            ),
            (
                AuthorizeParams {
                    code_challenge_method: Some("plain"),
                    ..params()
                },
                "invalid_request",
            ),
            (AuthorizeParams { db: None, ..params() }, "invalid_request"),
            (
                AuthorizeParams {
                    db: None,
                    resource: Some("https://other.example/api/books/mcp"),
                    ..params()
                },
                "invalid_request",
            ),
            (
                AuthorizeParams {
                    provider: Some("google"),
                    ..params()
                },
                "invalid_request",
            ),
            (
                AuthorizeParams {
                    scope: Some("openid profile"),
                    ..params()
                },
                "invalid_scope",
            ),
        ] {
            assert_eq!(
                to_client(check(given, Some(&client))),
                (error, Some("st4te".to_owned())),
                "{given:?}"
            );
        }
    }
}
