//! Object storage for file values and their thumbnails, behind one trait with
//! two backends: `s3` (any S3-compatible server, presigned URLs) and `local`
//! (files on disk, URLs signed and served by the service itself).
//!
//! Object keys are built only from validated parts (database name, entity and
//! value ids, a thumbnail size), never from a filename.

pub mod files;
pub mod local;
pub mod s3;
pub mod thumbnail;
pub mod thumbnailer;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::config::{Settings, StorageBackend};
use crate::error::{ApiError, ErrorCode};

/// Lifetime of every signed upload, download and thumbnail URL.
pub const URL_LIFETIME: Duration = Duration::from_secs(60);

/// The key of one object: `<db>/<entity id>/<value id>` for a file value,
/// `<db>/<entity id>/<value id>.thumbnail-<size>.jpg` for its thumbnails.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectKey(String);

impl ObjectKey {
    /// The key of a file value; `None` unless every part is a valid name or id.
    pub fn file(db: &str, entity_id: &str, value_id: &str) -> Option<ObjectKey> {
        (is_database_name(db) && is_object_id(entity_id) && is_object_id(value_id))
            .then(|| ObjectKey(format!("{db}/{entity_id}/{value_id}")))
    }

    /// The key of this file's thumbnail of side `size`.
    pub fn thumbnail(&self, size: u32) -> ObjectKey {
        ObjectKey(format!("{}.thumbnail-{size}.jpg", self.0))
    }

    /// A key given back in a URL: accepted only in one of the two shapes.
    pub fn parse(text: &str) -> Option<ObjectKey> {
        let (file, thumbnail) = match text.split_once('.') {
            Some((file, suffix)) => (file, Some(suffix)),
            None => (text, None),
        };
        let mut parts = file.split('/');
        let key = match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(db), Some(entity), Some(value), None) => ObjectKey::file(db, entity, value)?,
            _ => return None,
        };
        match thumbnail {
            None => Some(key),
            Some(suffix) => {
                let text = suffix.strip_prefix("thumbnail-")?.strip_suffix(".jpg")?;
                let size: u32 = text.parse().ok()?;
                (size.to_string() == text).then(|| key.thumbnail(size))
            }
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn is_database_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

fn is_object_id(id: &str) -> bool {
    id.len() == 24 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// What a signed upload URL accepts: exactly this type and length.
#[derive(Debug, Clone)]
pub struct Upload {
    pub content_type: String,
    pub content_length: u64,
    pub content_disposition: String,
}

/// How a signed download URL serves the object.
#[derive(Debug, Clone)]
pub struct Download {
    pub content_type: Option<String>,
    pub content_disposition: Option<String>,
}

/// The outcome of reading an object with a size cap.
#[derive(Debug)]
pub enum ReadObject {
    Missing,
    /// Larger than the cap; not read.
    TooLarge,
    Bytes(Vec<u8>),
}

#[derive(Debug, thiserror::Error)]
#[error("object storage: {0}")]
pub struct StoreError(pub String);

/// Object storage away, slow or failing is a moment to wait out, like the
/// database's: 503 with `Retry-After`, the cause in the log.
impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> ApiError {
        tracing::warn!(%error, "object storage unavailable");
        ApiError::new(
            ErrorCode::StorageUnavailable,
            "Object storage cannot be reached just now; retry later",
        )
    }
}

#[async_trait]
pub trait ObjectStore: Send + Sync {
    /// A URL accepting one `PUT` of exactly the given type and length, for [`URL_LIFETIME`].
    async fn presign_put(&self, key: &ObjectKey, upload: &Upload) -> Result<String, StoreError>;
    /// A URL answering the object, for [`URL_LIFETIME`].
    async fn presign_get(&self, key: &ObjectKey, download: &Download) -> Result<String, StoreError>;
    /// The object's bytes, unless it is missing or larger than `max_bytes`.
    async fn read(&self, key: &ObjectKey, max_bytes: u64) -> Result<ReadObject, StoreError>;
    /// Stores an object (thumbnails).
    async fn write(&self, key: &ObjectKey, bytes: Vec<u8>, content_type: &str) -> Result<(), StoreError>;
    async fn exists(&self, key: &ObjectKey) -> Result<bool, StoreError>;
    /// Whether the store answers (and accepts the credentials).
    async fn check(&self) -> Result<(), StoreError>;
}

/// The configured store, and the local backend again when this process
/// serves its URLs (see [`local::LocalStore`]).
pub struct Stores {
    pub store: Arc<dyn ObjectStore>,
    pub local: Option<Arc<local::LocalStore>>,
}

pub fn from_settings(settings: &Settings, secret: &[u8]) -> Result<Stores, String> {
    match settings.storage.backend {
        StorageBackend::Local => {
            let local = Arc::new(local::LocalStore::new(
                settings.storage.local.path.clone(),
                &settings.http.public_url,
                secret,
            ));
            Ok(Stores {
                store: local.clone(),
                local: Some(local),
            })
        }
        StorageBackend::S3 => Ok(Stores {
            store: Arc::new(s3::S3Store::new(&settings.storage.s3)?),
            local: None,
        }),
    }
}

/// Characters a `filename*` value keeps as they are (RFC 5987 `attr-char`).
const ATTR_CHAR: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'!')
    .remove(b'#')
    .remove(b'$')
    .remove(b'&')
    .remove(b'+')
    .remove(b'-')
    .remove(b'.')
    .remove(b'^')
    .remove(b'_')
    .remove(b'`')
    .remove(b'|')
    .remove(b'~');

