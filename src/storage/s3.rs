//! The S3 backend (`rust-s3`): presigned PUT and GET URLs on any S3-compatible
//! server. The upload URL signs `Content-Type`, `Content-Length` and
//! `Content-Disposition`; `ACL: private` is not an S3 header and stays
//! unsigned, so a client sending it as given still matches.

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use async_trait::async_trait;
use s3::creds::Credentials;
use s3::error::S3Error;
use s3::{Bucket, Region};

use super::{Download, ObjectKey, ObjectStore, ReadObject, StoreError, URL_LIFETIME, Upload};
use crate::config::S3Settings;

pub struct S3Store {
    bucket: Box<Bucket>,
    timeout: Duration,
}

impl S3Store {
    pub fn new(settings: &S3Settings) -> Result<S3Store, String> {
        if settings.endpoint.is_empty() || settings.bucket.is_empty() {
            return Err("storage.backend = \"s3\" needs storage.s3.endpoint and storage.s3.bucket".into());
        }
        let region = Region::Custom {
            region: settings.region.clone(),
            endpoint: settings.endpoint.trim_end_matches('/').to_owned(),
        };
        let credentials = Credentials::new(Some(&settings.access_key), Some(&settings.secret_key), None, None, None)
            .map_err(|e| format!("storage.s3 credentials: {e}"))?;
        let timeout = Duration::from_millis(settings.timeout_ms);
        let mut bucket = Bucket::new(&settings.bucket, region, credentials)
            .and_then(|bucket| bucket.with_request_timeout(timeout))
            .map_err(|e| format!("storage.s3: {e}"))?;
        if settings.path_style {
            bucket = bucket.with_path_style();
        }
        Ok(S3Store { bucket, timeout })
    }

    /// Every call to the server is bounded by `storage.s3.timeout_ms`, retries included.
    async fn call<T>(&self, what: &str, call: impl Future<Output = Result<T, S3Error>>) -> Result<T, StoreError> {
        match tokio::time::timeout(self.timeout, call).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(StoreError(format!("{what}: {error}"))),
            Err(_) => Err(StoreError(format!("{what}: no answer within {:?}", self.timeout))),
        }
    }

    /// The object's size, `None` when it does not exist.
    async fn size(&self, key: &ObjectKey) -> Result<Option<u64>, StoreError> {
        let (head, status) = self.call("HEAD object", self.bucket.head_object(key.as_str())).await?;
        match status {
            200 => Ok(Some(head.content_length.unwrap_or(0).max(0) as u64)),
            404 => Ok(None),
            other => Err(StoreError(format!("HEAD object answered {other}"))),
        }
    }
}

fn header(value: &str) -> Result<http::HeaderValue, StoreError> {
    http::HeaderValue::from_str(value).map_err(|_| StoreError("a header value that cannot be sent".into()))
}

#[async_trait]
impl ObjectStore for S3Store {
    async fn presign_put(&self, key: &ObjectKey, upload: &Upload) -> Result<String, StoreError> {
        let mut headers = http::HeaderMap::new();
        headers.insert(http::header::CONTENT_TYPE, header(&upload.content_type)?);
        headers.insert(http::header::CONTENT_LENGTH, upload.content_length.into());
        headers.insert(http::header::CONTENT_DISPOSITION, header(&upload.content_disposition)?);
        self.call(
            "presign PUT",
            self.bucket
                .presign_put(key.as_str(), URL_LIFETIME.as_secs() as u32, Some(headers), None),
        )
        .await
    }

    async fn presign_get(&self, key: &ObjectKey, download: &Download) -> Result<String, StoreError> {
        let mut queries = HashMap::new();
        if let Some(disposition) = &download.content_disposition {
            queries.insert("response-content-disposition".to_owned(), disposition.clone());
        }
        if let Some(content_type) = &download.content_type {
            queries.insert("response-content-type".to_owned(), content_type.clone());
        }
        self.call(
            "presign GET",
            self.bucket.presign_get(
                key.as_str(),
                URL_LIFETIME.as_secs() as u32,
                (!queries.is_empty()).then_some(queries),
            ),
        )
        .await
    }

    async fn read(&self, key: &ObjectKey, max_bytes: u64) -> Result<ReadObject, StoreError> {
        match self.size(key).await? {
            None => return Ok(ReadObject::Missing),
            Some(size) if size > max_bytes => return Ok(ReadObject::TooLarge),
            Some(_) => {}
        }
        let response = self.call("GET object", self.bucket.get_object(key.as_str())).await?;
        match response.status_code() {
            200 if response.bytes().len() as u64 > max_bytes => Ok(ReadObject::TooLarge),
            200 => Ok(ReadObject::Bytes(response.to_vec())),
            404 => Ok(ReadObject::Missing),
            other => Err(StoreError(format!("GET object answered {other}"))),
        }
    }

    async fn write(&self, key: &ObjectKey, bytes: Vec<u8>, content_type: &str) -> Result<(), StoreError> {
        let response = self
            .call(
                "PUT object",
                self.bucket
                    .put_object_with_content_type(key.as_str(), &bytes, content_type),
            )
            .await?;
        match response.status_code() {
            200 => Ok(()),
            other => Err(StoreError(format!("PUT object answered {other}"))),
        }
    }

    async fn exists(&self, key: &ObjectKey) -> Result<bool, StoreError> {
        Ok(self.size(key).await?.is_some())
    }

    async fn check(&self) -> Result<(), StoreError> {
        // Any object will do: 404 proves the server answers and takes the credentials.
        let (_, status) = self
            .call("HEAD probe", self.bucket.head_object("eds-reachability-probe"))
            .await?;
        match status {
            200 | 404 => Ok(()),
            other => Err(StoreError(format!("HEAD probe answered {other}"))),
        }
    }
}
