//! A small document fetched from a URL a stranger names: the host resolved
//! once and checked ([`resolve_checked`]), the connection pinned to the
//! checked addresses, no proxy, no redirect followed, the whole exchange
//! (lookup included) within a time limit and the body read until a size
//! limit, never further.

use std::time::Duration;

use super::targets::{TargetRefusal, pinned_client, resolve_checked};

/// Why a fetch failed, in words safe to show (no address is named: the
/// answer must not map a network for whoever asks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchFailure {
    /// Not an http(s) URL with a host, or plain http where it is not allowed.
    Scheme,
    /// The host resolves to no address, or to one the rules refuse.
    Target(TargetRefusal),
    /// No answer within the time limit.
    TimedOut,
    /// The connection or TLS failed.
    Unreachable,
    /// A redirect: never followed.
    Redirect,
    /// An answer other than 200.
    Status(u16),
    /// The body is over the size limit.
    TooLarge,
}

impl FetchFailure {
    pub fn describe(&self) -> String {
        match self {
            FetchFailure::Scheme => "not an https URL".to_owned(),
            FetchFailure::Target(TargetRefusal::Unresolved) => "its host does not resolve".to_owned(),
            FetchFailure::Target(TargetRefusal::Refused(_)) => "its host is a private or local address".to_owned(),
            FetchFailure::TimedOut => "no answer in time".to_owned(),
            FetchFailure::Unreachable => "it could not be reached".to_owned(),
            FetchFailure::Redirect => "it answered with a redirect, which is not followed".to_owned(),
            FetchFailure::Status(status) => format!("it answered {status}"),
            FetchFailure::TooLarge => "it is too large".to_owned(),
        }
    }
}

/// A fetched document.
#[derive(Debug)]
pub struct Fetched {
    pub body: Vec<u8>,
    /// The answer's `Cache-Control`, if any.
    pub cache_control: Option<String>,
}

/// Fetches under the target rules.
#[derive(Clone)]
pub struct Fetcher {
    /// Internal addresses (and plain http to loopback) allowed: tests.
    pub allow_internal: bool,
    /// Roots trusted beside the public ones.
    pub extra_roots: Vec<reqwest::Certificate>,
    /// The whole exchange, lookup to last byte.
    pub timeout: Duration,
    pub max_bytes: usize,
}

impl Fetcher {
    /// GETs `url`: https, or plain http to loopback when internal targets
    /// are allowed; 200 only, at most `max_bytes`, within `timeout`.
    pub async fn get(&self, url: &url::Url) -> Result<Fetched, FetchFailure> {
        tokio::time::timeout(self.timeout, self.get_unbounded_in_time(url))
            .await
            .unwrap_or(Err(FetchFailure::TimedOut))
    }

    async fn get_unbounded_in_time(&self, url: &url::Url) -> Result<Fetched, FetchFailure> {
        let (Some(host), Some(port)) = (url.host(), url.port_or_known_default()) else {
            return Err(FetchFailure::Scheme);
        };
        let addresses = resolve_checked(&host, port, self.allow_internal)
            .await
            .map_err(FetchFailure::Target)?;
        let plain_http_allowed = self.allow_internal && addresses.iter().all(|address| address.ip().is_loopback());
        match url.scheme() {
            "https" => {}
            "http" if plain_http_allowed => {}
            _ => return Err(FetchFailure::Scheme),
        }
        let mut client = pinned_client(&host, &addresses);
        for root in &self.extra_roots {
            client = client.add_root_certificate(root.clone());
        }
        let client = client.build().map_err(|_| FetchFailure::Unreachable)?;
        let mut response = client
            .get(url.clone())
            .send()
            .await
            .map_err(|_| FetchFailure::Unreachable)?;
        let status = response.status();
        if status.is_redirection() {
            return Err(FetchFailure::Redirect);
        }
        if status != reqwest::StatusCode::OK {
            return Err(FetchFailure::Status(status.as_u16()));
        }
        if response
            .content_length()
            .is_some_and(|length| length > self.max_bytes as u64)
        {
            return Err(FetchFailure::TooLarge);
        }
        let cache_control = response
            .headers()
            .get(reqwest::header::CACHE_CONTROL)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|_| FetchFailure::Unreachable)? {
            if body.len() + chunk.len() > self.max_bytes {
                return Err(FetchFailure::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Fetched { body, cache_control })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr};

    fn fetcher(allow_internal: bool) -> Fetcher {
        Fetcher {
            allow_internal,
            extra_roots: Vec::new(),
            timeout: Duration::from_secs(1),
            max_bytes: 1024,
        }
    }

    async fn get(fetcher: Fetcher, url: &str) -> Result<Fetched, FetchFailure> {
        fetcher.get(&url::Url::parse(url).unwrap()).await
    }

    #[tokio::test]
    async fn plain_http_goes_to_loopback_only_even_where_internal_targets_are_allowed() {
        // refused before any connection: nothing listens at 10.0.0.1 here
        assert_eq!(
            get(fetcher(true), "http://10.0.0.1:9/doc").await.err(),
            Some(FetchFailure::Scheme)
        );
        assert_eq!(
            get(fetcher(true), "ftp://127.0.0.1/doc").await.err(),
            Some(FetchFailure::Scheme)
        );
    }

    #[tokio::test]
    async fn an_internal_target_is_refused_before_the_scheme_is_looked_at() {
        let refused = FetchFailure::Target(TargetRefusal::Refused(IpAddr::V4(Ipv4Addr::new(169, 254, 169, 254))));
        assert_eq!(
            get(fetcher(false), "https://169.254.169.254/latest").await.err(),
            Some(refused)
        );
    }
}
