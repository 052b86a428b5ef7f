//! The e-mail provider: a form sends one mail holding one link; the link,
//! opened once within 15 minutes from the address that asked, signs in.

use chrono::{DateTime, Utc};
use lettre::Address;
use serde_json::json;

use super::{Completed, Lang, SignIn, random_token, state_id};
use crate::auth::login::Login;
use crate::db::sign_in::Issued;
use crate::error::{ApiError, ErrorCode};
use crate::mail::Mail;

/// State kind of a mailed sign-in link.
const LINK: &str = "email_link";
pub const LINK_LIFETIME_SECONDS: i64 = 15 * 60;

/// A sign-in link asked for through the form.
pub struct LinkAsked {
    pub email: Address,
    /// Where the browser goes once signed in (checked already).
    pub next: Option<String>,
    /// An invitation to accept once signed in.
    pub invite: Option<String>,
    pub lang: Lang,
    pub client_ip: String,
}

impl SignIn {
    /// Records a link for `asked` and mails it. A mail the server does not
    /// take leaves no usable link (503 `mail_unavailable`).
    pub async fn send_link(&self, asked: LinkAsked, now: DateTime<Utc>) -> Result<(), ApiError> {
        let token = random_token();
        let id = state_id(&token);
        self.sessions
            .issue(Issued {
                id: id.clone(),
                kind: LINK,
                client_ip: asked.client_ip,
                data: json!({"email": asked.email.to_string(), "next": asked.next, "invite": asked.invite}),
                expires_at: now + chrono::Duration::seconds(LINK_LIFETIME_SECONDS),
            })
            .await?;
        let link = format!("{}/api/auth/e-mail?token={token}", self.public_url);
        let (subject, body) = match asked.lang {
            Lang::En => (
                "Your sign-in link",
                format!(
                    "Open this link to sign in. It works once, for 15 minutes, on the device that asked for it:\n\n{link}\n\nIf you did not ask to sign in, ignore this mail.\n"
                ),
            ),
            Lang::Et => (
                "Sinu sisselogimise link",
                format!(
                    "Sisselogimiseks ava see link. See töötab üks kord, 15 minuti jooksul, seadmes, kust see telliti:\n\n{link}\n\nKui sa sisse logida ei soovinud, jäta see kiri tähelepanuta.\n"
                ),
            ),
        };
        let sent = self
            .mailer
            .send(Mail {
                to: asked.email,
                subject: subject.to_owned(),
                body,
            })
            .await;
        if sent.is_err() {
            self.sessions.discard(&id).await?;
        }
        sent
    }

    /// Uses the link whose token is `token`, opened from `client_ip`: 400
    /// `invalid_sign_in` when it is unknown, used, expired or from another address.
    pub async fn open_link(&self, token: &str, client_ip: &str, now: DateTime<Utc>) -> Result<Completed, ApiError> {
        let invalid = || {
            ApiError::new(
                ErrorCode::InvalidSignIn,
                "Invalid or expired sign-in link: links work once, for 15 minutes, from the device that asked",
            )
        };
        let data = self
            .sessions
            .consume(&state_id(token), LINK, client_ip, now)
            .await?
            .ok_or_else(invalid)?;
        let email = data["email"].as_str().ok_or_else(invalid)?;
        Ok(Completed {
            login: Login::by_email(email),
            next: data["next"].as_str().map(str::to_owned),
            invite: data["invite"].as_str().map(str::to_owned),
        })
    }
}
