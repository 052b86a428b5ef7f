//! Credentials and tokens: API keys (scrypt hashes) and JWTs.

pub mod api_key;
pub mod clock;
pub mod jwt;
