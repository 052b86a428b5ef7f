//! The local backend: objects are files under `storage.local.path`, uploaded
//! and downloaded through URLs the service signs (HMAC-SHA256 with an expiry)
//! and serves itself at `/storage/{key}`, with the checks S3 makes: a PUT
//! whose `Content-Type` or `Content-Length` differs from the signed one, or an
//! expired or altered URL, is refused.

use std::io::ErrorKind;
use std::path::PathBuf;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use hmac::{Hmac, Mac};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{Download, ObjectKey, ObjectStore, ReadObject, StoreError, URL_LIFETIME, Upload};

type HmacSha256 = Hmac<Sha256>;

/// Path prefix of the routes serving the local backend's URLs.
pub const ROUTE_PREFIX: &str = "/storage/";

pub struct LocalStore {
    root: PathBuf,
    public_url: String,
    key: Vec<u8>,
}

/// The query of a signed URL.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Signed {
    #[serde(default)]
    pub expires: i64,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(rename = "length", skip_serializing_if = "Option::is_none")]
    pub content_length: Option<u64>,
    #[serde(rename = "disposition", skip_serializing_if = "Option::is_none")]
    pub content_disposition: Option<String>,
    #[serde(default)]
    pub signature: String,
}

/// Why a request to a signed URL is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Expired,
    BadSignature,
    ContentType,
    ContentLength,
}

impl LocalStore {
    /// `secret` is the service's signing material; the URL key is derived from
    /// it, so every process sharing `auth.jwt_secret` accepts the same URLs.
    pub fn new(root: PathBuf, public_url: &str, secret: &[u8]) -> LocalStore {
        let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC takes any key length");
        mac.update(b"eds local storage URLs");
        LocalStore {
            root,
            public_url: public_url.trim_end_matches('/').to_owned(),
            key: mac.finalize().into_bytes().to_vec(),
        }
    }

    fn path(&self, key: &ObjectKey) -> PathBuf {
        // Keys hold only validated names and ids (see ObjectKey).
        self.root.join(key.as_str())
    }

    fn mac(&self, method: &str, key: &ObjectKey, signed: &Signed) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC takes any key length");
        let length = signed.content_length.map(|length| length.to_string());
        let fields = [
            Some(method),
            Some(key.as_str()),
            Some(&signed.expires.to_string()[..]),
            signed.content_type.as_deref(),
            length.as_deref(),
            signed.content_disposition.as_deref(),
        ];
        // Length-prefixed fields: no two different requests sign the same bytes.
        for field in fields {
            match field {
                None => mac.update(&[0]),
                Some(text) => {
                    mac.update(&[1]);
                    mac.update(&(text.len() as u64).to_be_bytes());
                    mac.update(text.as_bytes());
                }
            }
        }
        mac
    }

    fn url(&self, method: &str, key: &ObjectKey, mut signed: Signed) -> Result<String, StoreError> {
        signed.expires = chrono::Utc::now().timestamp() + URL_LIFETIME.as_secs() as i64;
        signed.signature = hex::encode(self.mac(method, key, &signed).finalize().into_bytes());
        let query = serde_urlencoded::to_string(&signed).map_err(|e| StoreError(e.to_string()))?;
        Ok(format!("{}{ROUTE_PREFIX}{}?{query}", self.public_url, key.as_str()))
    }

    /// Checks a request to a signed URL: signature (constant-time), expiry,
    /// and for a PUT the request's `Content-Type` and `Content-Length`.
    pub fn verify(
        &self,
        method: &str,
        key: &ObjectKey,
        signed: &Signed,
        content_type: Option<&str>,
        content_length: Option<u64>,
    ) -> Result<(), Refusal> {
        let signature = hex::decode(&signed.signature).map_err(|_| Refusal::BadSignature)?;
        self.mac(method, key, signed)
            .verify_slice(&signature)
            .map_err(|_| Refusal::BadSignature)?;
        if chrono::Utc::now().timestamp() > signed.expires {
            return Err(Refusal::Expired);
        }
        if method == "PUT" {
            if content_type != signed.content_type.as_deref() {
                return Err(Refusal::ContentType);
            }
            if content_length != signed.content_length {
                return Err(Refusal::ContentLength);
            }
        }
        Ok(())
    }

    /// Stores an upload of `length` bytes; the object appears whole or not at all.
    pub async fn put_stream<E: std::fmt::Display>(
        &self,
        key: &ObjectKey,
        length: u64,
        mut body: impl Stream<Item = Result<Bytes, E>> + Unpin,
    ) -> Result<(), StoreError> {
        let (partial, mut file) = self.partial_file(key).await?;
        let mut written = 0u64;
        let result = async {
            while let Some(chunk) = body.next().await {
                let chunk = chunk.map_err(|e| StoreError(format!("upload interrupted: {e}")))?;
                written += chunk.len() as u64;
                if written > length {
                    return Err(StoreError("upload longer than signed".into()));
                }
                file.write_all(&chunk).await.map_err(io_error)?;
            }
            if written != length {
                return Err(StoreError("upload shorter than signed".into()));
            }
            file.flush().await.map_err(io_error)
        }
        .await;
        self.finish(key, partial, result).await
    }

    /// The object's file and size, for serving a download.
    pub async fn open(&self, key: &ObjectKey) -> Result<Option<(tokio::fs::File, u64)>, StoreError> {
        match tokio::fs::File::open(self.path(key)).await {
            Ok(file) => {
                let size = file.metadata().await.map_err(io_error)?.len();
                Ok(Some((file, size)))
            }
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(e)),
        }
    }

    async fn partial_file(&self, key: &ObjectKey) -> Result<(PathBuf, tokio::fs::File), StoreError> {
        let path = self.path(key);
        if let Some(parent) = path.parent() {
            tokio::fs::create_dir_all(parent).await.map_err(io_error)?;
        }
        let mut nonce = [0u8; 8];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let mut partial = path.into_os_string();
        partial.push(format!(".partial-{}", hex::encode(nonce)));
        let partial = PathBuf::from(partial);
        let file = tokio::fs::File::create(&partial).await.map_err(io_error)?;
        Ok((partial, file))
    }

    async fn finish(
        &self,
        key: &ObjectKey,
        partial: PathBuf,
        result: Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        match result {
            Ok(()) => tokio::fs::rename(&partial, self.path(key)).await.map_err(io_error),
            Err(error) => {
                let _ = tokio::fs::remove_file(&partial).await;
                Err(error)
            }
        }
    }
}

