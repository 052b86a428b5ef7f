//! Database and pool errors as the API answers them: a lost connection, a
//! deadlock, a statement over its time limit, or a 500 with the cause logged.

use super::{ApiError, ErrorCode};

impl From<diesel::result::Error> for ApiError {
    fn from(error: diesel::result::Error) -> Self {
        use diesel::result::{DatabaseErrorKind, Error};
        match &error {
            Error::DatabaseError(DatabaseErrorKind::ClosedConnection, _) | Error::BrokenTransactionManager => {
                return Self::database_unavailable();
            }
            // PostgreSQL could not serialize the transaction (40001), or it and
            // another waited for each other (40P01): it was rolled back, and
            // may pass when run again
            Error::DatabaseError(DatabaseErrorKind::SerializationFailure, _) => return Self::write_conflict(),
            Error::DatabaseError(_, info) if info.message().contains("deadlock detected") => {
                return Self::write_conflict();
            }
            Error::DatabaseError(_, info) => {
                let message = info.message();
                // PostgreSQL cancels a statement over statement_timeout with SQLSTATE 57014.
                if message.contains("statement timeout") {
                    return Self::query_timeout();
                }
                // A pattern the regex crate accepts but PostgreSQL does not.
                if message.contains("invalid regular expression") {
                    return Self::new(ErrorCode::InvalidRegex, "Invalid regex");
                }
                if is_lost_connection(message) {
                    return Self::database_unavailable();
                }
            }
            _ => {}
        }
        Self::internal("database error", error)
    }
}

/// PostgreSQL's words for a connection it ended or cannot serve (SQLSTATE
/// 57P01-57P03 and the client's own): the diesel error carries no SQLSTATE.
fn is_lost_connection(message: &str) -> bool {
    [
        "terminating connection",
        "the database system is",
        "server closed the connection",
        "connection to server",
        "no connection to the server",
        "connection closed",
        // tokio-postgres's own, for a socket that failed or a server that went quiet
        "error communicating with the server",
        "unexpected message from server",
        "timeout waiting for server",
        "error connecting to server",
    ]
    .iter()
    .any(|words| message.contains(words))
}

impl From<diesel_async::pooled_connection::deadpool::PoolError> for ApiError {
    fn from(error: diesel_async::pooled_connection::deadpool::PoolError) -> Self {
        use deadpool::managed::{PoolError, TimeoutType};
        match error {
            PoolError::Timeout(TimeoutType::Wait) => Self::database_busy(),
            // connecting or checking a connection failed or hung: PostgreSQL is away
            PoolError::Timeout(_) | PoolError::Backend(_) => {
                tracing::warn!(%error, "no database connection");
                Self::database_unavailable()
            }
            error => Self::internal("database pool error", error),
        }
    }
}
