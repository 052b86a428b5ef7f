//! The file routes: thumbnails (`/api/{db}/entity/{_id}/thumbnail/{size}`,
//! `/api/{db}/property/{_id}/thumbnail/{size}`) and the local backend's
//! signed URLs (`/storage/{key}`). Signing and rendering are the file
//! service's (`crate::storage::files`).

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};

use super::views::files::{FileContent, SignedUrl, thumbnail_example};
use super::views::responses::{InvalidToken, SourceTooLarge, ThumbnailRefused, ThumbnailUnavailable};
use super::{AppState, Caller};
use crate::error::{ApiError, ErrorBody, ErrorCode};
use crate::service::thumbnails;
use crate::storage::ObjectKey;
use crate::storage::local::{LocalStore, Refusal, Signed};

/// `GET /api/{db}/entity/{_id}/thumbnail/{size}`: of the first file of `photo`.
#[utoipa::path(
    get, path = "/api/{db}/entity/{id}/thumbnail/{size}", operation_id = "entity_thumbnail", tag = "files", summary = "Thumbnail of an entity's photo",
    description = "A square JPEG (center-cropped) of the first file of the entity's `photo` property: images (JPEG, PNG, GIF, BMP, TIFF) and PDF first pages, not SVG.",
    security((), ("jwt" = [])),
    params(("db" = String, Path, description = "Database name", example = "demo"), ("id" = String, Path, description = "Entity id (24 lowercase hex characters)", example = "6571f3a4c2b9e8d7f6a5b4c3"), ("size" = u32, Path, description = "Side of the square thumbnail in pixels: 50, 200 or 400", example = 200)),
    responses(
        (status = 200, description = "Where to get the thumbnail", body = SignedUrl, example = thumbnail_example),
        (status = 400, response = inline(ThumbnailRefused)),
        (status = 401, response = inline(InvalidToken)),
        (status = 404, description = "The entity is missing or not visible, has no `photo`, or its file is missing from storage", body = ErrorBody),
        (status = 413, response = inline(SourceTooLarge)),
        (status = 503, response = inline(ThumbnailUnavailable)),
    )
)]
pub async fn entity_thumbnail(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (db, id, size) = path.into_inner();
    let url = thumbnails::of_entity(&state, &caller, &db, &id, &size).await?;
    Ok(HttpResponse::Ok().json(SignedUrl { url }))
}

/// `GET /api/{db}/property/{_id}/thumbnail/{size}`: of that file value.
#[utoipa::path(
    get, path = "/api/{db}/property/{id}/thumbnail/{size}", operation_id = "property_thumbnail", tag = "files", summary = "Thumbnail of a file value",
    description = "A square JPEG (center-cropped) of that image or PDF file value.",
    security((), ("jwt" = [])),
    params(("db" = String, Path, description = "Database name", example = "demo"), ("id" = String, Path, description = "Property value id (24 lowercase hex characters)", example = "6571f3a4c2b9e8d7f6a5b4c6"), ("size" = u32, Path, description = "Side of the square thumbnail in pixels: 50, 200 or 400", example = 200)),
    responses(
        (status = 200, description = "Where to get the thumbnail", body = SignedUrl, example = thumbnail_example),
        (status = 400, response = inline(ThumbnailRefused)),
        (status = 401, response = inline(InvalidToken)),
        (status = 404, description = "The value is missing or not visible, or its file is missing from storage", body = ErrorBody),
        (status = 413, response = inline(SourceTooLarge)),
        (status = 503, response = inline(ThumbnailUnavailable)),
    )
)]
pub async fn property_thumbnail(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<(String, String, String)>,
) -> Result<HttpResponse, ApiError> {
    let (db, id, size) = path.into_inner();
    let url = thumbnails::of_value(&state, &caller, &db, &id, &size).await?;
    Ok(HttpResponse::Ok().json(SignedUrl { url }))
}

/// The local backend and the signed request's key and query; 403 for
/// anything a signature cannot vouch for.
fn signed_request<'a>(
    state: &'a AppState,
    req: &HttpRequest,
    key: &str,
) -> Result<(&'a LocalStore, ObjectKey, Signed), ApiError> {
    let local = state.files.local.as_deref().ok_or_else(ApiError::route_not_found)?;
    let key = ObjectKey::parse(key).ok_or_else(|| refused(Refusal::BadSignature))?;
    let signed: Signed = serde_urlencoded::from_str(req.query_string()).map_err(|_| refused(Refusal::BadSignature))?;
    Ok((local, key, signed))
}

fn refused(refusal: Refusal) -> ApiError {
    let (code, message) = match refusal {
        Refusal::Expired => (ErrorCode::RequestExpired, "Request has expired"),
        Refusal::BadSignature => (
            ErrorCode::SignatureDoesNotMatch,
            "The request signature does not match the URL",
        ),
        Refusal::ContentType => (
            ErrorCode::SignatureDoesNotMatch,
            "Content-Type differs from the signed one",
        ),
        Refusal::ContentLength => (
            ErrorCode::SignatureDoesNotMatch,
            "Content-Length differs from the signed one",
        ),
    };
    ApiError::new(code, message)
}

