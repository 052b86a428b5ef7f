//! Error responses several routes share, each written once: the 401s of a
//! missing or refused token, the 413 of writes, the 400 and 413 of
//! thumbnails, and the 503s, whose descriptions come from
//! [`ErrorCode::unavailable_reason`]. A route names one in its
//! `#[utoipa::path]` as `(status = 503, response = inline(ReadUnavailable))`.

use serde_json::Value as Json;
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::{ContentBuilder, Ref, RefOr};
use utoipa::{ToResponse, ToSchema};

use crate::error::{ApiError, ErrorBody, ErrorCode};

/// An error answer: `description`, an [`ErrorBody`] and, if given, its example.
pub fn error_response(description: impl Into<String>, example: Option<Json>) -> Response {
    let content = ContentBuilder::new()
        .schema(Some(Ref::from_schema_name(ErrorBody::name())))
        .example(example)
        .build();
    ResponseBuilder::new()
        .description(description)
        .content("application/json", content)
        .build()
}

/// A 503 naming each code the route can answer it with and why. Every such
/// route takes a database connection, so the example is `database_busy`.
fn unavailable(codes: &[ErrorCode]) -> Response {
    let reasons: Vec<String> = codes
        .iter()
        .map(|code| {
            let reason = code
                .unavailable_reason()
                .unwrap_or_else(|| panic!("{code} is not a 503 code"));
            format!("{reason} (`{code}`)")
        })
        .collect();
    let description = format!("Busy, retry after `Retry-After` seconds: {}", reasons.join(", or "));
    let example = serde_json::to_value(ApiError::database_busy().body()).expect("error bodies serialize");
    error_response(description, Some(example))
}

/// Declares a response type that routes name in their `#[utoipa::path]`.
macro_rules! shared_response {
    ($(#[$doc:meta])* $name:ident => $response:expr) => {
        $(#[$doc])*
        pub struct $name;

        impl<'s> ToResponse<'s> for $name {
            fn response() -> (&'s str, RefOr<Response>) {
                (stringify!($name), RefOr::T($response))
            }
        }
    };
}

shared_response!(
    /// 401 where a token is optional: one was sent and refused.
    InvalidToken => error_response(
        "The token is malformed, expired, of the wrong kind or from another address",
        None,
    )
);

shared_response!(
    /// 401 where a token is needed.
    TokenRequired => error_response("No token, or an unacceptable one", None)
);

shared_response!(
    /// 413 of a write: too large a body, or too many values.
    TooManyValues => error_response(
        "The body is larger than `http.json_body_limit_bytes`, or holds more than \
         `limits.max_values_per_write` values or more than 10 `service_api_key` values (`too_many_values`)",
        None,
    )
);

shared_response!(
    /// 400 of a write without a body: a malformed `Idempotency-Key`.
    InvalidKey => error_response(
        "The `Idempotency-Key` is empty, longer than 255 characters or not visible ASCII (`invalid_idempotency_key`)",
        None,
    )
);

shared_response!(
    /// 422 of a write: its `Idempotency-Key` came with another request before.
    KeyReused => error_response(
        "The `Idempotency-Key` was used by this caller on another request (method, path or body) \
         within 24 hours (`idempotency_key_reused`)",
        None,
    )
);

shared_response!(
    /// 400 of a thumbnail route: the size or the file cannot be rendered.
    ThumbnailRefused => error_response(
        "Invalid `size`, an unsupported file type, an image over 40 megapixels, a file that cannot be \
         decoded, or a PDF over `thumbnails.pdf_timeout_ms` (a failure is answered again, without \
         rendering, for 10 minutes)",
        None,
    )
);

shared_response!(
    /// 413 of a thumbnail route.
    SourceTooLarge => error_response("The source file is larger than 25 MB", None)
);

/// The 503s of a route that reads the database.
const READ: &[ErrorCode] = &[
    ErrorCode::QueryTimeout,
    ErrorCode::DatabaseBusy,
    ErrorCode::DatabaseUnavailable,
];
/// ... that writes through a database's writer.
const WRITE: &[ErrorCode] = &[
    ErrorCode::QueryTimeout,
    ErrorCode::DatabaseBusy,
    ErrorCode::DatabaseUnavailable,
    ErrorCode::WritesBusy,
    ErrorCode::WriteConflict,
];
/// ... that renders thumbnails.
const THUMBNAIL: &[ErrorCode] = &[
    ErrorCode::ThumbnailsBusy,
    ErrorCode::PdfUnavailable,
    ErrorCode::StorageUnavailable,
    ErrorCode::QueryTimeout,
    ErrorCode::DatabaseBusy,
    ErrorCode::DatabaseUnavailable,
];

shared_response!(
    /// 503 of a route that reads the database.
    ReadUnavailable => unavailable(READ)
);

shared_response!(
    /// 503 of a route that writes through the database's writer.
    WriteUnavailable => unavailable(WRITE)
);

shared_response!(
    /// 503 of a route that renders thumbnails.
    ThumbnailUnavailable => unavailable(THUMBNAIL)
);

#[cfg(test)]
mod tests {
    use super::*;

    fn description<'s, R: ToResponse<'s>>() -> String {
        match R::response().1 {
            RefOr::T(response) => response.description,
            RefOr::Ref(_) => panic!("shared responses are inline"),
        }
    }

    #[test]
    fn each_503_names_its_codes_with_their_reasons() {
        let cases = [
            (description::<ReadUnavailable>(), READ),
            (description::<WriteUnavailable>(), WRITE),
            (description::<ThumbnailUnavailable>(), THUMBNAIL),
        ];
        for (description, codes) in cases {
            assert!(description.contains("`Retry-After`"), "{description}");
            for code in ErrorCode::ALL.iter().filter(|code| code.unavailable_reason().is_some()) {
                let reason = format!("{} (`{code}`)", code.unavailable_reason().unwrap());
                assert_eq!(
                    description.contains(&reason),
                    codes.contains(code),
                    "{code} in {description}"
                );
            }
        }
    }

    #[test]
    fn error_responses_carry_the_error_body_schema() {
        let RefOr::T(response) = TokenRequired::response().1 else {
            panic!("shared responses are inline");
        };
        let schema = response.content["application/json"].schema.as_ref().unwrap();
        assert!(matches!(schema, RefOr::Ref(r) if r.ref_location == "#/components/schemas/ErrorBody"));
    }

    #[test]
    fn the_503_example_is_a_503_body() {
        let RefOr::T(response) = ReadUnavailable::response().1 else {
            panic!("shared responses are inline");
        };
        let example = response.content["application/json"].example.clone().unwrap();
        assert_eq!(example["status"], 503);
        assert_eq!(example["error"], "database_busy");
    }
}
