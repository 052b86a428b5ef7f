//! The API test suite as one binary (one link step instead of one per file):
//! a module per area of the specification, over the shared harness in `support/`.
//! Crash, soak, contract, fuzz and browser tests stay binaries of their own.

mod support;

mod add_user;
mod admin;
mod app_passkeys;
mod architecture;
mod auth;
mod batch;
mod batch_bulk;
mod change_log;
mod changes;
mod client_metadata;
mod compat;
mod consent;
mod duplicate_activity;
mod entities;
mod files;
mod formulas;
mod graphql;
mod graphql_console;
mod graphql_rights;
mod graphql_writes;
mod groups;
mod inherited_owners;
mod invitations;
mod leaks;
mod mcp;
mod mcp_conformance;
mod mcp_sdk;
mod metadata_rfcs;
mod new_databases;
mod oauth;
mod openapi;
mod operability;
mod passkeys;
mod processes;
mod projection;
mod providers;
mod query;
mod readme;
mod referrers;
mod restore;
mod retries;
mod rights;
mod scopes;
mod sign_in;
mod sign_in_attacks;
mod single_valued;
mod storage_faults;
mod value_visibility;
mod webapp;
mod webhooks;
mod writer_cache;
mod writes;
