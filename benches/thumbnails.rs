//! Thumbnails at 400 px: a 4000×3000 JPEG and the first page of a PDF, cold
//! (the first request renders) and cached (later requests only sign a URL),
//! against `vipsthumbnail` on the same files in the same run; then a burst of
//! 200 thumbnail requests for 20 large images while `/health` is sampled.
//!
//! `cargo bench --bench thumbnails` (needs the PostgreSQL server binaries, as
//! `make test`, and libpdfium from `scripts/fetch-pdfium.sh`; `vipsthumbnail`
//! from Debian's `libvips-tools` is optional: without it its figures are skipped).

#[path = "../tests/api/support/mod.rs"]
mod support;

use std::io::Cursor;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use image::RgbImage;
use serde_json::{Value as Json, json};
use support::{Storage, TestApp};

/// Thumbnail side measured.
const SIZE: u32 = 400;
/// Samples of a cold rendering (each on a fresh file value) and of vipsthumbnail.
const COLD_SAMPLES: usize = 7;
/// Requests for an already rendered thumbnail.
const CACHED_SAMPLES: usize = 100;
/// The burst: requests, spread over this many distinct large images.
const BURST_REQUESTS: usize = 200;
const BURST_IMAGES: usize = 20;

/// A small deterministic generator (xorshift64*), so every run sees the same pixels.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// A 4000×3000 JPEG (quality 90): a diagonal colour gradient with noise from `seed`.
fn photo(seed: u64) -> Vec<u8> {
    let (width, height) = (4000u32, 3000u32);
    let mut noise = Noise(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let image = RgbImage::from_fn(width, height, |x, y| {
        let jitter = noise.next();
        let channel = |base: u32, shift: u32| {
            let wobble = ((jitter >> shift) & 31) as i32 - 16;
            (base as i32 + wobble).clamp(0, 255) as u8
        };
        image::Rgb([
            channel(x * 255 / width, 0),
            channel(y * 255 / height, 8),
            channel(((x + y) * 255 / (width + height)) ^ ((seed as u32 * 37) & 255), 16),
        ])
    });
    let mut bytes = Cursor::new(Vec::new());
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut bytes, 90)
        .encode_image(&image)
        .expect("encode the JPEG");
    bytes.into_inner()
}

/// A multi-page A4 PDF (built as in `tests/api/files.rs`): coloured bands and a line of text per page.
fn pdf(pages: usize) -> Vec<u8> {
    let mut objects = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        String::new(), // the page tree, once the kids are known
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_owned(),
    ];
    let mut kids = Vec::new();
    for page in 0..pages {
        let content = format!(
            "1 0 0 rg 0 0 595 842 re f 0 0 1 rg 198 0 199 842 re f \
             0 g BT /F1 36 Tf 60 760 Td (Page {}) Tj ET",
            page + 1
        );
        let page_number = objects.len() + 1;
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents {} 0 R \
             /Resources << /Font << /F1 3 0 R >> >> >>",
            page_number + 1
        ));
        objects.push(format!("<< /Length {} >>\nstream\n{content}\nendstream", content.len()));
        kids.push(format!("{page_number} 0 R"));
    }
    objects[1] = format!("<< /Type /Pages /Kids [{}] /Count {pages} >>", kids.join(" "));
    let mut pdf = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (index, object) in objects.iter().enumerate() {
        offsets.push(pdf.len());
        pdf.extend(format!("{} 0 obj\n{object}\nendobj\n", index + 1).bytes());
    }
    let xref = pdf.len();
    pdf.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).bytes());
    for offset in offsets {
        pdf.extend(format!("{offset:010} 00000 n \n").bytes());
    }
    pdf.extend(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .bytes(),
    );
    pdf
}

/// Creates a file value on `entity` and uploads `bytes` with exactly the returned headers; answers its `_id`.
async fn stored_file(app: &TestApp, token: &str, entity: &str, name: &str, bytes: &[u8], mime: &str) -> String {
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{entity}"),
            token,
            json!([{"type": "attachment", "filename": name, "filesize": bytes.len(), "filetype": mime}]),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let value = &body["properties"][0];
    let upload = &value["upload"];
    let mut request = app.http.put(upload["url"].as_str().unwrap()).body(bytes.to_vec());
    for (header, content) in upload["headers"].as_object().unwrap() {
        let content = match content {
            Json::String(text) => text.clone(),
            other => other.to_string(),
        };
        request = request.header(header.as_str(), content);
    }
    let response = request.send().await.expect("upload");
    assert_eq!(response.status(), 200, "upload of {name}");
    value["_id"].as_str().unwrap().to_owned()
}

/// Requests the thumbnail of value `id`; answers the time to the `{url}` answer.
async fn thumbnail(app: &TestApp, token: &str, id: &str) -> f64 {
    let path = format!("/api/demo/property/{id}/thumbnail/{SIZE}");
    let started = Instant::now();
    let (status, body) = app.get(&path, token).await;
    let elapsed = started.elapsed().as_secs_f64();
    assert_eq!(status, 200, "{path}: {body}");
    assert!(body["url"].is_string(), "{body}");
    elapsed
}

