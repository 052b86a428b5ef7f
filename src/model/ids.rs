//! Entity and value ids: 24 lowercase hex characters in the MongoDB ObjectId
//! layout (4 bytes of Unix seconds, 5 random bytes fixed per process, a 3-byte
//! counter), so ids sort by creation time and ids exported from the original
//! service keep working.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use rand::RngCore;

static PROCESS_BYTES: OnceLock<[u8; 5]> = OnceLock::new();
static COUNTER: OnceLock<AtomicU32> = OnceLock::new();

/// A fresh id, unique across processes (random process bytes) and within one
/// (counter), ordered by the second it was made in.
pub fn new_id() -> String {
    let process = PROCESS_BYTES.get_or_init(|| {
        let mut bytes = [0u8; 5];
        rand::thread_rng().fill_bytes(&mut bytes);
        bytes
    });
    let counter = COUNTER
        .get_or_init(|| AtomicU32::new(rand::thread_rng().next_u32()))
        .fetch_add(1, Ordering::Relaxed);
    let seconds = chrono::Utc::now().timestamp() as u32;
    let mut bytes = [0u8; 12];
    bytes[..4].copy_from_slice(&seconds.to_be_bytes());
    bytes[4..9].copy_from_slice(process);
    bytes[9..].copy_from_slice(&counter.to_be_bytes()[1..]);
    hex::encode(bytes)
}

/// Whether `text` has the shape of an id (24 lowercase hex characters).
pub fn is_valid_id(text: &str) -> bool {
    text.len() == 24 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_ids_are_valid_unique_and_increasing() {
        let a = new_id();
        let b = new_id();
        assert!(is_valid_id(&a) && is_valid_id(&b));
        assert_ne!(a, b);
        assert!(a[..8] <= b[..8]);
    }

    #[test]
    fn malformed_ids_are_rejected() {
        assert!(!is_valid_id("abc"));
        assert!(!is_valid_id("5F1A2B3C4D5E6F7A8B9C0D1E"));
        assert!(!is_valid_id("5f1a2b3c4d5e6f7a8b9c0d1g"));
        assert!(is_valid_id("5f1a2b3c4d5e6f7a8b9c0d1e"));
    }
}
