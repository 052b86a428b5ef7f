//! Requests this service makes to addresses others name (client metadata
//! documents now, webhooks later): which targets are refused, and a bounded
//! fetch that connects only to the address it checked.
//!
//! - `targets.rs`: the address rules, and a host resolved once and checked;
//! - `fetch.rs`: a small document fetched under those rules, with time and size limits.

pub mod fetch;
pub mod targets;
