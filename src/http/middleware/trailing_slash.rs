//! A trailing `/` on an `/api/...` path is ignored: the original's clients
//! ask `GET /api/{db}/` for `GET /api/{db}`.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Uri;
use actix_web::http::uri::PathAndQuery;
use actix_web::middleware::Next;

/// Routes the request as if its path had no trailing `/`. It wraps the
/// others, so rate limits and metrics see the path that is routed.
pub async fn trim(
    mut req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> actix_web::Result<ServiceResponse<impl MessageBody>> {
    if let Some(uri) = trimmed(req.uri()) {
        req.match_info_mut().get_mut().update(&uri);
        req.head_mut().uri = uri;
    }
    next.call(req).await
}

/// The URI without the trailing slashes of an `/api/...` path; `None` when
/// there are none (the root `/` and other paths are left as they are).
fn trimmed(uri: &Uri) -> Option<Uri> {
    let path = uri.path();
    if !path.starts_with("/api/") || !path.ends_with('/') {
        return None;
    }
    let path = path.trim_end_matches('/');
    let path_and_query = match uri.query() {
        Some(query) => format!("{path}?{query}"),
        None => path.to_owned(),
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(PathAndQuery::try_from(path_and_query).ok()?);
    Uri::from_parts(parts).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trim(uri: &str) -> Option<String> {
        trimmed(&uri.parse().unwrap()).map(|uri| uri.to_string())
    }

    #[test]
    fn api_paths_lose_their_trailing_slashes_and_keep_the_query() {
        assert_eq!(trim("/api/demo/").as_deref(), Some("/api/demo"));
        assert_eq!(
            trim("/api/demo/entity//?props=name&limit=5").as_deref(),
            Some("/api/demo/entity?props=name&limit=5")
        );
    }

    #[test]
    fn other_paths_are_left_alone() {
        for uri in ["/", "/docs/", "/api/demo", "/api/demo/entity?x=/"] {
            assert_eq!(trim(uri), None, "{uri}");
        }
    }
}
