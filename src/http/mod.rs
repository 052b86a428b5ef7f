//! The HTTP API: one module per resource, the caller extractor, the routes.

pub mod app_passkey;
pub mod auth;
pub mod batch;
pub mod caller;
pub mod changes;
pub mod duplicate_activity;
pub mod entity;
pub mod files;
pub mod forms;
pub mod graphql;
pub mod guide;
pub mod health;
pub mod list;
pub mod mcp;
pub mod metrics;
pub mod middleware;
pub mod new_db;
pub mod oauth;
pub mod oauth_client;
pub mod openapi;
pub mod passkey;
pub mod property;
pub mod restore;
pub mod retry;
pub mod routes;
pub mod sign_in;
pub mod state;
pub mod usage;
pub mod views;
pub mod webhooks;

pub use caller::{bearer, client_ip};
pub use routes::{Endpoint, database_of_path, endpoints, routes};
pub use state::AppState;

pub use crate::service::Caller;
