//! The one error type of the API: a status, a stable snake_case code and a
//! message, answered as `{"status":N,"error":CODE,"message":TEXT}`. It
//! lives at the bottom, so every layer returns it without importing HTTP.

use std::borrow::Cow;

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;
use utoipa::ToSchema;

// What PostgreSQL's and the pool's errors answer.
mod from_db;

/// Declares every stable error code once: its variant, the snake_case code
/// clients match on, and the status it is answered with.
macro_rules! error_codes {
    ($($status:ident { $($(#[$doc:meta])* $variant:ident = $code:literal,)* })*) => {
        /// Every stable `error` code of the API.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $($($(#[$doc])* $variant,)*)*
        }

        impl ErrorCode {
            pub const ALL: &[ErrorCode] = &[$($(ErrorCode::$variant,)*)*];

            /// The code as clients see it in the `error` field.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($(ErrorCode::$variant => $code,)*)*
                }
            }

            pub const fn status(self) -> StatusCode {
                match self {
                    $($(ErrorCode::$variant => StatusCode::$status,)*)*
                }
            }
        }
    };
}

error_codes! {
    BAD_REQUEST {
        /// A 400 answered by actix before a handler ran.
        BadRequest = "bad_request",
        InvalidBody = "invalid_body",
        InvalidJson = "invalid_json",
        InvalidQuery = "invalid_query",
        InvalidFilter = "invalid_filter",
        /// A pattern the regex crate accepts but PostgreSQL does not, or the reverse.
        InvalidRegex = "invalid_regex",
        InvalidId = "invalid_id",
        InvalidValueId = "invalid_value_id",
        InvalidLanguage = "invalid_language",
        InvalidReference = "invalid_reference",
        InvalidSharing = "invalid_sharing",
        InvalidType = "invalid_type",
        InvalidValue = "invalid_value",
        InvalidDatabaseName = "invalid_database_name",
        LoginFieldsReserved = "login_fields_reserved",
        TypeRequired = "type_required",
        UnknownSystemProperty = "unknown_system_property",
        UploadFailed = "upload_failed",
        InvalidSize = "invalid_size",
        ImageTooLarge = "image_too_large",
        UnsupportedFileType = "unsupported_file_type",
        UndecodableFile = "undecodable_file",
        /// A malformed, expired or used invitation, or one for another database.
        InvalidInvite = "invalid_invite",
        /// An invitation written to an entity without an e-mail address.
        NoEmail = "no_email",
        InvalidEmail = "invalid_email",
        /// A sign-in `next` that is not an https URL.
        InvalidNext = "invalid_next",
        /// A sign-in link or session token that is unknown, used, expired, or from another address.
        InvalidSignIn = "invalid_sign_in",
        /// OAuth (RFC 6749 §5.2): a request missing or malforming a parameter.
        InvalidRequest = "invalid_request",
        /// OAuth: an unknown, tampered or expired `client_id`, or a `redirect_uri` not registered for it.
        InvalidClient = "invalid_client",
        /// OAuth: an unknown, used or expired code, or one the verifier, redirect URI or client does not match.
        InvalidGrant = "invalid_grant",
        UnsupportedGrantType = "unsupported_grant_type",
        /// OAuth registration (RFC 7591): a redirect URI that is not an absolute URI.
        InvalidRedirectUri = "invalid_redirect_uri",
        InvalidClientMetadata = "invalid_client_metadata",
        /// OAuth (RFC 8707): a `resource` other than the authorization's.
        InvalidTarget = "invalid_target",
        /// An `Idempotency-Key` that is empty, longer than 255 characters or not visible ASCII.
        InvalidIdempotencyKey = "invalid_idempotency_key",
    }
    UNAUTHORIZED {
        Unauthorized = "unauthorized",
    }
    FORBIDDEN {
        Forbidden = "forbidden",
        /// A signed storage URL used after its expiry.
        RequestExpired = "request_expired",
        /// A signed storage URL altered, or used with other headers than signed.
        SignatureDoesNotMatch = "signature_does_not_match",
        /// A form of the sign-in pages posted from another site.
        CrossSiteForm = "cross_site_form",
        /// A write with a token whose OAuth scope is `read` only.
        InsufficientScope = "insufficient_scope",
    }
    NOT_FOUND {
        NotFound = "not_found",
    }
    METHOD_NOT_ALLOWED {
        MethodNotAllowed = "method_not_allowed",
    }
    CONFLICT {
        DatabaseExists = "database_exists",
        /// A restore bringing back a counter number another live value holds.
        CounterTaken = "counter_taken",
    }
    UNPROCESSABLE_ENTITY {
        /// An `Idempotency-Key` the caller already used on another request.
        IdempotencyKeyReused = "idempotency_key_reused",
    }
    PAYLOAD_TOO_LARGE {
        PayloadTooLarge = "payload_too_large",
        FileTooLarge = "file_too_large",
        /// More values in one write than `limits.max_values_per_write`.
        TooManyValues = "too_many_values",
    }
    TOO_MANY_REQUESTS {
        RateLimited = "rate_limited",
    }
    INTERNAL_SERVER_ERROR {
        /// Details are in the log, never in the answer.
        Internal = "internal",
    }
    SERVICE_UNAVAILABLE {
        /// No database connection (or no permit for an expensive query) came free in time.
        DatabaseBusy = "database_busy",
        /// The statement ran past `database.statement_timeout_ms`.
        QueryTimeout = "query_timeout",
        /// The database's writer queue is full.
        WritesBusy = "writes_busy",
        StreamsBusy = "streams_busy",
        /// Every thumbnail slot stayed taken for `actors.thumbnail_wait_ms`.
        ThumbnailsBusy = "thumbnails_busy",
        /// The SMTP server did not take a mail.
        MailUnavailable = "mail_unavailable",
        /// A sign-in provider this server has no configuration for.
        ProviderUnavailable = "provider_unavailable",
        /// PostgreSQL cannot be reached, or dropped the connection (a restart,
        /// a terminated backend): the pool reconnects by itself.
        DatabaseUnavailable = "database_unavailable",
        /// PDF thumbnails cannot be rendered here: libpdfium is missing or
        /// does not load (`thumbnails.pdfium_library`).
        PdfUnavailable = "pdf_unavailable",
        /// Object storage did not answer within `storage.s3.timeout_ms`,
        /// refused the connection, or answered an error.
        StorageUnavailable = "storage_unavailable",
        /// The write's transaction and another one each waited for the
        /// other (a deadlock), every time it ran: it was rolled back whole.
        WriteConflict = "write_conflict",
    }
}

impl ErrorCode {
    /// Why a 503 happens, as the OpenAPI document tells it: every 503 is a
    /// busy or slow moment, answered with `Retry-After`.
    pub const fn unavailable_reason(self) -> Option<&'static str> {
        match self {
            ErrorCode::DatabaseBusy => Some("no database connection came free within `database.statement_timeout_ms`"),
            ErrorCode::QueryTimeout => Some("the query took longer than `database.statement_timeout_ms`"),
            ErrorCode::WritesBusy => Some("too many writes are waiting for this database"),
            ErrorCode::ThumbnailsBusy => Some("too many thumbnails are rendering"),
            ErrorCode::StreamsBusy => Some("this process serves `changes.max_streams` change streams already"),
            ErrorCode::MailUnavailable => Some("the mail server did not take the mail"),
            ErrorCode::ProviderUnavailable => Some("the sign-in provider is not configured on this server"),
            ErrorCode::DatabaseUnavailable => Some("PostgreSQL cannot be reached or dropped the connection"),
            ErrorCode::PdfUnavailable => {
                Some("libpdfium is missing or does not load: PDF thumbnails cannot be rendered")
            }
            ErrorCode::StorageUnavailable => Some("object storage did not answer, or answered an error"),
            ErrorCode::WriteConflict => Some("the write and another transaction kept waiting for each other"),
            _ => None,
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Lets tests and callers compare a code with the text clients see.
impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// Every error: the status, a stable snake_case code and a message (the
/// specification's exact text where it gives one).
#[derive(Serialize, ToSchema)]
#[schema(example = json!({"status": 400, "error": "invalid_regex", "message": "Invalid regex"}))]
pub struct ErrorBody<'a> {
    pub status: u16,
    pub error: &'static str,
    pub message: &'a str,
    /// In a batch: the index (from 0) of the operation that failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation: Option<usize>,
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: Cow<'static, str>,
    /// Seconds a refused client should wait, answered as `Retry-After`.
    pub retry_after: Option<u64>,
    /// In a batch: the index (from 0) of the operation that failed.
    pub operation: Option<usize>,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<Cow<'static, str>>) -> Self {
        ApiError {
            code,
            message: message.into(),
            retry_after: None,
            operation: None,
        }
    }

    /// This error as operation `index` of a batch answers it.
    pub fn in_operation(self, index: usize) -> Self {
        ApiError {
            operation: Some(index),
            ..self
        }
    }

    /// 429 `rate_limited`: over a limit for `wait` more, told in whole
    /// seconds rounded up (a client that waits that long gets through).
    pub fn rate_limited(wait: std::time::Duration) -> Self {
        let seconds = (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1);
        ApiError {
            retry_after: Some(seconds),
            ..Self::new(
                ErrorCode::RateLimited,
                format!("Too many requests; retry in {seconds} s"),
            )
        }
    }

    pub fn status(&self) -> StatusCode {
        self.code.status()
    }

    /// The JSON body the error is answered with.
    pub fn body(&self) -> ErrorBody<'_> {
        ErrorBody {
            status: self.status().as_u16(),
            error: self.code.as_str(),
            message: &self.message,
            operation: self.operation,
        }
    }

    pub fn unauthorized(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::Unauthorized, message)
    }

    pub fn forbidden(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::Forbidden, message)
    }

    pub fn not_found(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::NotFound, message)
    }

    pub fn entity_not_found() -> Self {
        Self::not_found("Entity not found")
    }

    pub fn property_not_found() -> Self {
        Self::not_found("Property not found")
    }

    /// What the router and extractors reject: no such route or file.
    pub fn route_not_found() -> Self {
        Self::not_found("Not found")
    }

    pub fn token_required() -> Self {
        Self::unauthorized("No token")
    }

    /// Logs the cause with context and answers a bare 500: details stay in the log.
    pub fn internal(context: &str, cause: impl std::fmt::Display) -> Self {
        tracing::error!(%cause, "{context}");
        Self::new(ErrorCode::Internal, "Internal server error")
    }

    pub fn database_busy() -> Self {
        Self::new(
            ErrorCode::DatabaseBusy,
            "Every database connection is busy; retry later",
        )
    }

    pub fn database_unavailable() -> Self {
        Self::new(
            ErrorCode::DatabaseUnavailable,
            "The database cannot be reached just now; retry later",
        )
    }

    fn write_conflict() -> Self {
        Self::new(
            ErrorCode::WriteConflict,
            "The write conflicted with another one and was not stored; retry",
        )
    }

    fn query_timeout() -> Self {
        Self::new(
            ErrorCode::QueryTimeout,
            "The query took too long; narrow it or retry later",
        )
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status()
    }

    fn error_response(&self) -> HttpResponse {
        let status = self.status();
        let mut response = HttpResponse::build(status);
        // Every 503 of the API is a busy or slow moment, never a lasting state.
        if status == StatusCode::SERVICE_UNAVAILABLE {
            response.insert_header(("Retry-After", "5"));
        }
        if let Some(seconds) = self.retry_after {
            response.insert_header(("Retry-After", seconds));
        }
        response.json(self.body())
    }
}

#[cfg(test)]
mod tests;
