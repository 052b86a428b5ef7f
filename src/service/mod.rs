//! The application layer: what a REST route and an MCP tool both do, in one
//! place. Each operation takes the [`Service`], the [`Caller`] and typed
//! arguments, and answers the typed body (or the error) the route answers,
//! so the REST handlers keep only the HTTP glue and the MCP tools
//! (`src/mcp/calls.rs`) answer exactly what REST answers the same caller.
//! No actix or JSON-RPC type lives here.

pub mod accounts;
pub mod batch;
mod batch_body;
pub mod bodies;
pub mod caller;
pub mod changes;
pub mod consistency;
pub mod databases;
pub mod duplicate_activity;
pub mod entities;
pub mod health;
pub mod invitations;
pub mod list;
pub mod lookups;
pub mod paging;
pub mod placement;
pub mod rate_limits;
pub mod replicas;
mod replicas_metrics;
pub mod restore;
pub mod state;
pub mod thumbnails;
pub mod types;
pub mod uploads;
pub mod usage;
pub mod values;
pub mod webhook_rules;
pub mod webhooks;

pub use crate::write::{IdempotencyKey, is_valid_idempotency_key};
pub use caller::Caller;
pub use state::Service;
