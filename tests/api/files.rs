//! Files and thumbnails, each rule against both storage backends: the
//! in-process S3 server that checks SigV4 signatures, and the local backend
//! whose URLs the service signs and serves itself.

use crate::support;

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::time::Duration;

use image::{DynamicImage, ImageFormat, RgbImage};
use serde_json::{Value as Json, json};
use support::{Storage, TestApp};

const BACKENDS: [Storage; 2] = [Storage::Local, Storage::S3];

/// An app on `storage`, the owner's token and an entity of a fresh type.
async fn setup(storage: Storage, overrides: &[(&str, String)]) -> (TestApp, String, String) {
    let app = TestApp::start_with(storage, overrides).await;
    let token = app.owner_token().await;
    let item = app.create_type(&token, "item").await;
    let entity = app
        .create(&token, &item, json!([{"type": "name", "string": "thing"}]))
        .await;
    (app, token, entity)
}

/// Creates one file value on `entity`; answers the created value (with `upload`).
async fn add_file(app: &TestApp, token: &str, entity: &str, prop: &str, name: &str, len: usize, mime: &str) -> Json {
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{entity}"),
            token,
            json!([{"type": prop, "filename": name, "filesize": len, "filetype": mime}]),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body["properties"][0].clone()
}

/// PUTs `bytes` to a value's upload URL with exactly the returned headers.
async fn upload(app: &TestApp, value: &Json, bytes: Vec<u8>) -> (u16, String) {
    put(app, &value["upload"], bytes, &[]).await
}

/// PUTs with the returned headers, some replaced by `changed`.
async fn put(app: &TestApp, upload: &Json, bytes: Vec<u8>, changed: &[(&str, &str)]) -> (u16, String) {
    let url = upload["url"].as_str().unwrap();
    let mut request = app.http.put(url).body(bytes);
    for (name, value) in upload["headers"].as_object().unwrap() {
        let value = match value {
            Json::String(text) => text.clone(),
            other => other.to_string(),
        };
        let value = changed
            .iter()
            .find(|(changed, _)| changed.eq_ignore_ascii_case(name))
            .map_or(value, |(_, new)| (*new).to_owned());
        request = request.header(name.as_str(), value);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// Creates and uploads a file value; answers its `_id`.
async fn stored_file(
    app: &TestApp,
    token: &str,
    entity: &str,
    prop: &str,
    name: &str,
    bytes: Vec<u8>,
    mime: &str,
) -> String {
    let value = add_file(app, token, entity, prop, name, bytes.len(), mime).await;
    let (status, text) = upload(app, &value, bytes).await;
    assert_eq!(status, 200, "{text}");
    value["_id"].as_str().unwrap().to_owned()
}

/// A PNG of [`picture`] stored as the entity's `photo`; answers the value id.
async fn stored_photo(app: &TestApp, token: &str, entity: &str) -> String {
    stored_file(
        app,
        token,
        entity,
        "photo",
        "p.png",
        encoded(picture(), ImageFormat::Png),
        "image/png",
    )
    .await
}

async fn fetch(app: &TestApp, url: &str) -> reqwest::Response {
    app.http.get(url).send().await.unwrap()
}

fn encoded(image: DynamicImage, format: ImageFormat) -> Vec<u8> {
    let mut bytes = Cursor::new(Vec::new());
    image.write_to(&mut bytes, format).unwrap();
    bytes.into_inner()
}

/// A 300×200 picture: red, with a blue band down the middle third.
fn picture() -> DynamicImage {
    DynamicImage::ImageRgb8(RgbImage::from_fn(300, 200, |x, _| {
        if (100..200).contains(&x) {
            image::Rgb([0, 0, 255])
        } else {
            image::Rgb([255, 0, 0])
        }
    }))
}

/// A one-page PDF (300×150 points): red, with a blue band in the middle third.
fn pdf() -> Vec<u8> {
    let content = "1 0 0 rg 0 0 300 150 re f 0 0 1 rg 100 0 100 150 re f";
    pdf_document(&[
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 150] /Contents 4 0 R /Resources << >> >>".to_owned(),
        stream("<< ", content),
    ])
}

/// A PDF bomb of a few hundred bytes: its page draws a form that draws the
/// form below it ten times, seven levels deep, so PDFium fills 10^7
/// rectangles (minutes of rendering; ten times fewer take about 18 s).
fn pdf_bomb() -> Vec<u8> {
    const DEPTH: usize = 7;
    // objects 5.. are the forms, the deepest (a filled rectangle) first
    let mut objects = vec![
        format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 150] /Contents 4 0 R /Resources << /XObject << /F {} 0 R >> >> >>",
            5 + DEPTH
        ),
        stream("<< ", "/F Do"),
    ];
    let form = "<< /Type /XObject /Subtype /Form /BBox [0 0 300 150] ";
    objects.push(stream(&format!("{form}/Resources << >> "), "0 0 1 rg 0 0 300 150 re f"));
    for level in 1..=DEPTH {
        let resources = format!("/Resources << /XObject << /F {} 0 R >> >> ", 4 + level);
        objects.push(stream(&format!("{form}{resources}"), &["/F Do"; 10].join(" ")));
    }
    pdf_document(&objects)
}