/// Cold samples: each on a fresh value holding `bytes`, so each request renders.
async fn cold(app: &TestApp, token: &str, entity: &str, name: &str, bytes: &[u8], mime: &str) -> (Vec<f64>, String) {
    let mut samples = Vec::new();
    let mut last = String::new();
    for _ in 0..COLD_SAMPLES {
        last = stored_file(app, token, entity, name, bytes, mime).await;
        samples.push(thumbnail(app, token, &last).await);
    }
    (samples, last)
}

/// Cached samples: repeated requests for value `id`, already rendered.
async fn cached(app: &TestApp, token: &str, id: &str) -> Vec<f64> {
    let mut samples = Vec::new();
    for _ in 0..CACHED_SAMPLES {
        samples.push(thumbnail(app, token, id).await);
    }
    samples
}

/// Whether `vipsthumbnail` runs here.
fn vips_available() -> bool {
    Command::new("vipsthumbnail")
        .arg("--vips-version")
        .output()
        .is_ok_and(|output| output.status.success())
}

/// Times `vipsthumbnail` making a 400 px centre-cropped square of `source`.
fn vips(source: &Path, out: &Path) -> Vec<f64> {
    let mut samples = Vec::new();
    for _ in 0..COLD_SAMPLES {
        let _ = std::fs::remove_file(out);
        let started = Instant::now();
        let output = Command::new("vipsthumbnail")
            .arg(source)
            .args(["--size", &format!("{SIZE}x{SIZE}"), "--smartcrop", "centre", "-o"])
            .arg(format!("{}[Q=75]", out.display()))
            .output()
            .expect("run vipsthumbnail");
        samples.push(started.elapsed().as_secs_f64());
        assert!(
            output.status.success(),
            "vipsthumbnail {}: {}",
            source.display(),
            String::from_utf8_lossy(&output.stderr)
        );
        let written = image::open(out).expect("vipsthumbnail output");
        assert_eq!((written.width(), written.height()), (SIZE, SIZE));
    }
    samples
}

fn sorted(samples: &[f64]) -> Vec<f64> {
    let mut samples = samples.to_vec();
    samples.sort_by(f64::total_cmp);
    samples
}

/// The `p`-th percentile (nearest rank).
fn percentile(samples: &[f64], p: f64) -> f64 {
    let samples = sorted(samples);
    let rank = ((p / 100.0) * samples.len() as f64).ceil() as usize;
    samples[rank.clamp(1, samples.len()) - 1]
}

fn median(samples: &[f64]) -> f64 {
    percentile(samples, 50.0)
}

fn ms(seconds: f64) -> String {
    format!("{:.1} ms", seconds * 1000.0)
}

