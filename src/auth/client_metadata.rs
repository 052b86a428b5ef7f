//! Client ID metadata documents, without I/O: which `client_id` is the URL
//! of a document describing its client, what the document must hold, and
//! how long a fetched one may be kept.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Deserialize;

use super::oauth::{Client, described_client};

/// A fetched document is kept at most this long, whatever it says.
pub const MAX_CACHE_SECONDS: u64 = 24 * 60 * 60;

/// The URL a metadata-document `client_id` names: an `https` URL (plain
/// `http` when `allow_http`) with a host and a path, without userinfo,
/// fragment or dot segments. Anything else is no such client id.
pub fn document_url(client_id: &str, allow_http: bool) -> Option<url::Url> {
    let url = url::Url::parse(client_id).ok()?;
    let scheme_allowed = url.scheme() == "https" || (allow_http && url.scheme() == "http");
    let has_path = url.path() != "/";
    let no_userinfo = url.username().is_empty() && url.password().is_none();
    let no_fragment = url.fragment().is_none() && !client_id.contains('#');
    (scheme_allowed && url.host().is_some() && has_path && no_userinfo && no_fragment && !has_dot_segment(client_id))
        .then_some(url)
}

/// Whether the path of `client_id`, as written, has a `.` or `..` segment
/// (plain or percent-encoded): the parser would resolve them, and the
/// document fetched would not be the one the id names.
fn has_dot_segment(client_id: &str) -> bool {
    let after_scheme = client_id.split_once("://").map_or(client_id, |(_, rest)| rest);
    let path = after_scheme.split(['?']).next().unwrap_or_default();
    path.split('/').skip(1).any(|segment| {
        let decoded = segment.to_ascii_lowercase().replace("%2e", ".");
        decoded == "." || decoded == ".."
    })
}

#[derive(Deserialize)]
struct Document {
    client_id: String,
    #[serde(default)]
    client_name: Option<serde_json::Value>,
    redirect_uris: Vec<String>,
}

/// The client a fetched document describes, if it is JSON naming
/// `client_id` byte for byte and 1 to 10 absolute redirect URIs; else why not.
pub fn client_from_document(client_id: &str, body: &[u8], now: DateTime<Utc>) -> Result<Client, String> {
    let document: Document =
        serde_json::from_slice(body).map_err(|_| "it is not JSON with client_id and redirect_uris".to_owned())?;
    if document.client_id != client_id {
        return Err("its client_id is not its URL".to_owned());
    }
    // a name that is not a string is no name: the client's own words are text
    let name = document.client_name.as_ref().and_then(serde_json::Value::as_str);
    described_client(name, document.redirect_uris, now).map_err(|error| error.message.into_owned())
}

/// How long a document may be kept, from its `Cache-Control`: `max-age`,
/// at most a day; `no-store`, `no-cache`, or no `max-age` at all: not kept,
/// so a document without caching headers is fetched again next time (the
/// publisher said nothing, and a stale list of redirect URIs is the risk).
pub fn cache_lifetime(cache_control: Option<&str>) -> Option<Duration> {
    let mut max_age = None;
    for directive in cache_control?.split(',').map(str::trim) {
        let lower = directive.to_ascii_lowercase();
        if lower == "no-store" || lower == "no-cache" {
            return None;
        }
        if let Some(seconds) = lower.strip_prefix("max-age=") {
            max_age = seconds.trim_matches('"').parse::<u64>().ok();
        }
    }
    max_age
        .filter(|seconds| *seconds > 0)
        .map(|seconds| Duration::from_secs(seconds.min(MAX_CACHE_SECONDS)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "https://app.example/oauth/client.json";

    #[test]
    fn a_document_client_id_is_an_https_url_with_a_path_and_nothing_hidden() {
        assert!(document_url(ID, false).is_some());
        assert!(document_url("https://app.example/c?v=1", false).is_some());
        for refused in [
            "https://app.example",
            "https://app.example/",
            "http://app.example/client.json",
            "https://user@app.example/client.json",
            "https://user:pw@app.example/client.json",
            "https://app.example/client.json#x",
            "https://app.example/client.json#",
            "https://app.example/a/../client.json",
            "https://app.example/./client.json",
            "https://app.example/a/%2e%2E/client.json",
            "https://app.example/a/.%2e",
            "ftp://app.example/client.json",
            "eyJhbGciOiJIUzI1NiJ9.e30.sig",
            "not a url",
        ] {
            assert_eq!(document_url(refused, false), None, "{refused}");
        }
        assert!(document_url("http://127.0.0.1:4000/client.json", true).is_some());
        assert!(
            document_url("https://app.example/a..b/c.d", false).is_some(),
            "dots inside a segment"
        );
    }

    #[test]
    fn the_document_names_its_own_url_and_one_to_ten_absolute_redirect_uris() {
        let now = Utc::now();
        let document = |body: serde_json::Value| client_from_document(ID, body.to_string().as_bytes(), now);
        let client = document(serde_json::json!({
            "client_id": ID, "client_name": "n".repeat(250), "redirect_uris": ["https://app.example/cb"]
        }))
        .unwrap();
        assert_eq!(client.client_name.map(|name| name.chars().count()), Some(200));
        assert_eq!(client.redirect_uris, ["https://app.example/cb"]);
        for refused in [
            serde_json::json!({"client_id": format!("{ID}/"), "redirect_uris": ["https://app.example/cb"]}),
            serde_json::json!({"client_id": ID.to_uppercase(), "redirect_uris": ["https://app.example/cb"]}),
            serde_json::json!({"client_id": ID}),
            serde_json::json!({"client_id": ID, "redirect_uris": []}),
            serde_json::json!({"client_id": ID, "redirect_uris": vec!["https://app.example/cb"; 11]}),
            serde_json::json!({"client_id": ID, "redirect_uris": ["/relative"]}),
            serde_json::json!({"client_id": ID, "redirect_uris": ["javascript:alert(1)"]}),
        ] {
            assert!(document(refused.clone()).is_err(), "{refused}");
        }
        assert!(client_from_document(ID, b"<html>", now).is_err());
        let unnamed = document(serde_json::json!({
            "client_id": ID, "client_name": 7, "redirect_uris": ["https://app.example/cb"]
        }));
        assert_eq!(unnamed.unwrap().client_name, None);
    }

    #[test]
    fn a_document_is_kept_for_its_max_age_at_most_a_day_and_not_without_one() {
        assert_eq!(cache_lifetime(Some("max-age=300")), Some(Duration::from_secs(300)));
        assert_eq!(
            cache_lifetime(Some("public, Max-Age=999999")),
            Some(Duration::from_secs(MAX_CACHE_SECONDS))
        );
        assert_eq!(cache_lifetime(Some("max-age=300, no-store")), None);
        assert_eq!(cache_lifetime(Some("no-cache, max-age=300")), None);
        assert_eq!(cache_lifetime(Some("max-age=0")), None);
        assert_eq!(cache_lifetime(Some("public")), None);
        assert_eq!(cache_lifetime(None), None);
    }
}