/// A stream object: its dictionary opened by `dictionary`, closed with `/Length`.
fn stream(dictionary: &str, content: &str) -> String {
    format!("{dictionary}/Length {} >>\nstream\n{content}\nendstream", content.len())
}

/// A PDF of a catalog (object 1), one page list (object 2) holding object 3,
/// and `objects` as objects 3 onwards.
fn pdf_document(objects: &[String]) -> Vec<u8> {
    let mut all = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_owned(),
    ];
    all.extend_from_slice(objects);
    let mut pdf = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (index, object) in all.iter().enumerate() {
        offsets.push(pdf.len());
        pdf.extend(format!("{} 0 obj\n{object}\nendobj\n", index + 1).bytes());
    }
    let xref = pdf.len();
    pdf.extend(format!("xref\n0 {}\n0000000000 65535 f \n", all.len() + 1).bytes());
    for offset in offsets {
        pdf.extend(format!("{offset:010} 00000 n \n").bytes());
    }
    pdf.extend(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            all.len() + 1
        )
        .bytes(),
    );
    pdf
}

/// A BMP header claiming 8000×6000 pixels (48 megapixels), without the pixels.
fn huge_bmp_header() -> Vec<u8> {
    let (width, height) = (8000u32, 6000u32);
    let pixels = width * 3 * height;
    let mut bmp = b"BM".to_vec();
    bmp.extend((54 + pixels).to_le_bytes());
    bmp.extend([0u8; 4]);
    bmp.extend(54u32.to_le_bytes());
    bmp.extend(40u32.to_le_bytes());
    bmp.extend(width.to_le_bytes());
    bmp.extend(height.to_le_bytes());
    bmp.extend(1u16.to_le_bytes());
    bmp.extend(24u16.to_le_bytes());
    bmp.extend([0u8; 24]);
    bmp.extend([0u8; 64]);
    bmp
}

/// Fetches a thumbnail URL; answers the decoded JPEG after checking its type.
async fn thumbnail_image(app: &TestApp, path: &str, token: &str) -> RgbImage {
    let (status, body) = app.get(path, token).await;
    assert_eq!(status, 200, "{path}: {body}");
    let response = fetch(app, body["url"].as_str().unwrap()).await;
    assert_eq!(response.status(), 200);
    let bytes = response.bytes().await.unwrap();
    assert_eq!(image::guess_format(&bytes).unwrap(), ImageFormat::Jpeg, "{path}");
    image::load_from_memory_with_format(&bytes, ImageFormat::Jpeg)
        .unwrap()
        .to_rgb8()
}

fn assert_blue_centre(image: &RgbImage) {
    let (width, height) = image.dimensions();
    let centre = image.get_pixel(width / 2, height / 2);
    assert!(centre[2] > 200 && centre[0] < 60, "centre {centre:?}");
}

