//! The bodies the API answers and takes, each `Serialize + ToSchema`: the
//! handlers answer with these types and the OpenAPI document describes them
//! from the same types, so the two cannot drift apart. Entity documents and
//! their values are built as JSON by `crate::view` (property names are user
//! data): the types here carry them and describe their shape. Errors are
//! `crate::error::ErrorBody`. The sign-in pages' HTML is made in `pages`
//! and `passkey_pages` (with `passkey.js`, the one script they run).

pub mod auth;
pub mod consent;
pub mod embedded;
pub mod files;
pub mod graphql_console;
pub mod mcp;
pub mod oauth;
pub mod pages;
pub mod passkey_pages;
pub mod responses;
pub mod service;