/// `Content-Disposition` of a file: exactly `inline;filename="<filename>"` for
/// printable ASCII names without `"` or `\`; otherwise a sanitised ASCII
/// fallback in that form, followed by the exact name as
/// `; filename*=UTF-8''<percent-encoded>` (RFC 6266).
pub fn content_disposition(filename: &str) -> String {
    disposition("inline", filename)
}

/// `Content-Disposition` of a download: as [`content_disposition`] for a
/// passive type (see [`is_passive`]), otherwise `attachment`, so a browser
/// saves the file instead of rendering it on the origin that serves it.
pub fn download_disposition(filename: &str, content_type: Option<&str>) -> String {
    let disposition_type = if content_type.is_some_and(is_passive) {
        "inline"
    } else {
        "attachment"
    };
    disposition(disposition_type, filename)
}

/// Whether a browser only displays content of this type and never runs
/// script in it: images other than SVG (or any XML-based image), audio,
/// video, PDF and plain text. Everything else, HTML, XHTML, SVG, XML,
/// JavaScript and any type not listed included, is active.
pub fn is_passive(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    match essence.split_once('/') {
        Some(("image", subtype)) => !subtype.is_empty() && !subtype.contains("svg") && !subtype.contains("xml"),
        Some(("audio" | "video", subtype)) => !subtype.is_empty(),
        _ => essence == "application/pdf" || essence == "text/plain",
    }
}

