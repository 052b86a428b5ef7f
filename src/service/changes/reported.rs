//! The entities a stream has reported as matching, at most [`REPORTED`],
//! kept compactly: a stream of every change remembers each entity it was
//! told of, and a process holds a thousand streams. An id of 24 lowercase
//! hex digits (every id eds makes, and the original's) is kept as its 96
//! bits, any other as a 127-bit digest that no such id can equal.

use std::collections::HashSet;

use sha2::{Digest, Sha256};

/// Entities a stream remembers having reported as matching.
pub(super) const REPORTED: usize = 10_000;

#[derive(Default)]
pub(super) struct Reported {
    ids: HashSet<u128>,
    /// Whether the bound was reached and some were left out.
    overflowed: bool,
}

impl Reported {
    /// The entities `ids` (those matching as a filtered stream opens).
    pub(super) fn new(ids: impl IntoIterator<Item = String>) -> Reported {
        let mut reported = Reported::default();
        for id in ids {
            reported.remember(&id);
        }
        reported
    }

    pub(super) fn remember(&mut self, id: &str) {
        let key = key(id);
        if self.ids.len() < REPORTED {
            self.ids.insert(key);
        } else if !self.ids.contains(&key) {
            self.overflowed = true;
        }
    }

    /// Forgets entity `id`; answers whether it was remembered.
    pub(super) fn forget(&mut self, id: &str) -> bool {
        self.ids.remove(&key(id))
    }

    pub(super) fn overflowed(&self) -> bool {
        self.overflowed
    }
}

fn key(id: &str) -> u128 {
    let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    if id.len() == 24
        && id.bytes().all(hex)
        && let Ok(bits) = u128::from_str_radix(id, 16)
    {
        return bits;
    }
    let digest = Sha256::digest(id.as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    u128::from_be_bytes(bytes) | 1 << 127
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_remembers_ids_of_any_form_up_to_its_bound() {
        let mut reported = Reported::new(["6571f3a4c2b9e8d7f6a5b4c3".to_owned(), "imported-7".to_owned()]);
        assert!(reported.forget("6571f3a4c2b9e8d7f6a5b4c3"));
        assert!(!reported.forget("6571f3a4c2b9e8d7f6a5b4c3"), "once");
        assert!(!reported.forget("6571F3A4C2B9E8D7F6A5B4C3"), "ids differ by case");
        assert!(reported.forget("imported-7"));
        for n in 0..REPORTED {
            reported.remember(&format!("{n:024x}"));
        }
        assert!(!reported.overflowed());
        reported.remember(&format!("{:024x}", REPORTED));
        assert!(reported.overflowed());
    }
}