fn io_error(error: std::io::Error) -> StoreError {
    StoreError(error.to_string())
}

#[async_trait]
impl ObjectStore for LocalStore {
    async fn presign_put(&self, key: &ObjectKey, upload: &Upload) -> Result<String, StoreError> {
        self.url(
            "PUT",
            key,
            Signed {
                content_type: Some(upload.content_type.clone()),
                content_length: Some(upload.content_length),
                content_disposition: Some(upload.content_disposition.clone()),
                ..Signed::default()
            },
        )
    }

    async fn presign_get(&self, key: &ObjectKey, download: &Download) -> Result<String, StoreError> {
        self.url(
            "GET",
            key,
            Signed {
                content_type: download.content_type.clone(),
                content_disposition: download.content_disposition.clone(),
                ..Signed::default()
            },
        )
    }

    async fn read(&self, key: &ObjectKey, max_bytes: u64) -> Result<ReadObject, StoreError> {
        let Some((file, size)) = self.open(key).await? else {
            return Ok(ReadObject::Missing);
        };
        if size > max_bytes {
            return Ok(ReadObject::TooLarge);
        }
        let mut bytes = Vec::with_capacity(size as usize);
        let mut capped = file.take(max_bytes + 1);
        capped.read_to_end(&mut bytes).await.map_err(io_error)?;
        if bytes.len() as u64 > max_bytes {
            return Ok(ReadObject::TooLarge);
        }
        Ok(ReadObject::Bytes(bytes))
    }

    async fn write(&self, key: &ObjectKey, bytes: Vec<u8>, _content_type: &str) -> Result<(), StoreError> {
        let (partial, mut file) = self.partial_file(key).await?;
        let result = async {
            file.write_all(&bytes).await?;
            file.flush().await
        }
        .await
        .map_err(io_error);
        self.finish(key, partial, result).await
    }

    async fn exists(&self, key: &ObjectKey) -> Result<bool, StoreError> {
        tokio::fs::try_exists(self.path(key)).await.map_err(io_error)
    }

    async fn check(&self) -> Result<(), StoreError> {
        tokio::fs::create_dir_all(&self.root).await.map_err(io_error)
    }
}
