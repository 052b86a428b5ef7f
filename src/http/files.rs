//! Files: signed uploads for created file values, download URLs, thumbnails
//! (`/api/{db}/entity/{_id}/thumbnail/{size}`,
//! `/api/{db}/property/{_id}/thumbnail/{size}`), and the local backend's
//! signed URLs (`/storage/{key}`).

use std::sync::Arc;
use std::time::Duration;

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Value as Json, json};

use super::views::files::{FileContent, SignedUrl, thumbnail_example};
use super::views::responses::{InvalidToken, SourceTooLarge, ThumbnailRefused, ThumbnailUnavailable};
use super::{AppState, Caller};
use crate::config::Settings;
use crate::error::{ApiError, ErrorBody, ErrorCode};
use crate::model::stored::ValueRow;
use crate::storage::local::{LocalStore, Refusal, Signed};
use crate::storage::thumbnail::{self, ThumbnailError};
use crate::storage::thumbnailer::{Thumbnailer, ThumbnailerConfig};
use crate::storage::{self, Download, ObjectKey, ObjectStore, Upload, content_disposition, download_disposition};
use crate::view::access;

/// Object storage and the thumbnail pool.
pub struct Files {
    pub store: Arc<dyn ObjectStore>,
    /// The local backend, when this process serves its URLs.
    pub local: Option<Arc<LocalStore>>,
    /// Largest upload to the local backend's signed URLs.
    pub upload_limit: u64,
    pub thumbnailer: Thumbnailer,
}

impl Files {
    /// `secret` is the service's signing material (`auth.jwt_secret`).
    pub fn from_settings(settings: &Settings, secret: &[u8]) -> Result<Files, String> {
        let storage::Stores { store, local } = storage::from_settings(settings, secret)?;
        let thumbnailer = Thumbnailer::start(
            store.clone(),
            ThumbnailerConfig {
                workers: settings.actors.thumbnail_workers,
                queue: settings.actors.thumbnail_queue,
                wait: Duration::from_millis(settings.actors.thumbnail_wait_ms),
                pdf_timeout: Duration::from_millis(settings.thumbnails.pdf_timeout_ms),
                pdf_renderer: settings.thumbnails.pdf_renderer.clone(),
                pdfium_library: settings.thumbnails.pdfium_library.clone(),
            },
        );
        Ok(Files {
            store,
            local,
            upload_limit: settings.storage.local.upload_limit_bytes,
            thumbnailer,
        })
    }

    /// `upload` of a file value a write stored: a signed PUT URL and the
    /// headers it takes; `None` for other values.
    pub async fn upload(&self, db: &str, value: &ValueRow) -> Result<Option<Json>, ApiError> {
        let (Some(filename), Some(filesize), Some(filetype)) = (
            &value.filename,
            value.filesize.and_then(|size| u64::try_from(size).ok()),
            &value.filetype,
        ) else {
            return Ok(None);
        };
        let key = ObjectKey::file(db, &value.entity_id, &value.id).ok_or_else(|| invalid_key(db))?;
        let upload = Upload {
            content_type: filetype.clone(),
            content_length: filesize,
            content_disposition: content_disposition(filename),
        };
        let url = self.store.presign_put(&key, &upload).await?;
        Ok(Some(json!({
            "url": url,
            "method": "PUT",
            "headers": {
                "ACL": "private",
                "Content-Disposition": upload.content_disposition,
                "Content-Length": upload.content_length,
                "Content-Type": upload.content_type,
            },
        })))
    }

    /// A fresh download URL of a file value; `None` for other values.
    pub async fn download_url(&self, db: &str, value: &ValueRow) -> Result<Option<String>, ApiError> {
        let Some(filename) = &value.filename else {
            return Ok(None);
        };
        let key = ObjectKey::file(db, &value.entity_id, &value.id).ok_or_else(|| invalid_key(db))?;
        let download = Download {
            content_type: value.filetype.clone(),
            content_disposition: Some(download_disposition(filename, value.filetype.as_deref())),
        };
        Ok(Some(self.store.presign_get(&key, &download).await?))
    }

    /// `{url}` of the thumbnail of `source`, rendered first when needed.
    async fn thumbnail_url(&self, source: &ObjectKey, size: u32) -> Result<HttpResponse, ApiError> {
        let key = self.thumbnailer.thumbnail(source, size).await?;
        let download = Download {
            content_type: Some("image/jpeg".into()),
            content_disposition: None,
        };
        let url = self.store.presign_get(&key, &download).await?;
        Ok(HttpResponse::Ok().json(SignedUrl { url }))
    }
}

fn invalid_key(db: &str) -> ApiError {
    ApiError::internal("object key", format!("database name {db:?} cannot name objects"))
}

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
    state.require_database(&db).await?;
    let size = thumbnail::parse_size(&size)?;
    let entity = {
        let mut conn = state.pool.get().await?;
        access::entity_doc(&mut conn, &db, &id, caller.person_in(&db)).await?
    };
    let photo = entity
        .get("photo")
        .and_then(Json::as_array)
        .and_then(|photos| photos.iter().find(|photo| photo.get("filename").is_some()))
        .ok_or_else(|| ApiError::not_found("The entity has no photo"))?;
    if photo
        .get("filetype")
        .and_then(Json::as_str)
        .is_some_and(|filetype| filetype.to_ascii_lowercase().starts_with("image/svg"))
    {
        return Err(ThumbnailError::Unsupported.into());
    }
    let value_id = photo.get("_id").and_then(Json::as_str).unwrap_or_default();
    let key = ObjectKey::file(&db, &id, value_id).ok_or_else(|| invalid_key(&db))?;
    state.files.thumbnail_url(&key, size).await
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
    state.require_database(&db).await?;
    let size = thumbnail::parse_size(&size)?;
    let value = {
        let mut conn = state.pool.get().await?;
        access::shown_value(&mut conn, &db, &id, caller.person_in(&db)).await?
    };
    if value.filename.is_none() {
        return Err(ThumbnailError::Unsupported.into());
    }
    let key = ObjectKey::file(&db, &value.entity_id, &value.id).ok_or_else(|| invalid_key(&db))?;
    state.files.thumbnail_url(&key, size).await
}

/// The local backend and the signed request's key and query; 403 for
/// anything a signature cannot vouch for.
fn signed_request<'a>(
    state: &'a AppState,
    req: &HttpRequest,
    key: &str,
) -> Result<(&'a LocalStore, ObjectKey, Signed), ApiError> {
    let local = state.files.local.as_deref().ok_or_else(super::not_found)?;
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
