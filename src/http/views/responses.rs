//! Error responses the document builds by hand.

use serde_json::Value as Json;
use utoipa::ToSchema;
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::{ContentBuilder, Ref};

use crate::error::ErrorBody;

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
