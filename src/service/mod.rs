//! What a REST route and an MCP tool both do, in one place: each function
//! takes the caller and its arguments and answers the typed body (or the
//! error) the route answers, so the handlers keep only the HTTP glue and the
//! MCP tools (`super::mcp`) answer exactly what REST answers the same caller.

pub mod bodies;
pub mod duplicate_activity;
pub mod entities;
pub mod invitations;
pub mod list;
pub mod types;
pub mod uploads;
pub mod values;