/// `PUT /storage/{key}`: an upload to a URL the local backend signed.
#[utoipa::path(
    put, path = "/storage/{key}", operation_id = "storage_upload", tag = "files", summary = "Upload to a signed URL (local storage)",
    description = "The `upload.url` of a created file value when files are stored locally: send exactly the returned headers within 60 seconds.",
    params(("key" = String, Path, description = "Object key (may contain `/`)", example = "demo/6571f3a4c2b9e8d7f6a5b4c3/6571f3a4c2b9e8d7f6a5b4c6"),
        ("expires" = i64, Query, description = "Unix seconds after which the URL is refused"),
        ("type" = Option<String>, Query, description = "The signed `Content-Type`"),
        ("length" = Option<u64>, Query, description = "The signed `Content-Length`"),
        ("disposition" = Option<String>, Query, description = "The signed `Content-Disposition`"),
        ("signature" = String, Query, description = "HMAC of the rest")),
    request_body(content = inline(FileContent), content_type = "application/octet-stream", description = "The file's content"),
    responses(
        (status = 200, description = "Stored"),
        (status = 400, description = "The upload failed", body = ErrorBody),
        (status = 403, description = "Expired or altered URL, or `Content-Type` or `Content-Length` other than the signed ones", body = ErrorBody),
        (status = 404, description = "Files are not stored locally", body = ErrorBody),
    )
)]
pub async fn storage_put(
    state: web::Data<AppState>,
    req: HttpRequest,
    key: web::Path<String>,
    body: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let (local, key, signed) = signed_request(&state, &req, &key)?;
    let text = |name: header::HeaderName| req.headers().get(name).and_then(|value| value.to_str().ok());
    let content_length = text(header::CONTENT_LENGTH).and_then(|length| length.parse::<u64>().ok());
    // The length must match the signed one, so the header bounds what is streamed.
    if content_length.is_some_and(|length| length > state.files.upload_limit) {
        return Err(ApiError::new(
            ErrorCode::PayloadTooLarge,
            format!("Uploads are limited to {} bytes", state.files.upload_limit),
        ));
    }
    local
        .verify("PUT", &key, &signed, text(header::CONTENT_TYPE), content_length)
        .map_err(refused)?;
    local
        .put_stream(&key, content_length.unwrap_or_default(), body)
        .await
        .map_err(|e| ApiError::new(ErrorCode::UploadFailed, e.to_string()))?;
    Ok(HttpResponse::Ok().finish())
}

/// `GET /storage/{key}`: a download from a URL the local backend signed.
#[utoipa::path(
    get, path = "/storage/{key}", operation_id = "storage_download", tag = "files", summary = "Download from a signed URL (local storage)",
    description = "A download or thumbnail URL when files are stored locally.",
    params(("key" = String, Path, description = "Object key (may contain `/`)", example = "demo/6571f3a4c2b9e8d7f6a5b4c3/6571f3a4c2b9e8d7f6a5b4c6"),
        ("expires" = i64, Query, description = "Unix seconds after which the URL is refused"),
        ("type" = Option<String>, Query, description = "The signed `Content-Type`"),
        ("length" = Option<u64>, Query, description = "The signed `Content-Length`"),
        ("disposition" = Option<String>, Query, description = "The signed `Content-Disposition`"),
        ("signature" = String, Query, description = "HMAC of the rest")),
    responses(
        (status = 200, description = "The content, with the signed content type and disposition, `X-Content-Type-Options: nosniff` and `Content-Security-Policy: sandbox`", content_type = "application/octet-stream", body = inline(FileContent)),
        (status = 403, description = "Expired or altered URL", body = ErrorBody),
        (status = 404, description = "Files are not stored locally, or the file is missing", body = ErrorBody),
    )
)]
pub async fn storage_get(
    state: web::Data<AppState>,
    req: HttpRequest,
    key: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (local, key, signed) = signed_request(&state, &req, &key)?;
    local.verify("GET", &key, &signed, None, None).map_err(refused)?;
    let (file, size) = local
        .open(&key)
        .await?
        .ok_or_else(|| ApiError::not_found("File not found in storage"))?;
    let mut response = HttpResponse::Ok();
    // Stored files are served on the service's own origin: a browser must not
    // guess another type, and whatever it renders runs with no origin, no
    // script and no forms.
    response.insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"));
    response.insert_header((header::CONTENT_SECURITY_POLICY, "sandbox"));
    response.insert_header((
        header::CONTENT_TYPE,
        signed.content_type.as_deref().unwrap_or("application/octet-stream"),
    ));
    if let Some(disposition) = &signed.content_disposition {
        response.insert_header((header::CONTENT_DISPOSITION, disposition.as_str()));
    }
    Ok(response
        .no_chunking(size)
        .streaming(tokio_util::io::ReaderStream::new(file)))
}
