//! One signed POST of an event to a webhook's URL, under the target rules
//! of `net::targets`: the host resolved once, every address checked, the
//! connection pinned to the checked addresses; no proxy, no redirect
//! followed, the whole exchange within the time limit.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::net::targets::{TargetRefusal, pinned_client, resolve_checked};

/// Targets whose clients are kept at most; past it they start afresh.
const MAX_CLIENTS: usize = 256;

/// A webhook target: its host and the addresses it resolved to and passed
/// the target rules with. A host that resolves elsewhere later is another
/// target, with a client pinned to its new addresses.
type Target = (String, Vec<SocketAddr>);

/// The clients kept per target.
static CLIENTS: LazyLock<Mutex<HashMap<Target, reqwest::Client>>> = LazyLock::new(Mutex::default);

/// What the signature's key is written as: `whsec_` and base64 of 32 bytes.
pub const SECRET_PREFIX: &str = "whsec_";

/// A request ready to go.
pub struct Signed {
    pub message_id: String,
    pub timestamp: i64,
    pub body: String,
    /// `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`.
    pub signature: String,
}

/// Signs `body` as the Standard Webhooks scheme does; `None` when `secret`
/// is not a `whsec_` key.
pub fn sign(secret: &str, message_id: &str, timestamp: i64, body: String) -> Option<Signed> {
    let key = STANDARD.decode(secret.strip_prefix(SECRET_PREFIX)?).ok()?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).ok()?;
    mac.update(format!("{message_id}.{timestamp}.{body}").as_bytes());
    let signature = format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()));
    Some(Signed {
        message_id: message_id.to_owned(),
        timestamp,
        body,
        signature,
    })
}

/// A new signing secret: 32 random bytes.
pub fn new_secret() -> String {
    use rand::RngCore;
    let mut key = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut key);
    format!("{SECRET_PREFIX}{}", STANDARD.encode(key))
}

/// How an attempt ended: the answer's status if there was one, the error
/// (in words safe to show its owner: no address is named) if it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub status: Option<u16>,
    pub error: Option<String>,
    pub duration: Duration,
}

impl Outcome {
    pub fn delivered(&self) -> bool {
        self.error.is_none()
    }
}

/// POSTs `signed` to `url`; a 2xx answer delivers it, anything else fails.
pub async fn post(url: &str, signed: &Signed, allow_private: bool, timeout: Duration) -> Outcome {
    let started = Instant::now();
    let result = tokio::time::timeout(timeout, exchange(url, signed, allow_private))
        .await
        .unwrap_or_else(|_| Err((None, "no answer in time".to_owned())));
    let duration = started.elapsed();
    match result {
        Ok(status) => Outcome {
            status: Some(status),
            error: None,
            duration,
        },
        Err((status, error)) => Outcome {
            status,
            error: Some(error),
            duration,
        },
    }
}

async fn exchange(url: &str, signed: &Signed, allow_private: bool) -> Result<u16, (Option<u16>, String)> {
    let fail = |error: &str| (None, error.to_owned());
    let url = url::Url::parse(url).map_err(|_| fail("not an http or https URL"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(fail("not an http or https URL"));
    }
    let (Some(host), Some(port)) = (url.host(), url.port_or_known_default()) else {
        return Err(fail("not an http or https URL"));
    };
    let addresses = resolve_checked(&host, port, allow_private)
        .await
        .map_err(|refusal| match refusal {
            TargetRefusal::Unresolved => fail("its host does not resolve"),
            TargetRefusal::Refused(_) => fail("its host is a private or local address"),
        })?;
    let client = client_for(&host, addresses).map_err(|_| fail("it could not be reached"))?;
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header("webhook-id", &signed.message_id)
        .header("webhook-timestamp", signed.timestamp.to_string())
        .header("webhook-signature", &signed.signature)
        .body(signed.body.clone())
        .send()
        .await
        .map_err(|_| fail("it could not be reached"))?;
    let status = response.status();
    if status.is_success() {
        Ok(status.as_u16())
    } else if status.is_redirection() {
        Err((
            Some(status.as_u16()),
            "it answered with a redirect, which is not followed".to_owned(),
        ))
    } else {
        Err((Some(status.as_u16()), format!("it answered {}", status.as_u16())))
    }
}

/// The client for `host` pinned to `addresses` (as just resolved and
/// checked), kept for the next delivery there: a client built per delivery
/// set up TLS and a new connection each time.
fn client_for(host: &url::Host<&str>, mut addresses: Vec<SocketAddr>) -> reqwest::Result<reqwest::Client> {
    addresses.sort_unstable();
    let key = (host.to_string(), addresses);
    let mut clients = CLIENTS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(client) = clients.get(&key) {
        return Ok(client.clone());
    }
    let client = pinned_client(host, &key.1).build()?;
    if clients.len() >= MAX_CLIENTS {
        clients.clear();
    }
    clients.insert(key, client.clone());
    Ok(client)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_matches_the_standard_webhooks_example() {
        // the example of the Standard Webhooks specification
        let signed = sign(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            r#"{"test": 2432232314}"#.to_owned(),
        )
        .unwrap();
        assert_eq!(signed.signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn a_new_secret_is_32_bytes_in_base64_after_its_prefix() {
        let secret = new_secret();
        let key = STANDARD.decode(secret.strip_prefix(SECRET_PREFIX).unwrap()).unwrap();
        assert_eq!(key.len(), 32);
        assert_ne!(secret, new_secret());
        assert!(sign("not a key", "m", 1, String::new()).is_none());
    }
}