#[tokio::test]
async fn each_created_file_value_carries_its_own_upload_with_the_four_headers() {
    for storage in BACKENDS {
        let (app, token, entity) = setup(storage, &[]).await;
        let (status, body) = app
            .post(
                &format!("/api/demo/entity/{entity}"),
                &token,
                json!([
                    {"type": "attachment", "filename": "report.pdf", "filesize": 1234, "filetype": "application/pdf"},
                    {"type": "attachment", "filename": "photo 1.jpg", "filesize": 99, "filetype": "image/jpeg"},
                ]),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let values = body["properties"].as_array().unwrap();
        assert_eq!(values.len(), 2);
        let first = &values[0]["upload"];
        assert_eq!(first["method"], "PUT");
        assert_eq!(
            first["headers"],
            json!({
                "ACL": "private",
                "Content-Disposition": "inline;filename=\"report.pdf\"",
                "Content-Length": 1234,
                "Content-Type": "application/pdf",
            })
        );
        assert_eq!(
            values[1]["upload"]["headers"]["Content-Disposition"],
            "inline;filename=\"photo 1.jpg\""
        );
        assert_ne!(first["url"], values[1]["upload"]["url"]);
        assert!(first["url"].as_str().unwrap().starts_with("http"), "{storage:?}");
        // A new entity's file values get theirs too.
        let item = app.find(&token, "entity", "item").await;
        let (status, body) = app
            .post(
                "/api/demo/entity",
                &token,
                json!([{"type": "_type", "reference": item},
                       {"type": "photo", "filename": "a.png", "filesize": 5, "filetype": "image/png"}]),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        let photo = body["properties"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["type"] == "photo")
            .unwrap();
        assert_eq!(photo["upload"]["headers"]["Content-Length"], 5);
        // Other values carry no upload.
        let name = body["properties"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["type"] == "_type")
            .unwrap();
        assert!(name.get("upload").is_none());
    }
}

#[tokio::test]
async fn upload_with_exactly_the_returned_headers_succeeds_and_download_returns_the_same_bytes() {
    for storage in BACKENDS {
        let (app, token, entity) = setup(storage, &[]).await;
        let bytes: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
        let id = stored_file(
            &app,
            &token,
            &entity,
            "attachment",
            "data.bin",
            bytes.clone(),
            "application/octet-stream",
        )
        .await;
        let (status, body) = app.get(&format!("/api/demo/property/{id}"), &token).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["filename"], "data.bin");
        assert!(body["created"]["at"].is_string());
        let response = fetch(&app, body["url"].as_str().unwrap()).await;
        assert_eq!(response.status(), 200, "{storage:?}");
        if storage == Storage::Local {
            // Not a passive type: saved, not rendered.
            assert_eq!(
                response.headers()["content-disposition"],
                "attachment;filename=\"data.bin\""
            );
            assert_eq!(response.headers()["content-type"], "application/octet-stream");
        }
        assert_eq!(response.bytes().await.unwrap().to_vec(), bytes, "{storage:?}");
    }
}

#[tokio::test]
async fn property_read_gives_a_fresh_url_each_time_and_download_true_redirects_to_it() {
    for storage in BACKENDS {
        let (app, token, entity) = setup(storage, &[]).await;
        let id = stored_file(
            &app,
            &token,
            &entity,
            "attachment",
            "a.txt",
            b"hello".to_vec(),
            "text/plain",
        )
        .await;
        let (_, first) = app.get(&format!("/api/demo/property/{id}"), &token).await;
        tokio::time::sleep(Duration::from_millis(1100)).await;
        let (_, second) = app.get(&format!("/api/demo/property/{id}"), &token).await;
        assert_ne!(first["url"], second["url"], "{storage:?}");
        let response = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap()
            .get(format!("{}/api/demo/property/{id}?download=true", app.url))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 302);
        let location = response.headers()["location"].to_str().unwrap().to_owned();
        assert_eq!(fetch(&app, &location).await.bytes().await.unwrap().as_ref(), b"hello");
        // Values other than files have no url.
        let (_, body) = app.get(&format!("/api/demo/entity/{entity}"), &token).await;
        let name_id = body["entity"]["name"][0]["_id"].as_str().unwrap();
        let (_, name) = app.get(&format!("/api/demo/property/{name_id}"), &token).await;
        assert!(name.get("url").is_none());
    }
}

#[tokio::test]
async fn stored_html_and_svg_download_as_sandboxed_attachments_and_a_jpeg_still_inline() {
    let page = b"<html><body><script>fetch('/api/demo/entity')</script></body></html>".to_vec();
    let svg = b"<svg xmlns='http://www.w3.org/2000/svg'><script>alert(document.domain)</script></svg>".to_vec();
    let jpeg = encoded(picture(), ImageFormat::Jpeg);
    for storage in BACKENDS {
        let (app, token, entity) = setup(storage, &[]).await;
        for (name, bytes, mime, disposition) in [
            ("page.html", &page, "text/html", "attachment;filename=\"page.html\""),
            ("logo.svg", &svg, "image/svg+xml", "attachment;filename=\"logo.svg\""),
            ("photo.jpg", &jpeg, "image/jpeg", "inline;filename=\"photo.jpg\""),
        ] {
            let id = stored_file(&app, &token, &entity, "attachment", name, bytes.clone(), mime).await;
            let (status, body) = app.get(&format!("/api/demo/property/{id}"), &token).await;
            assert_eq!(status, 200, "{body}");
            let url = body["url"].as_str().unwrap();
            if storage == Storage::S3 {
                // The presigned GET overrides what the object was stored with.
                let query: Vec<(String, String)> = serde_urlencoded::from_str(url.split_once('?').unwrap().1).unwrap();
                assert!(
                    query.contains(&("response-content-disposition".into(), disposition.into())),
                    "{url}"
                );
                assert!(query.contains(&("response-content-type".into(), mime.into())), "{url}");
            }
            let response = fetch(&app, url).await;
            assert_eq!(response.status(), 200, "{storage:?} {name}");
            let headers = response.headers().clone();
            assert_eq!(headers["content-disposition"], disposition, "{storage:?} {name}");
            assert_eq!(headers["content-type"], mime, "{storage:?} {name}");
            if storage == Storage::Local {
                assert_eq!(headers["x-content-type-options"], "nosniff", "{name}");
                assert_eq!(headers["content-security-policy"], "sandbox", "{name}");
            }
            assert_eq!(&response.bytes().await.unwrap().to_vec(), bytes, "{storage:?} {name}");
        }
        // The upload headers keep the inline form the API gives.
        let value = add_file(&app, &token, &entity, "attachment", "x.html", 5, "text/html").await;
        assert_eq!(
            value["upload"]["headers"]["Content-Disposition"],
            "inline;filename=\"x.html\""
        );
    }
}

