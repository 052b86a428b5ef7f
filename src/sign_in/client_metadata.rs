//! The clients that client ID metadata documents describe: a `client_id`
//! that is a document's URL is fetched under the target rules
//! ([`Fetcher`]), checked ([`client_from_document`]) and kept as its
//! caching headers allow (at most a day); a failure is remembered for 5
//! minutes, and each client address may cause at most 10 fetches a minute.
//! Every refusal is the unknown-client 400: until its document is read,
//! nothing says where the client's redirect URI is, so nothing goes back.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use moka::future::Cache;

use crate::auth::client_metadata::{cache_lifetime, client_from_document, document_url};
use crate::auth::oauth::Client;
use crate::config::OAuthSettings;
use crate::error::{ApiError, ErrorCode};
use crate::net::fetch::Fetcher;

/// A fetch, lookup to last byte, takes at most this long.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// A document is read up to this many bytes; a longer one is refused.
const MAX_DOCUMENT_BYTES: usize = 64 * 1024;
/// A failed fetch or check is not tried again for this long.
const FAILURE_MEMORY: Duration = Duration::from_secs(5 * 60);
/// Fetches each client address may cause per window.
const FETCHES_PER_ADDRESS: u32 = 10;
const FETCH_WINDOW: Duration = Duration::from_secs(60);
/// Memory for the kept documents and failures, weighed in bytes of their
/// URLs and contents; and the most client addresses counted at once.
const KNOWN_BYTES: u64 = 8 * 1024 * 1024;
const FAILED_BYTES: u64 = 2 * 1024 * 1024;
const COUNTED_ADDRESSES: u64 = 100_000;

/// A client read from its document, kept for the lifetime its headers gave.
#[derive(Clone)]
struct Known {
    client: Arc<Client>,
    lifetime: Duration,
}

/// Why a document was not loaded.
enum NotLoaded {
    /// The client address used up its fetches: not the document's failure,
    /// so not remembered for it.
    TooManyFetches,
    /// The fetch or the checks failed: remembered.
    Refused(String),
}

struct KeptForItsLifetime;

impl moka::Expiry<String, Known> for KeptForItsLifetime {
    fn expire_after_create(&self, _url: &String, known: &Known, _at: Instant) -> Option<Duration> {
        Some(known.lifetime)
    }
}

pub struct ClientDocuments {
    fetcher: Fetcher,
    known: Cache<String, Known>,
    /// Why a document failed, by its URL.
    failed: Cache<String, Arc<str>>,
    /// Fetches in the current window, by client address; the window starts
    /// at an address's first fetch and ends when its entry expires.
    fetches: Cache<String, Arc<AtomicU32>>,
}

impl ClientDocuments {
    /// From `oauth.allow_private_client_metadata` and the PEM roots of
    /// `oauth.client_metadata_ca_file`, read now.
    pub fn from_settings(settings: &OAuthSettings) -> Result<ClientDocuments, String> {
        let extra_roots = match settings.client_metadata_ca_file.as_str() {
            "" => Vec::new(),
            path => {
                let pem =
                    std::fs::read(path).map_err(|error| format!("oauth.client_metadata_ca_file {path}: {error}"))?;
                reqwest::Certificate::from_pem_bundle(&pem)
                    .ok()
                    .filter(|roots| !roots.is_empty())
                    .ok_or_else(|| format!("oauth.client_metadata_ca_file {path}: no PEM certificate"))?
            }
        };
        let fetcher = Fetcher {
            allow_internal: settings.allow_private_client_metadata,
            extra_roots,
            timeout: FETCH_TIMEOUT,
            max_bytes: MAX_DOCUMENT_BYTES,
        };
        Ok(ClientDocuments {
            fetcher,
            known: Cache::builder()
                .max_capacity(KNOWN_BYTES)
                .weigher(|url: &String, known: &Known| weight(url.len() + client_bytes(&known.client)))
                .expire_after(KeptForItsLifetime)
                .build(),
            failed: Cache::builder()
                .max_capacity(FAILED_BYTES)
                .weigher(|url: &String, why: &Arc<str>| weight(url.len() + why.len()))
                .time_to_live(FAILURE_MEMORY)
                .build(),
            fetches: Cache::builder()
                .max_capacity(COUNTED_ADDRESSES)
                .time_to_live(FETCH_WINDOW)
                .build(),
        })
    }

    /// Whether `client_id` names a metadata document (plain http to
    /// loopback only where private targets are allowed: tests).
    pub fn document_url(&self, client_id: &str) -> Option<url::Url> {
        document_url(client_id, self.fetcher.allow_internal)
    }

