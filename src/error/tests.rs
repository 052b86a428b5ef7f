use std::collections::HashSet;

use super::*;

#[test]
fn every_code_is_snake_case_and_unique() {
    let mut seen = HashSet::new();
    for code in ErrorCode::ALL {
        let text = code.as_str();
        assert!(text.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'), "{text}");
        assert!(seen.insert(text), "{text} twice");
    }
}

#[test]
fn exactly_the_503_codes_tell_why_they_happen() {
    for code in ErrorCode::ALL {
        let unavailable = code.status() == StatusCode::SERVICE_UNAVAILABLE;
        assert_eq!(code.unavailable_reason().is_some(), unavailable, "{code}");
    }
}

#[test]
fn an_error_body_is_status_error_and_message_in_that_order() {
    let body = serde_json::to_string(&ApiError::not_found("Entity not found").body()).unwrap();
    assert_eq!(
        body,
        r#"{"status":404,"error":"not_found","message":"Entity not found"}"#
    );
}

#[test]
fn a_connection_postgresql_or_the_network_lost_is_database_unavailable() {
    use diesel::result::{DatabaseErrorKind, Error};
    let error = |kind, message: &str| Error::DatabaseError(kind, Box::new(message.to_owned()));
    for (kind, message) in [
        (
            DatabaseErrorKind::Unknown,
            "terminating connection due to administrator command",
        ),
        (DatabaseErrorKind::Unknown, "the database system is shutting down"),
        (DatabaseErrorKind::ClosedConnection, "anything"),
        (DatabaseErrorKind::UnableToSendCommand, "connection closed"),
        (
            DatabaseErrorKind::UnableToSendCommand,
            "error communicating with the server: Connection reset by peer (os error 104)",
        ),
        (DatabaseErrorKind::UnableToSendCommand, "unexpected message from server"),
    ] {
        assert_eq!(
            ApiError::from(error(kind, message)).code,
            ErrorCode::DatabaseUnavailable,
            "{message}"
        );
    }
    let bug = error(DatabaseErrorKind::UnableToSendCommand, "error serializing parameter 0");
    assert_eq!(ApiError::from(bug).code, ErrorCode::Internal);
}

#[test]
fn a_deadlock_or_a_serialization_failure_is_a_write_conflict() {
    use diesel::result::{DatabaseErrorKind, Error};
    let error = |kind, message: &str| Error::DatabaseError(kind, Box::new(message.to_owned()));
    for (kind, message) in [
        (DatabaseErrorKind::Unknown, "deadlock detected"),
        (
            DatabaseErrorKind::SerializationFailure,
            "could not serialize access due to concurrent update",
        ),
    ] {
        let conflict = ApiError::from(error(kind, message));
        assert_eq!(conflict.code, ErrorCode::WriteConflict, "{message}");
        assert_eq!(conflict.status(), StatusCode::SERVICE_UNAVAILABLE);
    }
}

#[test]
fn a_503_answers_retry_after() {
    let response = ApiError::database_busy().error_response();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(response.headers().get("Retry-After").unwrap(), "5");
}
