//! Thumbnails and the local storage backend's signed URLs.

use serde::Serialize;
use serde_json::{Value as Json, json};
use utoipa::ToSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};

/// A signed URL valid 60 seconds.
#[derive(Serialize, ToSchema)]
pub struct SignedUrl {
    pub url: String,
}

/// A file's bytes, as the storage routes take and give them.
pub struct FileContent;

impl utoipa::PartialSchema for FileContent {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .content_media_type("application/octet-stream")
            .into()
    }
}

impl ToSchema for FileContent {}

pub fn thumbnail_example() -> Json {
    json!({"url": "http://127.0.0.1:8080/storage/demo/6571f3a4c2b9e8d7f6a5b4c3/6571f3a4c2b9e8d7f6a5b4c6/thumbnail/200?expires=1795000000&type=image%2Fjpeg&signature=..."})
}
