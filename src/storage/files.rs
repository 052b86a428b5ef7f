//! The file service: object storage and the thumbnail pool together, as the
//! file routes use them — signed uploads for stored file values, download
//! URLs, and thumbnails rendered once and then only signed.

use std::sync::Arc;
use std::time::Duration;

use crate::config::Settings;
use crate::error::ApiError;
use crate::model::stored::ValueRow;
use crate::storage::local::LocalStore;
use crate::storage::thumbnailer::{Thumbnailer, ThumbnailerConfig};
use crate::storage::{self, Download, ObjectKey, ObjectStore, Upload, content_disposition, download_disposition};

/// A signed PUT URL and the headers the upload must send.
pub struct SignedUpload {
    pub url: String,
    pub upload: Upload,
}

/// Object storage and the thumbnail pool.
pub struct FileService {
    pub store: Arc<dyn ObjectStore>,
    /// The local backend, when this process serves its URLs.
    pub local: Option<Arc<LocalStore>>,
    /// Largest upload to the local backend's signed URLs.
    pub upload_limit: u64,
    pub thumbnailer: Thumbnailer,
}

impl FileService {
    /// `secret` is the service's signing material (`auth.jwt_secret`).
    pub fn from_settings(settings: &Settings, secret: &[u8]) -> Result<FileService, String> {
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
        Ok(FileService {
            store,
            local,
            upload_limit: settings.storage.local.upload_limit_bytes,
            thumbnailer,
        })
    }

    /// Where the content of a file value a write stored goes: a signed PUT
    /// URL and the headers it takes; `None` for other values.
    pub async fn upload(&self, db: &str, value: &ValueRow) -> Result<Option<SignedUpload>, ApiError> {
        let (Some(filename), Some(filesize), Some(filetype)) = (
            &value.filename,
            value.filesize.and_then(|size| u64::try_from(size).ok()),
            &value.filetype,
        ) else {
            return Ok(None);
        };
        let key = ObjectKey::file(db, &value.entity_id, value.object_value_id()).ok_or_else(|| invalid_key(db))?;
        let upload = Upload {
            content_type: filetype.clone(),
            content_length: filesize,
            content_disposition: content_disposition(filename),
        };
        let url = self.store.presign_put(&key, &upload).await?;
        Ok(Some(SignedUpload { url, upload }))
    }

    /// Whether the content of file value `value` is stored.
    pub async fn is_stored(&self, db: &str, value: &ValueRow) -> Result<bool, ApiError> {
        let key = ObjectKey::file(db, &value.entity_id, value.object_value_id()).ok_or_else(|| invalid_key(db))?;
        Ok(self.store.exists(&key).await?)
    }

    /// A fresh download URL of a file value; `None` for other values.
    pub async fn download_url(&self, db: &str, value: &ValueRow) -> Result<Option<String>, ApiError> {
        let Some(filename) = &value.filename else {
            return Ok(None);
        };
        let key = ObjectKey::file(db, &value.entity_id, value.object_value_id()).ok_or_else(|| invalid_key(db))?;
        let download = Download {
            content_type: value.filetype.clone(),
            content_disposition: Some(download_disposition(filename, value.filetype.as_deref())),
        };
        Ok(Some(self.store.presign_get(&key, &download).await?))
    }

    /// A URL of the thumbnail of a file value, rendered first when needed.
    pub async fn thumbnail_url(
        &self,
        db: &str,
        entity_id: &str,
        value_id: &str,
        size: u32,
    ) -> Result<String, ApiError> {
        let source = ObjectKey::file(db, entity_id, value_id).ok_or_else(|| invalid_key(db))?;
        let key = self.thumbnailer.thumbnail(&source, size).await?;
        let download = Download {
            content_type: Some("image/jpeg".into()),
            content_disposition: None,
        };
        Ok(self.store.presign_get(&key, &download).await?)
    }
}

fn invalid_key(db: &str) -> ApiError {
    ApiError::internal("object key", format!("database name {db:?} cannot name objects"))
}
