//! The OAuth 2.1 server's stateless parts: registered clients (the
//! `client_id` is a signed document holding its redirect URIs, so no client
//! table is kept and a tampered id is unknown), PKCE (S256 only), and the
//! database a `resource` indicator names.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::jwt::JwtKeys;
use crate::error::{ApiError, ErrorCode};

/// A client id is valid a year from its registration.
pub const CLIENT_LIFETIME_SECONDS: i64 = 365 * 24 * 60 * 60;
/// The access token's lifetime, as `expires_in` tells it.
pub const ACCESS_TOKEN_SECONDS: i64 = crate::auth::jwt::TOKEN_LIFETIME_SECONDS;
/// A registration's redirect URIs: 1 to 10.
pub const MAX_REDIRECT_URIS: usize = 10;
/// `client_name` is cut to this many characters.
pub const MAX_CLIENT_NAME_CHARS: usize = 200;
/// The longest redirect URI taken (bytes): the client id carries them all.
const MAX_REDIRECT_URI_BYTES: usize = 1000;
/// The `use` of a client id's claims, which no token has.
const USE_CLIENT: &str = "oauth_client";
/// The `use` of a client a metadata document describes: never signed, so
/// such a client can never pass for a registered one.
const USE_METADATA_DOCUMENT: &str = "client_metadata_document";

/// A registered client, as its id carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Client {
    #[serde(rename = "use")]
    token_use: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_name: Option<String>,
    pub redirect_uris: Vec<String>,
    pub iat: i64,
    pub exp: i64,
}

/// Registers a client: checks its metadata and answers it with its id.
pub fn register(
    jwt: &JwtKeys,
    client_name: Option<&str>,
    redirect_uris: Vec<String>,
    now: DateTime<Utc>,
) -> Result<(String, Client), ApiError> {
    let client = checked_client(USE_CLIENT, client_name, redirect_uris, now)?;
    Ok((jwt.sign(&client)?, client))
}

/// A client its metadata document describes (the document's URL is its
/// id), checked as a registration is; nothing is signed.
pub fn described_client(
    client_name: Option<&str>,
    redirect_uris: Vec<String>,
    now: DateTime<Utc>,
) -> Result<Client, ApiError> {
    checked_client(USE_METADATA_DOCUMENT, client_name, redirect_uris, now)
}

/// A client from its metadata, checked: 1 to 10 redirect URIs, each
/// absolute, and the name cut to its length.
fn checked_client(
    token_use: &str,
    client_name: Option<&str>,
    redirect_uris: Vec<String>,
    now: DateTime<Utc>,
) -> Result<Client, ApiError> {
    if redirect_uris.is_empty() || redirect_uris.len() > MAX_REDIRECT_URIS {
        return Err(ApiError::new(
            ErrorCode::InvalidRedirectUri,
            "redirect_uris must hold 1 to 10 absolute URIs",
        ));
    }
    if let Some(bad) = redirect_uris.iter().find(|uri| !is_redirect_uri(uri)) {
        let shown: String = bad.chars().take(100).collect();
        return Err(ApiError::new(
            ErrorCode::InvalidRedirectUri,
            format!("Not an absolute URI without a fragment: {shown:?}"),
        ));
    }
    Ok(Client {
        token_use: token_use.to_owned(),
        client_name: client_name.map(|name| name.chars().take(MAX_CLIENT_NAME_CHARS).collect()),
        redirect_uris,
        iat: now.timestamp(),
        exp: now.timestamp() + CLIENT_LIFETIME_SECONDS,
    })
}

/// The client `client_id` names, if this service signed it and it has not
/// expired.
pub fn client(jwt: &JwtKeys, client_id: &str, now: DateTime<Utc>) -> Option<Client> {
    let client: Client = jwt.verify_signed(client_id).ok()?;
    (client.token_use == USE_CLIENT && client.exp > now.timestamp()).then_some(client)
}

/// Schemes a browser runs or renders in place instead of handing to an
/// app: a redirect there would run the client's script with a code in hand.
const SCRIPT_SCHEMES: [&str; 3] = ["javascript", "data", "vbscript"];

/// An absolute URI of any scheme (apps register their own) but the
/// script ones, without a fragment (RFC 6749 §3.1.2), of a sensible length.
/// `myapp:callback`-style URIs some native apps register are taken too.
fn is_redirect_uri(uri: &str) -> bool {
    // the parser lowercases the scheme: `JavaScript:` is caught as well
    uri.len() <= MAX_REDIRECT_URI_BYTES
        && url::Url::parse(uri).is_ok_and(|url| url.fragment().is_none() && !SCRIPT_SCHEMES.contains(&url.scheme()))
}