#[tokio::test]
async fn upload_with_another_content_type_or_length_is_refused() {
    for storage in BACKENDS {
        let (app, token, entity) = setup(storage, &[]).await;
        let value = add_file(&app, &token, &entity, "attachment", "a.txt", 5, "text/plain").await;
        let (status, text) = put(
            &app,
            &value["upload"],
            b"hello".to_vec(),
            &[("Content-Type", "text/html")],
        )
        .await;
        assert_eq!(status, 403, "{storage:?} {text}");
        let (status, text) = put(&app, &value["upload"], b"hello!".to_vec(), &[("Content-Length", "6")]).await;
        assert_eq!(status, 403, "{storage:?} {text}");
        if storage == Storage::Local {
            let error: Json = serde_json::from_str(&text).unwrap();
            assert_eq!(error["status"], 403);
        }
        // Nothing was stored; the URL still takes the right upload.
        assert_eq!(upload(&app, &value, b"hello".to_vec()).await.0, 200);
    }
}

#[tokio::test]
async fn tampered_upload_or_download_url_is_refused() {
    for storage in BACKENDS {
        let (app, token, entity) = setup(storage, &[]).await;
        let value = add_file(&app, &token, &entity, "attachment", "a.txt", 5, "text/plain").await;
        let other = add_file(&app, &token, &entity, "attachment", "b.txt", 5, "text/plain").await;
        let url = value["upload"]["url"].as_str().unwrap();
        // Another value's key under this URL's signature.
        let own_id = value["_id"].as_str().unwrap();
        let other_id = other["_id"].as_str().unwrap();
        let moved = url.replace(own_id, other_id);
        let mut tampered = value["upload"].clone();
        tampered["url"] = Json::String(moved);
        assert_eq!(put(&app, &tampered, b"hello".to_vec(), &[]).await.0, 403, "{storage:?}");
        // A changed signature.
        let signature_at = url.rfind("ignature=").unwrap() + "ignature=".len();
        let mut altered = url.to_owned();
        let flipped = if &url[signature_at..signature_at + 1] == "0" {
            "1"
        } else {
            "0"
        };
        altered.replace_range(signature_at..signature_at + 1, flipped);
        tampered["url"] = Json::String(altered);
        assert_eq!(put(&app, &tampered, b"hello".to_vec(), &[]).await.0, 403, "{storage:?}");
        assert_eq!(upload(&app, &value, b"hello".to_vec()).await.0, 200);
        let (_, body) = app.get(&format!("/api/demo/property/{own_id}"), &token).await;
        let download = body["url"].as_str().unwrap().replace(own_id, other_id);
        assert_eq!(fetch(&app, &download).await.status(), 403, "{storage:?}");
    }
}

#[tokio::test]
async fn upload_and_download_urls_expire_after_60_seconds() {
    let mut pending = Vec::new();
    for storage in BACKENDS {
        let (app, token, entity) = setup(storage, &[]).await;
        let id = stored_file(
            &app,
            &token,
            &entity,
            "attachment",
            "a.txt",
            b"hello".to_vec(),
            "text/plain",
        )
        .await;
        let (_, body) = app.get(&format!("/api/demo/property/{id}"), &token).await;
        let download = body["url"].as_str().unwrap().to_owned();
        assert_eq!(fetch(&app, &download).await.status(), 200);
        let value = add_file(&app, &token, &entity, "attachment", "b.txt", 5, "text/plain").await;
        pending.push((app, download, value));
    }
    tokio::time::sleep(Duration::from_secs(62)).await;
    for (app, download, value) in pending {
        assert_eq!(fetch(&app, &download).await.status(), 403);
        assert_eq!(upload(&app, &value, b"hello".to_vec()).await.0, 403);
    }
}

#[tokio::test]
async fn a_name_outside_printable_ascii_gets_a_fallback_and_filename_star() {
    for storage in BACKENDS {
        let (app, token, entity) = setup(storage, &[]).await;
        let value = add_file(&app, &token, &entity, "attachment", "õun \"1\".txt", 5, "text/plain").await;
        let disposition = value["upload"]["headers"]["Content-Disposition"].as_str().unwrap();
        assert_eq!(
            disposition,
            "inline;filename=\"_un _1_.txt\"; filename*=UTF-8''%C3%B5un%20%221%22.txt"
        );
        assert_eq!(upload(&app, &value, b"hello".to_vec()).await.0, 200, "{storage:?}");
        let id = value["_id"].as_str().unwrap();
        let (_, body) = app.get(&format!("/api/demo/property/{id}"), &token).await;
        let response = fetch(&app, body["url"].as_str().unwrap()).await;
        assert_eq!(response.status(), 200);
        if storage == Storage::Local {
            assert_eq!(response.headers()["content-disposition"], disposition);
        }
    }
}

#[tokio::test]
async fn deleting_a_file_value_keeps_the_stored_object() {
    for storage in BACKENDS {
        let (app, token, entity) = setup(storage, &[]).await;
        let id = stored_file(
            &app,
            &token,
            &entity,
            "attachment",
            "a.txt",
            b"hello".to_vec(),
            "text/plain",
        )
        .await;
        let (status, _) = app.delete(&format!("/api/demo/property/{id}"), &token).await;
        assert_eq!(status, 200);
        let (status, _) = app.get(&format!("/api/demo/property/{id}"), &token).await;
        assert_eq!(status, 404);
        let object = app.objects_dir.join(format!("demo/{entity}/{id}"));
        assert_eq!(std::fs::read(object).unwrap(), b"hello", "{storage:?}");
    }
}

