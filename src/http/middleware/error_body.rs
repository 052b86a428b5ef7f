//! The JSON error body for errors actix answers before a handler runs.

use actix_web::dev::ServiceResponse;
use actix_web::http::header;
use actix_web::middleware::ErrorHandlerResponse;

use crate::error::{ErrorBody, ErrorCode};

/// Error responses made outside the handlers (payload limits, method
/// mismatches) get the same JSON body as every other error.
pub fn json_error_body<B>(response: ServiceResponse<B>) -> actix_web::Result<ErrorHandlerResponse<B>> {
    // A handler's own error is JSON, or a page for a person (text/html);
    // actix's are plain text.
    let made_by_a_handler = response.headers().get(header::CONTENT_TYPE).is_some_and(|value| {
        value.as_bytes().starts_with(b"application/json") || value.as_bytes().starts_with(b"text/html")
    });
    if made_by_a_handler || !(response.status().is_client_error() || response.status().is_server_error()) {
        return Ok(ErrorHandlerResponse::Response(response.map_into_left_body()));
    }
    let status = response.status();
    let message = status.canonical_reason().unwrap_or("Error");
    let code = match status.as_u16() {
        413 => ErrorCode::PayloadTooLarge,
        405 => ErrorCode::MethodNotAllowed,
        404 => ErrorCode::NotFound,
        _ if status.is_server_error() => ErrorCode::Internal,
        _ => ErrorCode::BadRequest,
    };
    let (request, _) = response.into_parts();
    let body = actix_web::HttpResponse::build(status).json(ErrorBody {
        status: status.as_u16(),
        error: code.as_str(),
        message,
        operation: None,
    });
    Ok(ErrorHandlerResponse::Response(
        ServiceResponse::new(request, body).map_into_right_body(),
    ))
}