/// Whether `verifier` answers `challenge` (S256: the challenge is the
/// verifier's SHA-256, base64url). Compared in constant time.
pub fn verifier_matches(verifier: &str, challenge: &str) -> bool {
    let digest = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    constant_time_eq(digest.as_bytes(), challenge.as_bytes())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

/// The database a `resource` indicator (RFC 8707) names: a full URL on one
/// of `hosts` (this service's own); the path segment after a leading
/// `/api/`, else the first one. Another host names none.
pub fn resource_database(resource: &str, hosts: &[&str]) -> Option<String> {
    let url = url::Url::parse(resource).ok()?;
    let host = url.host_str()?;
    if !hosts.contains(&host) {
        return None;
    }
    let mut segments = url.path_segments()?.filter(|segment| !segment.is_empty());
    let first = segments.next()?;
    let db = if first == "api" { segments.next()? } else { first };
    Some(db.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    fn keys() -> JwtKeys {
        JwtKeys::new(b"secret", NaiveDate::from_ymd_opt(2026, 11, 6).unwrap())
    }

    #[test]
    fn a_client_id_carries_its_redirect_uris_for_a_year_and_a_tampered_one_is_unknown() {
        let now = Utc::now();
        let uris = vec!["https://app.example/cb".to_owned(), "myapp:callback".to_owned()];
        let (id, registered) = register(&keys(), Some(&"n".repeat(300)), uris.clone(), now).unwrap();
        assert_eq!(registered.client_name.as_ref().map(|n| n.chars().count()), Some(200));
        let found = client(&keys(), &id, now).unwrap();
        assert_eq!(found.redirect_uris, uris);
        assert_eq!(client(&keys(), &id, now + chrono::Duration::days(366)), None, "a year");
        let mut tampered = id.clone();
        tampered.insert(id.len() / 2, 'x');
        assert_eq!(client(&keys(), &tampered, now), None);
        let other = JwtKeys::new(b"other", NaiveDate::from_ymd_opt(2026, 11, 6).unwrap());
        assert_eq!(client(&other, &id, now), None);
    }

    #[test]
    fn redirect_uris_are_one_to_ten_absolute_uris_without_fragments() {
        let now = Utc::now();
        let refused = |uris: Vec<&str>| {
            let uris = uris.into_iter().map(str::to_owned).collect();
            register(&keys(), None, uris, now).unwrap_err().code
        };
        assert_eq!(refused(vec![]), ErrorCode::InvalidRedirectUri);
        assert_eq!(refused(vec!["https://a.example/cb"; 11]), ErrorCode::InvalidRedirectUri);
        for bad in [
            "/relative",
            "https://a.example/cb#x",
            "javascript:alert(1)",
            "JavaScript:alert(1)",
            "javascript://example.com/%0aalert(1)",
            "data:text/html,<script>alert(1)</script>",
            "DATA:text/html;base64,PHNjcmlwdD4=",
            "vbscript:msgbox(1)",
            "VBScript://x/msgbox",
            "not a uri",
        ] {
            assert_eq!(refused(vec![bad]), ErrorCode::InvalidRedirectUri, "{bad}");
        }
        for good in [
            "http://127.0.0.1:33418/callback",
            "com.example.app:/oauth",
            "cursor://cb",
        ] {
            assert!(register(&keys(), None, vec![good.to_owned()], now).is_ok(), "{good}");
        }
    }

    #[test]
    fn only_the_s256_of_the_verifier_matches() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert!(verifier_matches(
            verifier,
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        ));
        assert!(!verifier_matches(verifier, verifier), "plain is refused");
        assert!(!verifier_matches(
            "other",
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        ));
    }

    #[test]
    fn a_resource_names_its_database_on_this_services_hosts_only() {
        let hosts = ["eds.example", "api.eds.example"];
        assert_eq!(
            resource_database("https://eds.example/api/books/mcp", &hosts).as_deref(),
            Some("books")
        );
        assert_eq!(
            resource_database("https://api.eds.example/books", &hosts).as_deref(),
            Some("books")
        );
        assert_eq!(resource_database("https://other.example/api/books/mcp", &hosts), None);
        assert_eq!(resource_database("https://eds.example/", &hosts), None);
        assert_eq!(resource_database("not a url", &hosts), None);
    }
}