#[tokio::test]
async fn thumbnails_of_jpeg_png_gif_bmp_tiff_are_square_jpegs_of_exactly_the_asked_side() {
    for storage in BACKENDS {
        let (app, token, entity) = setup(storage, &[]).await;
        for (format, mime) in [
            (ImageFormat::Jpeg, "image/jpeg"),
            (ImageFormat::Png, "image/png"),
            (ImageFormat::Gif, "image/gif"),
            (ImageFormat::Bmp, "image/bmp"),
            (ImageFormat::Tiff, "image/tiff"),
        ] {
            let bytes = encoded(picture(), format);
            let id = stored_file(&app, &token, &entity, "attachment", "picture", bytes, mime).await;
            for size in [50u32, 200, 400] {
                let thumb = thumbnail_image(&app, &format!("/api/demo/property/{id}/thumbnail/{size}"), &token).await;
                assert_eq!(thumb.dimensions(), (size, size), "{storage:?} {format:?} {size}");
                assert_blue_centre(&thumb);
            }
        }
    }
}

#[tokio::test]
async fn a_large_jpeg_decoded_at_reduced_scale_still_gives_the_exact_side() {
    let (app, token, entity) = setup(Storage::Local, &[]).await;
    let big = DynamicImage::ImageRgb8(RgbImage::from_fn(2400, 1600, |x, _| {
        if (800..1600).contains(&x) {
            image::Rgb([0, 0, 255])
        } else {
            image::Rgb([255, 0, 0])
        }
    }));
    let id = stored_file(
        &app,
        &token,
        &entity,
        "attachment",
        "big.jpg",
        encoded(big, ImageFormat::Jpeg),
        "image/jpeg",
    )
    .await;
    for size in [50u32, 200, 400] {
        let thumb = thumbnail_image(&app, &format!("/api/demo/property/{id}/thumbnail/{size}"), &token).await;
        assert_eq!(thumb.dimensions(), (size, size));
        assert_blue_centre(&thumb);
    }
}

#[tokio::test]
async fn pdf_thumbnail_is_the_first_page_centre_cropped_to_a_square_jpeg() {
    for storage in BACKENDS {
        let (app, token, entity) = setup(storage, &[]).await;
        let id = stored_file(&app, &token, &entity, "attachment", "doc.pdf", pdf(), "application/pdf").await;
        for size in [50u32, 200, 400] {
            let thumb = thumbnail_image(&app, &format!("/api/demo/property/{id}/thumbnail/{size}"), &token).await;
            assert_eq!(thumb.dimensions(), (size, size), "{storage:?}");
            assert_blue_centre(&thumb);
        }
    }
}

#[tokio::test]
async fn entity_thumbnail_uses_the_first_file_of_photo() {
    for storage in BACKENDS {
        let (app, token, entity) = setup(storage, &[]).await;
        let blue = encoded(
            DynamicImage::ImageRgb8(RgbImage::from_pixel(64, 64, image::Rgb([0, 0, 255]))),
            ImageFormat::Png,
        );
        let red = encoded(
            DynamicImage::ImageRgb8(RgbImage::from_pixel(64, 64, image::Rgb([255, 0, 0]))),
            ImageFormat::Png,
        );
        stored_file(&app, &token, &entity, "photo", "blue.png", blue, "image/png").await;
        stored_file(&app, &token, &entity, "photo", "red.png", red, "image/png").await;
        let thumb = thumbnail_image(&app, &format!("/api/demo/entity/{entity}/thumbnail/200"), &token).await;
        assert_eq!(thumb.dimensions(), (200, 200));
        assert_blue_centre(&thumb);
    }
}

#[tokio::test]
async fn thumbnail_size_other_than_50_200_or_400_is_400() {
    let (app, token, entity) = setup(Storage::Local, &[]).await;
    let id = stored_photo(&app, &token, &entity).await;
    for size in ["0", "100", "401", "050", "big"] {
        let (status, body) = app
            .get(&format!("/api/demo/property/{id}/thumbnail/{size}"), &token)
            .await;
        assert_eq!(status, 400, "{size}: {body}");
        let (status, _) = app
            .get(&format!("/api/demo/entity/{entity}/thumbnail/{size}"), &token)
            .await;
        assert_eq!(status, 400, "{size}");
    }
}

#[tokio::test]
async fn thumbnail_of_a_source_over_25_mb_is_413() {
    for storage in BACKENDS {
        let (app, token, entity) = setup(storage, &[]).await;
        let mut bytes = encoded(picture(), ImageFormat::Png);
        bytes.resize(25 * 1024 * 1024 + 1, 0);
        let id = stored_file(&app, &token, &entity, "photo", "big.png", bytes, "image/png").await;
        let (status, body) = app.get(&format!("/api/demo/property/{id}/thumbnail/50"), &token).await;
        assert_eq!(status, 413, "{storage:?} {body}");
        let (status, _) = app
            .get(&format!("/api/demo/entity/{entity}/thumbnail/50"), &token)
            .await;
        assert_eq!(status, 413);
    }
}

