//! The service's identity and liveness.

use serde::Serialize;
use utoipa::ToSchema;

/// `GET /`.
#[derive(Serialize, ToSchema)]
pub struct About {
    pub name: &'static str,
    pub version: &'static str,
}

/// `GET /health`.
#[derive(Serialize, ToSchema)]
pub struct Health {
    /// Always `ok`.
    pub status: &'static str,
}

/// `GET /ready`: which dependency answers.
#[derive(Serialize, ToSchema)]
pub struct Ready {
    pub database: bool,
    pub storage: bool,
}
