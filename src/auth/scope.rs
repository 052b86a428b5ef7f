//! The OAuth scopes a client may ask for: `read` (the token reads as its
//! person does) and `write` (it also writes as its person does). Tokens
//! without a `scope` claim (sign-ins, API keys) keep full rights.

use crate::error::{ApiError, ErrorCode};

/// Every scope, as both metadata documents list them (`scopes_supported`).
pub const SCOPES_SUPPORTED: [&str; 2] = [READ, WRITE];
pub const READ: &str = "read";
pub const WRITE: &str = "write";
/// What an authorization asking no scope is granted.
pub const FULL_SCOPE: &str = "read write";
/// The step-up challenge of a write refused for its scope (RFC 6750 §3.1).
pub const WRITE_CHALLENGE: &str = r#"Bearer error="insufficient_scope", scope="write""#;

/// The scope granted for `asked` (space-separated): the known values in
/// their listed order, unknown ones ignored; none asked (absent or blank)
/// is [`FULL_SCOPE`]. `None` when something was asked but neither `read`
/// nor `write`.
pub fn granted(asked: Option<&str>) -> Option<String> {
    let asked: Vec<&str> = asked.unwrap_or_default().split_whitespace().collect();
    if asked.is_empty() {
        return Some(FULL_SCOPE.to_owned());
    }
    let known: Vec<&str> = SCOPES_SUPPORTED
        .into_iter()
        .filter(|scope| asked.contains(scope))
        .collect();
    (!known.is_empty()).then(|| known.join(" "))
}

/// 403 `insufficient_scope`: a write with a token granted `read` only.
pub fn write_refused() -> ApiError {
    ApiError::new(
        ErrorCode::InsufficientScope,
        "This token's scope allows reading only: writing needs the write scope",
    )
}

/// Whether a token granted `scope` may write.
pub fn allows_write(scope: &str) -> bool {
    scope.split_whitespace().any(|given| given == WRITE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_asked_is_read_write_unknown_values_are_ignored_and_neither_is_refused() {
        assert_eq!(granted(None).as_deref(), Some("read write"));
        assert_eq!(granted(Some("  ")).as_deref(), Some("read write"));
        assert_eq!(granted(Some("read")).as_deref(), Some("read"));
        assert_eq!(granted(Some("openid write read read")).as_deref(), Some("read write"));
        assert_eq!(granted(Some("profile write")).as_deref(), Some("write"));
        assert_eq!(granted(Some("openid")), None);
        assert_eq!(granted(Some("READ")), None);
    }

    #[test]
    fn only_a_scope_holding_write_writes() {
        assert!(allows_write("read write"));
        assert!(allows_write("write"));
        assert!(!allows_write("read"));
        assert!(!allows_write("writer"));
    }
}