/// A `/proc/self/status` figure in MB (`VmHWM`: peak resident set, `VmRSS`: current).
fn proc_status_mb(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

#[tokio::main]
async fn main() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // `0` is the default: one thumbnail worker per core.
    let app = TestApp::start_with(Storage::Local, &[("actors.thumbnail_workers", "0".to_owned())]).await;
    let token = app.owner_token().await;
    let item = app.create_type(&token, "item").await;
    let entity = app
        .create(&token, &item, json!([{"type": "name", "string": "bench"}]))
        .await;

    let files = support::tempdir::Dir::new();
    let jpeg = photo(1);
    let document = pdf(8);
    let jpeg_path = files.0.join("photo.jpg");
    let pdf_path = files.0.join("document.pdf");
    std::fs::write(&jpeg_path, &jpeg).unwrap();
    std::fs::write(&pdf_path, &document).unwrap();
    println!(
        "sources: 4000x3000 JPEG of {:.1} MB, 8-page A4 PDF of {} bytes; {cores} cores, thumbnail workers = cores",
        jpeg.len() as f64 / 1e6,
        document.len()
    );

    // A first rendering of each kind warms the pools (and loads libpdfium); not counted.
    let warm = stored_file(&app, &token, &entity, "warm.jpg", &jpeg, "image/jpeg").await;
    thumbnail(&app, &token, &warm).await;
    let warm = stored_file(&app, &token, &entity, "warm.pdf", &document, "application/pdf").await;
    thumbnail(&app, &token, &warm).await;

    let (jpeg_cold, jpeg_id) = cold(&app, &token, &entity, "photo.jpg", &jpeg, "image/jpeg").await;
    let jpeg_cached = cached(&app, &token, &jpeg_id).await;
    let (pdf_cold, pdf_id) = cold(&app, &token, &entity, "document.pdf", &document, "application/pdf").await;
    let pdf_cached = cached(&app, &token, &pdf_id).await;

    let vips_figures = if vips_available() {
        let out = files.0.join("vips.jpg");
        Some((vips(&jpeg_path, &out), vips(&pdf_path, &out)))
    } else {
        println!("SKIP vipsthumbnail: not found (apt-get install libvips-tools); no ratio to it");
        None
    };

    println!(
        "eds cold JPEG 4000x3000 -> {SIZE} px: median {} ({COLD_SAMPLES} samples, min {}, max {})",
        ms(median(&jpeg_cold)),
        ms(sorted(&jpeg_cold)[0]),
        ms(*sorted(&jpeg_cold).last().unwrap())
    );
    println!(
        "eds cached JPEG {SIZE} px: p50 {} p90 {} p99 {} ({CACHED_SAMPLES} samples)",
        ms(median(&jpeg_cached)),
        ms(percentile(&jpeg_cached, 90.0)),
        ms(percentile(&jpeg_cached, 99.0))
    );
    println!(
        "eds cold PDF first page -> {SIZE} px: median {} ({COLD_SAMPLES} samples, min {}, max {})",
        ms(median(&pdf_cold)),
        ms(sorted(&pdf_cold)[0]),
        ms(*sorted(&pdf_cold).last().unwrap())
    );
    println!(
        "eds cached PDF {SIZE} px: p50 {} p90 {} p99 {} ({CACHED_SAMPLES} samples)",
        ms(median(&pdf_cached)),
        ms(percentile(&pdf_cached, 90.0)),
        ms(percentile(&pdf_cached, 99.0))
    );
    if let Some((vips_jpeg, vips_pdf)) = &vips_figures {
        println!(
            "vipsthumbnail JPEG 4000x3000 -> {SIZE} px (--smartcrop centre, process included): median {} ({COLD_SAMPLES} samples)",
            ms(median(vips_jpeg))
        );
        println!(
            "vipsthumbnail PDF first page -> {SIZE} px (--smartcrop centre, process included): median {} ({COLD_SAMPLES} samples)",
            ms(median(vips_pdf))
        );
        println!(
            "ratio cold JPEG eds / vipsthumbnail: {:.2} (target <= 1.5); cold PDF eds / vipsthumbnail: {:.2}",
            median(&jpeg_cold) / median(vips_jpeg),
            median(&pdf_cold) / median(vips_pdf)
        );
    }
    drop(jpeg);

    burst(&app, &token, &entity).await;
}

/// 200 concurrent thumbnail requests over 20 distinct 4000×3000 JPEGs while
/// `/health` is requested every 10 ms; reports its latency and the peak RSS.
async fn burst(app: &TestApp, token: &str, entity: &str) {
    let mut ids = Vec::new();
    for seed in 0..BURST_IMAGES as u64 {
        let bytes = photo(100 + seed);
        ids.push(stored_file(app, token, entity, "burst.jpg", &bytes, "image/jpeg").await);
    }
    let before = proc_status_mb("VmHWM");
    // Resets the process's peak RSS to its current RSS (Linux `clear_refs` 5).
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let baseline = proc_status_mb("VmRSS");

    let health_url = format!("{}/health", app.url);
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        tokio::spawn(async move {
            let client = reqwest::Client::new();
            let mut samples = Vec::new();
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let started = Instant::now();
                let response = client.get(&health_url).send().await.expect("health");
                assert!(response.status().is_success());
                response.bytes().await.unwrap();
                samples.push(started.elapsed().as_secs_f64());
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            samples
        })
    };

    let started = Instant::now();
    let requests = (0..BURST_REQUESTS).map(|index| {
        let id = &ids[index % BURST_IMAGES];
        let path = format!("/api/demo/property/{id}/thumbnail/{SIZE}");
        async move { app.get(&path, token).await.0 }
    });
    let statuses = futures_util::future::join_all(requests).await;
    let elapsed = started.elapsed().as_secs_f64();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let health = sampler.await.unwrap();
    let peak = proc_status_mb("VmHWM");

    let ok = statuses.iter().filter(|status| **status == 200).count();
    let busy = statuses.iter().filter(|status| **status == 503).count();
    println!(
        "burst: {BURST_REQUESTS} thumbnail requests over {BURST_IMAGES} distinct 4000x3000 JPEGs in {:.2} s: \
         {ok} x 200, {busy} x 503, {} other",
        elapsed,
        BURST_REQUESTS - ok - busy
    );
    println!(
        "burst /health latency: p50 {} p99 {} max {} ({} samples; target p99 <= 50 ms)",
        ms(median(&health)),
        ms(percentile(&health, 99.0)),
        ms(*sorted(&health).last().unwrap()),
        health.len()
    );
    if reset {
        println!(
            "burst peak RSS (VmHWM of the process serving the app, reset before the burst): {peak:.0} MB \
             (RSS before the burst {baseline:.0} MB; peak before the reset {before:.0} MB; target <= 512 MB)"
        );
    } else {
        println!("burst peak RSS (VmHWM, whole run; reset unavailable): {peak:.0} MB (target <= 512 MB)");
    }
}