#[tokio::test]
async fn thumbnail_of_an_image_over_40_megapixels_is_400_from_its_header() {
    for storage in BACKENDS {
        let (app, token, entity) = setup(storage, &[]).await;
        let id = stored_file(
            &app,
            &token,
            &entity,
            "photo",
            "huge.bmp",
            huge_bmp_header(),
            "image/bmp",
        )
        .await;
        let (status, body) = app.get(&format!("/api/demo/property/{id}/thumbnail/50"), &token).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (400, Some("image_too_large")),
            "{storage:?} {body}"
        );
    }
}

#[tokio::test]
async fn undecodable_or_unsupported_sources_are_400() {
    for storage in BACKENDS {
        let (app, token, entity) = setup(storage, &[]).await;
        let mut broken = encoded(picture(), ImageFormat::Png);
        broken.truncate(broken.len() / 2);
        let svg = br#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>"#.to_vec();
        for (name, bytes, mime) in [
            ("broken.png", broken, "image/png"),
            ("notes.txt", b"just some text".to_vec(), "text/plain"),
            ("vector.svg", svg, "image/svg+xml"),
            ("broken.pdf", b"%PDF-1.4 nothing else".to_vec(), "application/pdf"),
        ] {
            let id = stored_file(&app, &token, &entity, "attachment", name, bytes, mime).await;
            let (status, body) = app.get(&format!("/api/demo/property/{id}/thumbnail/50"), &token).await;
            assert_eq!(status, 400, "{storage:?} {name}: {body}");
        }
        // A value that is not a file.
        let (_, body) = app.get(&format!("/api/demo/entity/{entity}"), &token).await;
        let name_id = body["entity"]["name"][0]["_id"].as_str().unwrap();
        let (status, _) = app
            .get(&format!("/api/demo/property/{name_id}/thumbnail/50"), &token)
            .await;
        assert_eq!(status, 400);
    }
}

#[tokio::test]
async fn entity_thumbnail_refuses_an_svg_photo() {
    let (app, token, entity) = setup(Storage::Local, &[]).await;
    let svg = br#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>"#.to_vec();
    stored_file(&app, &token, &entity, "photo", "logo.svg", svg, "image/svg+xml").await;
    let (status, body) = app
        .get(&format!("/api/demo/entity/{entity}/thumbnail/50"), &token)
        .await;
    assert_eq!(status, 400, "{body}");
}

#[tokio::test]
async fn no_photo_or_a_missing_object_is_404() {
    for storage in BACKENDS {
        let (app, token, entity) = setup(storage, &[]).await;
        let (status, body) = app
            .get(&format!("/api/demo/entity/{entity}/thumbnail/50"), &token)
            .await;
        assert_eq!(status, 404, "{body}");
        // Created but never uploaded.
        let value = add_file(&app, &token, &entity, "photo", "p.png", 10, "image/png").await;
        let (status, body) = app
            .get(&format!("/api/demo/entity/{entity}/thumbnail/50"), &token)
            .await;
        assert_eq!(status, 404, "{storage:?} {body}");
        let id = value["_id"].as_str().unwrap();
        let (status, _) = app.get(&format!("/api/demo/property/{id}/thumbnail/50"), &token).await;
        assert_eq!(status, 404);
        // Unknown entity and value ids, malformed ones.
        for path in [
            "/api/demo/entity/0123456789abcdef01234567/thumbnail/50",
            "/api/demo/property/0123456789abcdef01234567/thumbnail/50",
            "/api/demo/entity/nope/thumbnail/50",
            "/api/demo/property/nope/thumbnail/50",
        ] {
            assert_eq!(app.get(path, &token).await.0, 404, "{path}");
        }
    }
}

