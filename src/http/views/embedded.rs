//! Files compiled into the binary for the pages eds serves (the docs page's
//! and the GraphQL console's scripts and style sheets): no outside requests.

use actix_web::HttpResponse;
use actix_web::http::header;

use crate::error::ApiError;

/// An embedded file: its name in the URL, its content type, its bytes.
pub type EmbeddedFile = (&'static str, &'static str, &'static [u8]);

/// The file of `files` named `name`, cacheable for an hour; 404 otherwise.
pub fn serve(files: &[EmbeddedFile], name: &str) -> Result<HttpResponse, ApiError> {
    let (_, content_type, bytes) = files
        .iter()
        .find(|(file, _, _)| *file == name)
        .ok_or_else(ApiError::route_not_found)?;
    Ok(HttpResponse::Ok()
        .content_type(*content_type)
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::CACHE_CONTROL, "public, max-age=3600"))
        .body(*bytes))
}
