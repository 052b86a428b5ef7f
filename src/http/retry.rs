//! The `Idempotency-Key` header of the writes under `/api/{db}/...`: a
//! client that lost an answer repeats the write with the same key, and the
//! writer applies it once (`write::IdempotencyKey`).

use std::future::{Ready, ready};

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest};
use sha2::{Digest, Sha256};
use utoipa::IntoParams;

use crate::error::{ApiError, ErrorCode};
use crate::service::{IdempotencyKey, is_valid_idempotency_key as is_valid_key};

pub const HEADER: &str = "Idempotency-Key";

/// The header as the OpenAPI document shows it on each write.
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
pub struct RetryHeader {
    /// Makes the write safe to repeat: a repeat with the same key by the same
    /// caller within 24 hours answers the first answer and writes nothing
    /// (1–255 visible ASCII characters; the same key with another request → 422).
    #[param(rename = "Idempotency-Key", example = "0b5c7f0e-3a1d-4c52-9d1e-2f6a7b8c9d0e")]
    pub idempotency_key: Option<String>,
}

/// A write's `Idempotency-Key`, if it came with one, and the request's
/// method and path, which its fingerprint covers with the body.
pub struct RetryKey(Option<(String, String)>);

impl RetryKey {
    /// The key for a write with `body`: a repeat must bring the same method,
    /// path and body, or it is refused as a reuse of the key.
    pub fn for_body(&self, body: &[u8]) -> Option<IdempotencyKey> {
        let (key, request) = self.0.as_ref()?;
        let mut digest = Sha256::new();
        digest.update(request.as_bytes());
        digest.update(b"\n");
        digest.update(body);
        Some(IdempotencyKey {
            key: key.clone(),
            fingerprint: hex::encode(digest.finalize()),
        })
    }
}

impl FromRequest for RetryKey {
    type Error = ApiError;
    type Future = Ready<Result<RetryKey, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let Some(value) = req.headers().get(HEADER) else {
            return ready(Ok(RetryKey(None)));
        };
        let key = value.to_str().ok().filter(|key| is_valid_key(key)).ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidIdempotencyKey,
                "Idempotency-Key must be 1 to 255 visible ASCII characters",
            )
        });
        ready(key.map(|key| RetryKey(Some((key.to_owned(), format!("{} {}", req.method(), req.path()))))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idempotency_key_is_1_to_255_visible_ascii_characters() {
        assert!(is_valid_key("a"));
        assert!(is_valid_key("0b5c7f0e-3a1d-4c52-9d1e-2f6a7b8c9d0e"));
        assert!(is_valid_key(&"k".repeat(255)));
        for bad in ["", "two words", "tab\there", "ключ", &"k".repeat(256)] {
            assert!(!is_valid_key(bad), "{bad:?}");
        }
    }

    #[test]
    fn the_fingerprint_covers_method_path_and_body() {
        let key = |request: &str| RetryKey(Some(("k".into(), request.into())));
        let create = key("POST /api/demo/entity").for_body(b"[]").unwrap();
        assert_eq!(create.key, "k");
        assert_eq!(
            create.fingerprint,
            key("POST /api/demo/entity").for_body(b"[]").unwrap().fingerprint
        );
        assert_ne!(
            create.fingerprint,
            key("POST /api/demo/entity").for_body(b"[{}]").unwrap().fingerprint
        );
        assert_ne!(
            create.fingerprint,
            key("POST /api/other/entity").for_body(b"[]").unwrap().fingerprint
        );
        assert!(RetryKey(None).for_body(b"[]").is_none());
    }
}
