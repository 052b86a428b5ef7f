//! The state every worker shares: the application's [`Service`] and what
//! only the HTTP side needs.

use std::net::IpAddr;
use std::ops::Deref;
use std::sync::Arc;

use crate::service::Service;

/// Shared state of every worker.
pub struct AppState {
    /// What the operations run on; the state derefs to it.
    pub service: Arc<Service>,
    pub trusted_proxies: Vec<IpAddr>,
    /// The `Origin`s the MCP endpoint accepts (`mcp.allowed_origins` and the service's own).
    pub mcp_origins: Vec<String>,
    /// The GraphQL endpoint's limits and schema cache.
    pub graphql: crate::graphql::Graphql,
}

impl Deref for AppState {
    type Target = Service;

    fn deref(&self) -> &Service {
        &self.service
    }
}