    /// The client the document at `url` (which `client_id` names)
    /// describes, for an authorization from `client_ip`; 400
    /// `invalid_client` when it cannot be had.
    pub async fn client(
        &self,
        client_id: &str,
        url: &url::Url,
        client_ip: &str,
        now: DateTime<Utc>,
    ) -> Result<Arc<Client>, ApiError> {
        if let Some(why) = self.failed.get(client_id).await {
            return Err(unknown_client(&why));
        }
        // authorizations of one document at once share one fetch and its outcome
        let loaded = self
            .known
            .try_get_with(client_id.to_owned(), self.load(client_id, url, client_ip, now));
        match loaded.await {
            Ok(known) => Ok(known.client),
            Err(refusal) => match &*refusal {
                NotLoaded::TooManyFetches => Err(unknown_client(
                    "was not fetched: too many client metadata fetches from this address, try again in a minute",
                )),
                NotLoaded::Refused(why) => {
                    self.failed.insert(client_id.to_owned(), Arc::from(why.as_str())).await;
                    Err(unknown_client(why))
                }
            },
        }
    }

    /// Fetches and checks the document, counted against `client_ip`.
    async fn load(
        &self,
        client_id: &str,
        url: &url::Url,
        client_ip: &str,
        now: DateTime<Utc>,
    ) -> Result<Known, NotLoaded> {
        let counter = self
            .fetches
            .get_with(client_ip.to_owned(), async { Arc::new(AtomicU32::new(0)) })
            .await;
        if counter.fetch_add(1, Ordering::Relaxed) >= FETCHES_PER_ADDRESS {
            return Err(NotLoaded::TooManyFetches);
        }
        let (client, lifetime) = self.fetch(client_id, url, now).await.map_err(|why| {
            tracing::info!(client_id, why, "client metadata document refused");
            NotLoaded::Refused(why)
        })?;
        Ok(Known {
            client: Arc::new(client),
            // a document not to be kept expires at once, after its waiters had it
            lifetime: lifetime.unwrap_or(Duration::ZERO),
        })
    }

    async fn fetch(
        &self,
        client_id: &str,
        url: &url::Url,
        now: DateTime<Utc>,
    ) -> Result<(Client, Option<Duration>), String> {
        let fetched = self
            .fetcher
            .get(url)
            .await
            .map_err(|failure| format!("could not be used: {}", failure.describe()))?;
        let client =
            client_from_document(client_id, &fetched.body, now).map_err(|why| format!("could not be used: {why}"))?;
        Ok((client, cache_lifetime(fetched.cache_control.as_deref())))
    }
}

fn unknown_client(why: &str) -> ApiError {
    ApiError::new(
        ErrorCode::InvalidClient,
        format!("Unknown client_id: its client metadata document {why}"),
    )
}

fn client_bytes(client: &Client) -> usize {
    client.client_name.as_ref().map_or(0, String::len) + client.redirect_uris.iter().map(String::len).sum::<usize>()
}

fn weight(bytes: usize) -> u32 {
    u32::try_from(bytes).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(client_metadata_ca_file: &str) -> OAuthSettings {
        OAuthSettings {
            allow_private_client_metadata: false,
            client_metadata_ca_file: client_metadata_ca_file.to_owned(),
        }
    }

    #[test]
    fn a_ca_file_that_cannot_be_read_or_holds_no_certificate_stops_the_start() {
        assert!(ClientDocuments::from_settings(&settings("")).is_ok(), "none");
        let missing = ClientDocuments::from_settings(&settings("/no/such/roots.pem"))
            .err()
            .unwrap();
        assert!(
            missing.starts_with("oauth.client_metadata_ca_file /no/such/roots.pem"),
            "{missing}"
        );
        let empty = std::env::temp_dir().join(format!("eds-no-roots-{}.pem", std::process::id()));
        std::fs::write(&empty, "not a certificate").unwrap();
        let refused = ClientDocuments::from_settings(&settings(&empty.display().to_string())).err();
        std::fs::remove_file(&empty).unwrap();
        assert!(refused.unwrap().ends_with("no PEM certificate"));
    }

    #[test]
    fn plain_http_client_ids_are_documents_only_where_private_documents_are_allowed() {
        let id = "http://127.0.0.1:4000/client.json";
        assert_eq!(
            ClientDocuments::from_settings(&settings("")).unwrap().document_url(id),
            None
        );
        let allowing = OAuthSettings {
            allow_private_client_metadata: true,
            ..settings("")
        };
        assert!(
            ClientDocuments::from_settings(&allowing)
                .unwrap()
                .document_url(id)
                .is_some()
        );
    }
}
