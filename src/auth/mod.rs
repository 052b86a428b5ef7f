//! Credentials and tokens: API keys (scrypt hashes), JWTs, and the logins
//! identity providers vouch for.

pub mod api_key;
pub mod clock;
pub mod jwt;
pub mod login;
