//! What wraps every request, outermost first: an API path's trailing slash
//! trimmed, request id and log, metrics, CORS, rate limits, the per-database
//! request count, the challenge of a 401, and the JSON body for errors
//! answered before a handler runs.

pub mod challenge;
pub mod consistency;
pub mod cors;
pub mod error_body;
pub mod limits;
pub mod metrics;
pub mod request_log;
pub mod trailing_slash;
pub mod usage;
