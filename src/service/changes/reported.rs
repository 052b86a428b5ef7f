//! The entities a group of streams has reported as matching, at most
//! [`REPORTED`], each with the change it was last reported at, kept
//! compactly: a stream of every change remembers each entity it was told
//! of, and a process holds a thousand streams. An id of 24 lowercase hex
//! digits (every id eds makes, and the original's) is kept as its 96 bits,
//! any other as a 127-bit digest that no such id can equal.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use sha2::{Digest, Sha256};

/// Entities a group remembers having reported as matching.
pub(super) const REPORTED: usize = 10_000;

/// The change an entity was known at when it matched as a filtered stream
/// opened: before any change a stream is handed.
pub(super) const AT_OPENING: i64 = i64::MIN;

#[derive(Default)]
pub(super) struct Reported {
    /// Entity → the change it was last reported at.
    ids: HashMap<u128, i64>,
    /// Whether the bound was reached and some were left out.
    overflowed: bool,
}

impl Reported {
    /// The entities `ids` (those matching as a filtered stream opens).
    pub(super) fn new(ids: impl IntoIterator<Item = String>) -> Reported {
        let mut reported = Reported::default();
        for id in ids {
            reported.remember(&id, AT_OPENING);
        }
        reported
    }

    /// Notes that entity `id` was reported at change `at`.
    pub(super) fn remember(&mut self, id: &str, at: i64) {
        let key = key(id);
        if let Some(known) = self.ids.get_mut(&key) {
            *known = at;
        } else if self.ids.len() < REPORTED {
            self.ids.insert(key, at);
        } else {
            self.overflowed = true;
        }
    }

    /// Forgets entity `id`; answers the change it was last reported at, if
    /// it was remembered.
    pub(super) fn forget(&mut self, id: &str) -> Option<i64> {
        self.ids.remove(&key(id))
    }

    pub(super) fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// Takes in what `other` remembers (a group of the same caller and
    /// query that reached the same change): the later report of each entity.
    pub(super) fn absorb(&mut self, other: Reported) {
        self.overflowed |= other.overflowed;
        for (key, at) in other.ids {
            let room = self.ids.len() < REPORTED;
            match self.ids.entry(key) {
                Entry::Occupied(mut known) => *known.get_mut() = (*known.get()).max(at),
                Entry::Vacant(vacant) if room => {
                    vacant.insert(at);
                }
                Entry::Vacant(_) => self.overflowed = true,
            }
        }
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
        assert_eq!(reported.forget("6571f3a4c2b9e8d7f6a5b4c3"), Some(AT_OPENING));
        assert_eq!(reported.forget("6571f3a4c2b9e8d7f6a5b4c3"), None, "once");
        assert_eq!(reported.forget("6571F3A4C2B9E8D7F6A5B4C3"), None, "ids differ by case");
        reported.remember("imported-7", 12);
        assert_eq!(reported.forget("imported-7"), Some(12), "the last report");
        for n in 0..REPORTED {
            reported.remember(&format!("{n:024x}"), 1);
        }
        assert!(!reported.overflowed());
        reported.remember(&format!("{:024x}", 0), 2);
        assert!(!reported.overflowed(), "a known entity reported again");
        reported.remember(&format!("{:024x}", REPORTED), 3);
        assert!(reported.overflowed());
    }

    #[test]
    fn a_group_absorbing_another_keeps_the_later_report_of_each_entity() {
        let mut older = Reported::default();
        older.remember("a", 5);
        older.remember("b", 9);
        let mut newer = Reported::default();
        newer.remember("b", 7);
        newer.remember("c", 8);
        older.absorb(newer);
        assert_eq!(older.forget("a"), Some(5));
        assert_eq!(older.forget("b"), Some(9));
        assert_eq!(older.forget("c"), Some(8));
        assert!(!older.overflowed());
    }
}
