//! The `Eds-Consistency` header: the cluster and commit position of a write,
//! signed so that a client can only send back a position the server gave.
//! Value: `CLUSTER:POSITION:SIGNATURE`, the position in hex, the signature
//! HMAC-SHA256 under `auth.jwt_secret`, in hex.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The header's name.
pub const HEADER: &str = "Eds-Consistency";
/// The name of the cluster `database.url` points at.
pub const HOME_CLUSTER: &str = "home";

/// What a request carries about commit positions: the one its header
/// vouched for, and the one of the write it made (0: none).
#[derive(Default)]
pub struct Consistency {
    /// The position the client has seen (a verified header), 0 without one.
    pub seen: u64,
    /// The position of this request's write, once it committed; shared with
    /// the front end that puts it in the answer.
    pub written: Arc<AtomicU64>,
}

impl Consistency {
    /// Records that this request's write committed at `position`.
    pub fn wrote(&self, position: u64) {
        self.written.fetch_max(position, Ordering::Relaxed);
    }
}

/// Signs and checks header values under one secret.
#[derive(Clone)]
pub struct Signer {
    secret: Vec<u8>,
}

impl Signer {
    pub fn new(secret: &[u8]) -> Signer {
        Signer {
            secret: secret.to_vec(),
        }
    }

    /// The header value for a write committed at `position` on `cluster`.
    pub fn sign(&self, cluster: &str, position: u64) -> String {
        let signed = format!("{cluster}:{position:x}");
        let signature = hex::encode(self.mac(&signed).finalize().into_bytes());
        format!("{signed}:{signature}")
    }

    /// The position a header value vouches for on `cluster`; `None` for a
    /// malformed one, another cluster's, or one this secret did not sign.
    pub fn verify(&self, cluster: &str, value: &str) -> Option<u64> {
        let (signed, signature) = value.trim().rsplit_once(':')?;
        let (their_cluster, position) = signed.rsplit_once(':')?;
        let signature = hex::decode(signature).ok()?;
        // constant-time comparison
        self.mac(signed).verify_slice(&signature).ok()?;
        if their_cluster != cluster {
            return None;
        }
        u64::from_str_radix(position, 16).ok()
    }

    fn mac(&self, signed: &str) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.secret).expect("HMAC takes keys of any length");
        // a domain of its own: no other signature of the secret passes as one
        mac.update(b"eds-consistency\0");
        mac.update(signed.as_bytes());
        mac
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_position_verifies_on_its_cluster_only() {
        let signer = Signer::new(b"secret");
        let value = signer.sign(HOME_CLUSTER, 0x16B3740);
        assert_eq!(signer.verify(HOME_CLUSTER, &value), Some(0x16B3740));
        assert_eq!(signer.verify("other", &value), None);
    }

    #[test]
    fn a_forged_or_foreign_header_is_ignored() {
        let signer = Signer::new(b"secret");
        let value = signer.sign(HOME_CLUSTER, 10);
        let raised = value.replacen(":a:", ":ffff:", 1);
        assert_ne!(raised, value);
        assert_eq!(signer.verify(HOME_CLUSTER, &raised), None);
        assert_eq!(Signer::new(b"another").verify(HOME_CLUSTER, &value), None);
        for malformed in ["", "home", "home:10", "home:10:zz", "::"] {
            assert_eq!(signer.verify(HOME_CLUSTER, malformed), None, "{malformed}");
        }
    }
}
