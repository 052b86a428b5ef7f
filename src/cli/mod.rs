//! The operator commands behind `eds`: database listing and usage, key
//! revocation, export and import.

pub mod admin;
pub mod export;