#[tokio::test]
async fn thumbnails_check_read_rights_on_every_request() {
    for storage in BACKENDS {
        let (app, token, entity) = setup(storage, &[]).await;
        let id = stored_photo(&app, &token, &entity).await;
        let (person, key) = app.add_person(&token, "Other").await;
        let other = app.token_for(&key).await;
        let entity_path = format!("/api/demo/entity/{entity}/thumbnail/50");
        let property_path = format!("/api/demo/property/{id}/thumbnail/50");
        // The owner renders it first: later requests only sign, and still check rights.
        assert_eq!(app.get(&entity_path, &token).await.0, 200);
        for path in [&entity_path, &property_path] {
            assert_eq!(
                app.call("GET", path, None, None).await.0,
                404,
                "{storage:?} anonymous {path}"
            );
            assert_eq!(app.get(path, &other).await.0, 404, "{storage:?} other {path}");
            let (status, _) = app.get(&format!("/api/demo/property/{id}"), &other).await;
            assert_eq!(status, 404);
        }
        let (status, body) = app
            .post(
                &format!("/api/demo/entity/{entity}"),
                &token,
                json!([{"type": "_viewer", "reference": person}]),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        for path in [&entity_path, &property_path] {
            assert_eq!(app.get(path, &other).await.0, 200, "{storage:?} viewer {path}");
        }
        let (status, _) = app.get(&entity_path, "not-a-jwt").await;
        assert_eq!(status, 401);
    }
}

#[tokio::test]
async fn thumbnails_are_cached_in_object_storage_after_the_first_request() {
    for storage in BACKENDS {
        let (app, token, entity) = setup(storage, &[]).await;
        let id = stored_photo(&app, &token, &entity).await;
        let cached = app.objects_dir.join(format!("demo/{entity}/{id}.thumbnail-200.jpg"));
        assert!(!cached.exists());
        thumbnail_image(&app, &format!("/api/demo/property/{id}/thumbnail/200"), &token).await;
        assert!(cached.exists(), "{storage:?}");
        // Without the source the cached thumbnail is still answered.
        std::fs::remove_file(app.objects_dir.join(format!("demo/{entity}/{id}"))).unwrap();
        let thumb = thumbnail_image(&app, &format!("/api/demo/entity/{entity}/thumbnail/200"), &token).await;
        assert_eq!(thumb.dimensions(), (200, 200));
        // Other sizes are rendered apart (and now the source is gone).
        let (status, _) = app.get(&format!("/api/demo/property/{id}/thumbnail/50"), &token).await;
        assert_eq!(status, 404);
    }
}

#[tokio::test]
async fn concurrent_requests_for_one_thumbnail_all_get_it() {
    let (app, token, entity) = setup(Storage::S3, &[]).await;
    let id = stored_photo(&app, &token, &entity).await;
    let path = format!("/api/demo/property/{id}/thumbnail/400");
    let answers = futures_util::future::join_all((0..8).map(|_| app.get(&path, &token))).await;
    for (status, body) in answers {
        assert_eq!(status, 200, "{body}");
    }
}

#[tokio::test]
async fn a_full_thumbnail_queue_answers_503_with_retry_after() {
    let overrides = [
        ("actors.thumbnail_workers", "1".to_owned()),
        ("actors.thumbnail_queue", "0".to_owned()),
    ];
    let (app, token, entity) = setup(Storage::Local, &overrides).await;
    let mut ids = Vec::new();
    for index in 0..6u8 {
        let image = DynamicImage::ImageRgb8(RgbImage::from_fn(1500, 1500, |x, y| {
            image::Rgb([(x % 256) as u8, (y % 256) as u8, index])
        }));
        ids.push(
            stored_file(
                &app,
                &token,
                &entity,
                "attachment",
                "big.png",
                encoded(image, ImageFormat::Png),
                "image/png",
            )
            .await,
        );
    }
    let requests = ids.iter().map(|id| {
        app.http
            .get(format!("{}/api/demo/property/{id}/thumbnail/50", app.url))
            .bearer_auth(&token)
            .send()
    });
    let responses = futures_util::future::join_all(requests).await;
    let busy: Vec<_> = responses
        .iter()
        .map(|response| response.as_ref().unwrap())
        .filter(|response| response.status() == 503)
        .collect();
    assert!(!busy.is_empty(), "no request was refused");
    assert!(
        busy.iter()
            .all(|response| response.headers().contains_key("retry-after"))
    );
    assert!(
        responses
            .iter()
            .any(|response| response.as_ref().unwrap().status() == 200)
    );
}

#[tokio::test]
async fn a_pdf_over_its_time_limit_is_400() {
    let (app, token, entity) = setup(Storage::Local, &[("thumbnails.pdf_timeout_ms", "0".to_owned())]).await;
    let id = stored_file(&app, &token, &entity, "attachment", "doc.pdf", pdf(), "application/pdf").await;
    let (status, body) = app.get(&format!("/api/demo/property/{id}/thumbnail/50"), &token).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (400, Some("PDF took too long to render")),
        "{body}"
    );
}

/// An app whose PDFs render in `eds` run through a link of its own (so that
/// its processes are told apart from other tests'), with one rendering at a
/// time and `pdf_timeout_ms`; answers the link beside the usual three.
async fn setup_renderer(
    pdf_timeout_ms: u64,
    overrides: &[(&str, String)],
) -> (TestApp, String, String, support::tempdir::Dir, PathBuf) {
    let dir = support::tempdir::Dir::new();
    let renderer = dir.0.join("eds-renderer");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_eds"), &renderer).unwrap();
    let mut all = vec![
        ("actors.thumbnail_workers", "1".to_owned()),
        ("thumbnails.pdf_timeout_ms", pdf_timeout_ms.to_string()),
        ("thumbnails.pdf_renderer", renderer.to_string_lossy().into_owned()),
    ];
    all.extend(overrides.iter().cloned());
    let (app, token, entity) = setup(Storage::Local, &all).await;
    (app, token, entity, dir, renderer)
}

/// This test process's children running `program`, from /proc.
fn children_running(program: &Path) -> Vec<u32> {
    let parent = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        // `pid (comm) state ppid …`; comm may hold spaces, so read after its `)`
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1));
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let argv0 = cmdline.split(|byte| *byte == 0).next().unwrap_or_default();
        if ppid == Some(parent.as_str()) && argv0 == program.as_os_str().as_encoded_bytes() {
            found.push(pid);
        }
    }
    found
}

