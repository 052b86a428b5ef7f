//! An invitation opened through a sign-in link is confirmed by the person on
//! a page of its own before it is linked: a link anyone can mail must not
//! tie the reader's login to a person of the sender's choosing unseen.
//! The signed-in login waits in sign-in state, bound to the browser's
//! address, until the person accepts (once) or lets it expire.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{Completed, SignIn, random_token, refused, state_id};
use crate::auth::jwt::{Claims, JwtKeys};
use crate::db::sign_in::Issued;
use crate::error::ApiError;

/// State kind of a sign-in waiting for its invitation's confirmation.
const CONFIRMATION: &str = "invitation_confirmation";
/// The person has this long to accept.
const CONFIRMATION_LIFETIME_SECONDS: i64 = 10 * 60;

/// What waits for the confirmation.
#[derive(Serialize, Deserialize)]
struct Waiting {
    /// The login, as a session token would carry it (with the invitation).
    claims: Claims,
    next: Option<String>,
    /// The database the invitation is to, shown on the page.
    db: String,
}

/// A sign-in held for its invitation's confirmation.
pub struct Held {
    /// The confirmation's token: single use, from the address that signed in.
    pub token: String,
}

impl SignIn {
    /// Holds `done` until the person confirms its invitation, if it
    /// carries one that is well signed and unexpired; `None` otherwise
    /// (an invitation that does not verify is refused at the exchange, as
    /// one given there is).
    pub async fn hold_for_confirmation(
        &self,
        jwt: &JwtKeys,
        done: &Completed,
        client_ip: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<Held>, ApiError> {
        let Some(invite) = done.invite.as_deref() else {
            return Ok(None);
        };
        let Some(db) = jwt
            .verify_invite(invite, now)
            .ok()
            .and_then(|claims| claims.invitation().map(|(db, _)| db.to_owned()))
        else {
            return Ok(None);
        };
        // the claims only carry the login here; the session token is made,
        // with a `jti` of its own, once the person accepts
        let mut claims = Claims::session(done.login.sub(), client_ip.to_owned(), String::new(), now);
        claims.set_profile(&done.login);
        claims.invite = Some(invite.to_owned());
        let waiting = Waiting {
            claims,
            next: done.next.clone(),
            db,
        };
        let token = random_token();
        self.sessions
            .issue(Issued {
                id: state_id(&token),
                kind: CONFIRMATION,
                client_ip: client_ip.to_owned(),
                data: serde_json::to_value(&waiting)
                    .map_err(|e| ApiError::internal("cannot hold a sign-in for confirmation", e))?,
                expires_at: now + chrono::Duration::seconds(CONFIRMATION_LIFETIME_SECONDS),
            })
            .await?;
        Ok(Some(Held { token }))
    }

    /// The page confirming the invitation of `held`.
    pub fn confirmation_url(&self, held: &Held) -> String {
        let query = serde_urlencoded::to_string([("confirmation", held.token.as_str())]).unwrap_or_default();
        format!("{}/api/auth/invitation?{query}", self.public_url)
    }

    /// The database the held sign-in `token`'s invitation is to, without
    /// using it: 400 `invalid_sign_in` when it is unknown, used, expired or
    /// from another address.
    pub async fn confirmation_database(
        &self,
        token: &str,
        client_ip: &str,
        now: DateTime<Utc>,
    ) -> Result<String, ApiError> {
        let data = self
            .sessions
            .peek(&state_id(token), CONFIRMATION, client_ip, now)
            .await?
            .ok_or_else(unknown_confirmation)?;
        Ok(waiting(data)?.db)
    }

    /// Uses held sign-in `token`: the completed sign-in, its invitation
    /// with it; 400 `invalid_sign_in` as above.
    pub async fn confirm_invitation(
        &self,
        token: &str,
        client_ip: &str,
        now: DateTime<Utc>,
    ) -> Result<Completed, ApiError> {
        let waiting: Waiting = self
            .take(token, CONFIRMATION, client_ip, now, unknown_confirmation)
            .await?;
        let login = waiting.claims.login().ok_or_else(unknown_confirmation)?;
        Ok(Completed {
            login,
            next: waiting.next,
            invite: waiting.claims.invite,
        })
    }
}

fn waiting(data: serde_json::Value) -> Result<Waiting, ApiError> {
    serde_json::from_value(data).map_err(|e| ApiError::internal("a held sign-in does not read back", e))
}

fn unknown_confirmation() -> ApiError {
    refused("the invitation's confirmation is unknown, used, expired or from another address")
}
