//! API keys: 32 random characters shown once; stored only as an scrypt hash
//! plus a short digest that finds the row without trying every hash.

use rand::Rng;
use rand::distributions::Alphanumeric;
use scrypt::Scrypt;
use scrypt::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use sha2::{Digest, Sha256};

pub const KEY_LENGTH: usize = 32;
/// Hex characters of SHA-256 kept for lookup: enough to make collisions rare,
/// far too few to help recover a key.
const LOOKUP_LENGTH: usize = 12;

/// A freshly generated key with what is stored of it.
#[derive(Clone)]
pub struct GeneratedKey {
    pub plain: String,
    pub hash: String,
    pub lookup: String,
}

/// Generates a key and hashes it (slow by design: call off the async workers).
pub fn generate() -> GeneratedKey {
    let plain: String = rand::rngs::OsRng
        .sample_iter(&Alphanumeric)
        .take(KEY_LENGTH)
        .map(char::from)
        .collect();
    let salt = SaltString::generate(&mut rand::rngs::OsRng);
    let params = scrypt::Params::new(15, 8, 1, 32).expect("fixed scrypt parameters are valid");
    let hash = Scrypt
        .hash_password_customized(plain.as_bytes(), None, None, params, &salt)
        .expect("scrypt hashing of a short key cannot fail")
        .to_string();
    GeneratedKey {
        lookup: lookup(&plain),
        plain,
        hash,
    }
}

/// Whether `candidate` has the form of a key at all.
pub fn looks_like_key(candidate: &str) -> bool {
    candidate.len() == KEY_LENGTH && candidate.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// The lookup digest stored beside the hash.
pub fn lookup(plain: &str) -> String {
    hex::encode(Sha256::digest(plain.as_bytes()))[..LOOKUP_LENGTH].to_owned()
}

/// Checks `plain` against a stored hash in constant time (slow by design).
pub fn verify(plain: &str, hash: &str) -> bool {
    PasswordHash::new(hash)
        .map(|parsed| Scrypt.verify_password(plain.as_bytes(), &parsed).is_ok())
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_verify_and_others_do_not() {
        let key = generate();
        assert!(looks_like_key(&key.plain));
        assert!(verify(&key.plain, &key.hash));
        assert!(!verify(&generate().plain, &key.hash));
        assert!(!key.hash.contains(&key.plain));
        assert_eq!(key.lookup, lookup(&key.plain));
    }
}