/// Waits (at most 30 s) until a `program` child of this process runs.
async fn renderer_started(program: &Path) {
    for _ in 0..3000 {
        if !children_running(program).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no {} process started", program.display());
}

fn assert_pdf_too_long(status: u16, body: &Json) {
    assert_eq!(
        (status, body["error"].as_str(), body["message"].as_str()),
        (400, Some("undecodable_file"), Some("PDF took too long to render")),
        "{body}"
    );
}

#[tokio::test]
async fn a_pdf_bomb_is_stopped_at_its_time_limit_and_the_renderer_stays_free() {
    let (app, token, entity, _dir, _renderer) = setup_renderer(2000, &[]).await;
    let bomb = stored_file(
        &app,
        &token,
        &entity,
        "attachment",
        "bomb.pdf",
        pdf_bomb(),
        "application/pdf",
    )
    .await;
    let document = stored_file(&app, &token, &entity, "attachment", "doc.pdf", pdf(), "application/pdf").await;
    let photo = stored_file(
        &app,
        &token,
        &entity,
        "photo",
        "p.jpg",
        encoded(picture(), ImageFormat::Jpeg),
        "image/jpeg",
    )
    .await;
    let bomb_path = format!("/api/demo/property/{bomb}/thumbnail/50");
    let (status, body) = app.get(&bomb_path, &token).await;
    assert_pdf_too_long(status, &body);
    // The only worker is free again: a PDF and a JPEG render at once.
    let thumb = thumbnail_image(&app, &format!("/api/demo/property/{document}/thumbnail/50"), &token).await;
    assert_eq!(thumb.dimensions(), (50, 50));
    assert_blue_centre(&thumb);
    let thumb = thumbnail_image(&app, &format!("/api/demo/property/{photo}/thumbnail/200"), &token).await;
    assert_eq!(thumb.dimensions(), (200, 200));
    // The bomb's failure is remembered: answered again without a new process.
    let started = app.state.files.thumbnailer.pdf_processes();
    assert_eq!(started, 2);
    for size in [50, 400] {
        let (status, body) = app
            .get(&format!("/api/demo/property/{bomb}/thumbnail/{size}"), &token)
            .await;
        assert_pdf_too_long(status, &body);
    }
    assert_eq!(app.state.files.thumbnailer.pdf_processes(), started);
}

#[tokio::test]
async fn a_pdf_renderer_over_its_time_limit_leaves_no_process_behind() {
    let (app, token, entity, _dir, renderer) = setup_renderer(1000, &[]).await;
    let bomb = stored_file(
        &app,
        &token,
        &entity,
        "attachment",
        "bomb.pdf",
        pdf_bomb(),
        "application/pdf",
    )
    .await;
    let path = format!("/api/demo/property/{bomb}/thumbnail/50");
    let ((status, body), ()) = tokio::join!(app.get(&path, &token), renderer_started(&renderer));
    assert_pdf_too_long(status, &body);
    assert_eq!(children_running(&renderer), Vec::<u32>::new());
    // A PDF within the limit renders through the same program, which is gone after it too.
    let document = stored_file(&app, &token, &entity, "attachment", "doc.pdf", pdf(), "application/pdf").await;
    let thumb = thumbnail_image(&app, &format!("/api/demo/property/{document}/thumbnail/50"), &token).await;
    assert_blue_centre(&thumb);
    assert_eq!(children_running(&renderer), Vec::<u32>::new());
}

#[tokio::test]
async fn a_rendering_waiting_past_thumbnail_wait_ms_answers_503_with_retry_after() {
    let overrides = [("actors.thumbnail_wait_ms", "200".to_owned())];
    let (app, token, entity, _dir, renderer) = setup_renderer(5000, &overrides).await;
    let bomb = stored_file(
        &app,
        &token,
        &entity,
        "attachment",
        "bomb.pdf",
        pdf_bomb(),
        "application/pdf",
    )
    .await;
    let photo = stored_photo(&app, &token, &entity).await;
    let photo_path = format!("{}/api/demo/property/{photo}/thumbnail/50", app.url);
    let bomb_path = format!("/api/demo/property/{bomb}/thumbnail/50");
    let waiting = async {
        // The bomb holds the only worker: the photo waits its 200 ms, then gives up.
        renderer_started(&renderer).await;
        let response = app.http.get(&photo_path).bearer_auth(&token).send().await.unwrap();
        support::assert_retry_later(response).await
    };
    let ((status, body), busy) = tokio::join!(app.get(&bomb_path, &token), waiting);
    assert_pdf_too_long(status, &body);
    assert_eq!(
        (busy["status"].as_u64(), busy["error"].as_str()),
        (Some(503), Some("thumbnails_busy")),
        "{busy}"
    );
    // Once the worker is free the same photo renders.
    let thumb = thumbnail_image(&app, &format!("/api/demo/property/{photo}/thumbnail/50"), &token).await;
    assert_blue_centre(&thumb);
}
