//! Who is calling, and the rules every operation asks of them. The HTTP
//! extractor (`src/http/caller.rs`) builds it from the bearer token and the
//! client address; the operations only read it.

use super::consistency::Consistency;
use crate::auth::jwt::Claims;
use crate::auth::scope;
use crate::error::ApiError;

/// Who is calling: anonymous, or the holder of an acceptable access token.
pub struct Caller {
    pub claims: Option<Claims>,
    /// The client address the request came from.
    pub ip: String,
    /// The commit positions it has seen and made (`Eds-Consistency`).
    pub consistency: Consistency,
}

impl Caller {
    /// The caller's person in `db`; anonymous and other databases' callers have none.
    pub fn person_in(&self, db: &str) -> Option<&str> {
        self.claims.as_ref()?.person_in(db)
    }

    /// The caller's person in `db`, for routes that need one: 401 without a
    /// token, 403 with a token for other databases only.
    pub fn require_person(&self, db: &str) -> Result<&str, ApiError> {
        match &self.claims {
            None => Err(ApiError::token_required()),
            Some(claims) => claims
                .person_in(db)
                .ok_or_else(|| ApiError::forbidden("The token gives no access to this database")),
        }
    }

    /// 403 `insufficient_scope` for a token granted `read` only: every
    /// write asks this first, before it looks anything up.
    pub fn require_write(&self) -> Result<(), ApiError> {
        if self.claims.as_ref().is_some_and(|claims| !claims.may_write()) {
            return Err(scope::write_refused());
        }
        Ok(())
    }

    /// 403 for a token the OAuth server issued: a credential it added (an
    /// API key, a login, a passkey) would outlive the token and its grant.
    pub fn refuse_oauth_credentials(&self) -> Result<(), ApiError> {
        self.require_write()?;
        if self.claims.as_ref().is_some_and(Claims::issued_by_oauth) {
            return Err(ApiError::forbidden(
                "OAuth tokens cannot add credentials (API keys, logins, passkeys)",
            ));
        }
        Ok(())
    }
}
