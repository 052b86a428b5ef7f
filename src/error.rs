//! The one error type of the API: a status, a stable snake_case code and a
//! message, answered as `{"status":N,"error":CODE,"message":TEXT}`. It
//! lives at the bottom, so every layer returns it without importing HTTP.

use std::borrow::Cow;

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};

#[derive(Debug, Clone, thiserror::Error)]
#[error("{status} {code}: {message}")]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: Cow<'static, str>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<Cow<'static, str>>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    pub fn bad_request(code: &'static str, message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub fn unauthorized(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    pub fn forbidden(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    pub fn not_found(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    pub fn entity_not_found() -> Self {
        Self::not_found("Entity not found")
    }

    pub fn property_not_found() -> Self {
        Self::not_found("Property not found")
    }

    pub fn token_required() -> Self {
        Self::unauthorized("No token")
    }

    /// Logs the cause with context and answers a bare 500: details stay in the log.
    pub fn internal(context: &str, cause: impl std::fmt::Display) -> Self {
        tracing::error!(%cause, "{context}");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "Internal server error")
    }

    /// No database connection (or no permit for an expensive query) came free in time.
    pub fn database_busy() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "database_busy",
            "Every database connection is busy; retry later",
        )
    }

    fn query_timeout() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "query_timeout",
            "The query took too long; narrow it or retry later",
        )
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status);
        // Every 503 of the API is a busy or slow moment, never a lasting state.
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            response.insert_header(("Retry-After", "5"));
        }
        response.json(serde_json::json!({
            "status": self.status.as_u16(),
            "error": self.code,
            "message": self.message,
        }))
    }
}

impl From<diesel::result::Error> for ApiError {
    fn from(error: diesel::result::Error) -> Self {
        // PostgreSQL cancels a statement over statement_timeout with SQLSTATE 57014.
        if let diesel::result::Error::DatabaseError(_, info) = &error {
            if info.message().contains("statement timeout") {
                return Self::query_timeout();
            }
            // A pattern the regex crate accepts but PostgreSQL does not.
            if info.message().contains("invalid regular expression") {
                return Self::bad_request("invalid_regex", "Invalid regex");
            }
        }
        Self::internal("database error", error)
    }
}

impl From<diesel_async::pooled_connection::deadpool::PoolError> for ApiError {
    fn from(error: diesel_async::pooled_connection::deadpool::PoolError) -> Self {
        if let deadpool::managed::PoolError::Timeout(deadpool::managed::TimeoutType::Wait) = error {
            return Self::database_busy();
        }
        Self::internal("database pool error", error)
    }
}
