//! `GET /guide/{path}`: the guide (`docs/guide/`, built by `make docs`)
//! served from `docs.guide_dir`, so a running server carries its manual and
//! the docs page's tags can link into it.

use std::path::{Component, Path, PathBuf};

use actix_web::http::header::{self, ContentType};
use actix_web::{HttpResponse, web};

use crate::error::{ApiError, ErrorBody};

/// The directory of the built guide (`docs.guide_dir`).
pub struct GuideDir(pub PathBuf);

/// Answered while the guide has not been built next to the server.
const NOT_BUILT: &str = "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<title>The guide is not built</title></head><body><h1>The guide is not built here</h1>\
<p>Run <code>make docs</code> in the eds checkout (it builds <code>docs/guide/book/</code>), \
or set <code>docs.guide_dir</code> to a built guide. The API reference is at <a href=\"/docs\">/docs</a>.</p>\
</body></html>";

/// The file under `dir` that `path` names: a directory's `index.html`;
/// `None` for a path leaving `dir` or naming a hidden file.
fn file_of(dir: &Path, path: &str) -> Option<PathBuf> {
    let relative = Path::new(path);
    let plain = relative.components().all(|part| match part {
        Component::Normal(name) => !name.to_string_lossy().starts_with('.'),
        _ => false,
    });
    if !plain {
        return None;
    }
    let file = dir.join(relative);
    Some(if path.is_empty() || path.ends_with('/') || file.is_dir() {
        file.join("index.html")
    } else {
        file
    })
}

fn content_type(file: &Path) -> &'static str {
    match file.extension().and_then(|ext| ext.to_str()).unwrap_or_default() {
        "html" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "js" => "text/javascript; charset=utf-8",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "ttf" => "font/ttf",
        "txt" | "md" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// `GET /guide/{path}`: a page or file of the built guide.
#[utoipa::path(
    get,
    path = "/guide/{path}",
    operation_id = "guide_file",
    tag = "service",
    summary = "The guide",
    description = "The guide's pages and their files, as `make docs` built them into `docs.guide_dir`; \
        an empty path is its first page. Without a built guide every path answers a page saying how to build it.",
    params(("path" = String, Path, description = "A file of the built guide, e.g. `api/query.html`", example = "api/query.html")),
    responses(
        (status = 200, description = "The page or file, with its content type",
         content((String = "text/html", example = json!("<!DOCTYPE html><html lang=\"en\">...</html>")), (String = "text/css"),
             (String = "text/javascript"), (String = "image/svg+xml"), (String = "image/png"), (String = "application/octet-stream"))),
        (status = 404, description = "No such file (JSON), or the guide is not built here (a page)",
         content((ErrorBody = "application/json"), (String = "text/html"))),
    )
)]
pub async fn file(dir: web::Data<GuideDir>, path: web::Path<String>) -> Result<HttpResponse, ApiError> {
    if !dir.0.join("index.html").is_file() {
        return Ok(HttpResponse::NotFound()
            .content_type(ContentType::html())
            .body(NOT_BUILT));
    }
    let file = file_of(&dir.0, &path).ok_or_else(ApiError::route_not_found)?;
    let read = file.clone();
    let bytes = web::block(move || std::fs::read(read))
        .await
        .map_err(|_| ApiError::route_not_found())?
        .map_err(|_| ApiError::route_not_found())?;
    Ok(HttpResponse::Ok()
        .content_type(content_type(&file))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::CACHE_CONTROL, "public, max-age=300"))
        .body(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_leaving_the_guide_or_naming_a_hidden_file_names_no_file() {
        let dir = Path::new("/srv/guide");
        assert_eq!(file_of(dir, "../etc/passwd"), None);
        assert_eq!(file_of(dir, "/etc/passwd"), None);
        assert_eq!(file_of(dir, "api/../../x"), None);
        assert_eq!(file_of(dir, ".git/config"), None);
        assert_eq!(file_of(dir, "api/query.html"), Some(dir.join("api/query.html")));
        assert_eq!(file_of(dir, ""), Some(dir.join("index.html")));
        assert_eq!(file_of(dir, "api/"), Some(dir.join("api/index.html")));
    }
}
