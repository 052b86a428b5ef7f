//! Credentials and tokens: API keys (scrypt hashes), JWTs, the logins
//! identity providers vouch for, and the OAuth server's signed clients
//! and the clients metadata documents describe.

pub mod api_key;
pub mod client_metadata;
pub mod clock;
pub mod jwt;
pub mod login;
pub mod oauth;
pub mod scope;
pub mod subject;