fn disposition(disposition_type: &str, filename: &str) -> String {
    let plain = |c: char| (' '..='~').contains(&c) && c != '"' && c != '\\';
    if filename.chars().all(plain) {
        return format!("{disposition_type};filename=\"{filename}\"");
    }
    let fallback: String = filename.chars().map(|c| if plain(c) { c } else { '_' }).collect();
    format!(
        "{disposition_type};filename=\"{fallback}\"; filename*=UTF-8''{}",
        utf8_percent_encode(filename, ATTR_CHAR)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_ascii_names_take_the_exact_quoted_form() {
        assert_eq!(content_disposition("photo 1.jpg"), "inline;filename=\"photo 1.jpg\"");
        assert_eq!(content_disposition("a'b(c)~.pdf"), "inline;filename=\"a'b(c)~.pdf\"");
    }

    #[test]
    fn other_names_get_an_ascii_fallback_and_an_encoded_filename_star() {
        assert_eq!(
            content_disposition("õun ä.jpg"),
            "inline;filename=\"_un _.jpg\"; filename*=UTF-8''%C3%B5un%20%C3%A4.jpg"
        );
        assert_eq!(
            content_disposition("say \"hi\"\\.txt"),
            "inline;filename=\"say _hi__.txt\"; filename*=UTF-8''say%20%22hi%22%5C.txt"
        );
        assert_eq!(
            content_disposition("line\nbreak"),
            "inline;filename=\"line_break\"; filename*=UTF-8''line%0Abreak"
        );
    }

    #[test]
    fn only_images_other_than_svg_audio_video_pdf_and_plain_text_are_passive() {
        for passive in [
            "image/jpeg",
            "IMAGE/PNG",
            "image/gif; charset=x",
            "audio/mpeg",
            "video/mp4",
            "application/pdf",
            "text/plain; charset=utf-8",
        ] {
            assert!(is_passive(passive), "{passive}");
        }
        for active in [
            "text/html",
            "application/xhtml+xml",
            "image/svg+xml",
            "IMAGE/SVG+XML; charset=utf-8",
            "image/x-foo+xml",
            "text/xml",
            "application/xml",
            "text/javascript",
            "application/javascript",
            "application/octet-stream",
            "text/plain-but-not",
            "image/",
            "",
        ] {
            assert!(!is_passive(active), "{active}");
        }
    }

    #[test]
    fn downloads_of_active_types_are_attachments_with_the_same_names() {
        assert_eq!(
            download_disposition("a.jpg", Some("image/jpeg")),
            "inline;filename=\"a.jpg\""
        );
        assert_eq!(
            download_disposition("a.svg", Some("image/svg+xml")),
            "attachment;filename=\"a.svg\""
        );
        assert_eq!(download_disposition("a", None), "attachment;filename=\"a\"");
        assert_eq!(
            download_disposition("õ.html", Some("text/html")),
            "attachment;filename=\"_.html\"; filename*=UTF-8''%C3%B5.html"
        );
    }

    #[test]
    fn keys_are_built_only_from_valid_parts() {
        let entity = "0123456789abcdef01234567";
        let value = "89abcdef0123456789abcdef";
        let key = ObjectKey::file("demo", entity, value).unwrap();
        assert_eq!(key.as_str(), format!("demo/{entity}/{value}"));
        assert_eq!(
            key.thumbnail(200).as_str(),
            format!("demo/{entity}/{value}.thumbnail-200.jpg")
        );
        assert!(ObjectKey::file("../etc", entity, value).is_none());
        assert!(ObjectKey::file("demo", "..", value).is_none());
        assert!(ObjectKey::file("demo", entity, "0123456789ABCDEF01234567").is_none());
    }

    #[test]
    fn parsed_keys_round_trip_and_nothing_else_parses() {
        let key = ObjectKey::file("demo", "0123456789abcdef01234567", "89abcdef0123456789abcdef").unwrap();
        assert_eq!(ObjectKey::parse(key.as_str()), Some(key.clone()));
        assert_eq!(ObjectKey::parse(key.thumbnail(50).as_str()), Some(key.thumbnail(50)));
        for bad in [
            "demo/0123456789abcdef01234567",
            "demo/0123456789abcdef01234567/89abcdef0123456789abcdef/x",
            "demo/0123456789abcdef01234567/89abcdef0123456789abcdef.jpg",
            "demo/0123456789abcdef01234567/89abcdef0123456789abcdef.thumbnail-050.jpg",
            "../0123456789abcdef01234567/89abcdef0123456789abcdef",
            "",
        ] {
            assert_eq!(ObjectKey::parse(bad), None, "{bad}");
        }
    }
}
