//! Outgoing mail (sign-in links, invitations) over SMTP (`mail.*`); without
//! `mail.smtp_url`, mails are written to the log, for development.

use std::time::Duration;

use lettre::message::Mailbox;
use lettre::message::header::ContentType;
use lettre::{Address, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use crate::config::MailSettings;
use crate::error::{ApiError, ErrorCode};

/// One plain-text mail.
pub struct Mail {
    pub to: Address,
    pub subject: String,
    pub body: String,
}

pub struct Mailer {
    from: Mailbox,
    /// `None`: mails go to the log.
    transport: Option<AsyncSmtpTransport<Tokio1Executor>>,
    /// The longest one mail's delivery may take, from connecting to the
    /// server's last answer (lettre's own timeout covers the connect only).
    timeout: Duration,
}

impl Mailer {
    pub fn from_settings(settings: &MailSettings) -> Result<Mailer, String> {
        let from = settings
            .from
            .parse::<Mailbox>()
            .map_err(|e| format!("mail.from {:?}: {e}", settings.from))?;
        let timeout = Duration::from_millis(settings.timeout_ms.max(1));
        let transport = if settings.smtp_url.is_empty() {
            None
        } else {
            // the URL may hold a password: the error names the key, not the URL
            let builder = AsyncSmtpTransport::<Tokio1Executor>::from_url(&settings.smtp_url)
                .map_err(|e| format!("mail.smtp_url is not a usable SMTP URL: {e}"))?;
            Some(builder.timeout(Some(timeout)).build())
        };
        Ok(Mailer {
            from,
            transport,
            timeout,
        })
    }

    /// Hands `mail` to the SMTP server: 503 `mail_unavailable` when it does
    /// not take it within `mail.timeout_ms`.
    pub async fn send(&self, mail: Mail) -> Result<(), ApiError> {
        let Some(transport) = &self.transport else {
            tracing::info!(to = %mail.to, subject = %mail.subject, body = %mail.body, "mail.smtp_url is unset: mail written to the log, not sent");
            return Ok(());
        };
        let message = Message::builder()
            .from(self.from.clone())
            .to(Mailbox::new(None, mail.to))
            .subject(mail.subject)
            .header(ContentType::TEXT_PLAIN)
            .body(mail.body)
            .map_err(|e| ApiError::internal("cannot build a mail", e))?;
        let sent = match tokio::time::timeout(self.timeout, transport.send(message)).await {
            Ok(sent) => sent.map(drop).map_err(|error| error.to_string()),
            Err(_) => Err(format!("no answer within {} ms", self.timeout.as_millis())),
        };
        sent.map_err(|error| {
            tracing::warn!(%error, "the SMTP server did not take a mail");
            ApiError::new(ErrorCode::MailUnavailable, "The mail could not be sent; retry later")
        })
    }
}

/// `text` as a mail address: 400 `invalid_email` when it is not one.
pub fn address(text: &str) -> Result<Address, ApiError> {
    text.trim()
        .parse::<Address>()
        .map_err(|_| ApiError::new(ErrorCode::InvalidEmail, "Invalid e-mail address"))
}
