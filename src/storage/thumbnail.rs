//! Thumbnail rendering, pure and blocking: source bytes → a square,
//! centre-cropped (cover) JPEG of exactly the asked side. Images through the
//! `image` crate (JPEG decoded at reduced scale when the thumbnail is much
//! smaller), PDF first pages through PDFium; resizing with `fast_image_resize`.
//! Callers run this off the async workers (see `storage::thumbnailer`); PDFs
//! render in an `eds render-pdf` process ([`render_pdf_worker`]).

use std::io::{Cursor, Read, Write};
use std::path::Path;
use std::sync::OnceLock;

use fast_image_resize::images::Image;
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};
use image::{DynamicImage, ImageFormat, ImageReader, RgbImage};
use pdfium_render::prelude::*;

use crate::error::{ApiError, ErrorCode};

/// The sides a thumbnail may have.
pub const SIZES: [u32; 3] = [50, 200, 400];
/// Largest source file: 25 MB.
pub const MAX_SOURCE_BYTES: u64 = 25 * 1024 * 1024;
/// Largest source image: 40 megapixels.
pub const MAX_PIXELS: u64 = 40_000_000;
const JPEG_QUALITY: u8 = 85;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThumbnailError {
    #[error("Invalid thumbnail size")]
    InvalidSize,
    #[error("File is larger than 25 MB")]
    TooLarge,
    #[error("Image is larger than 40 megapixels")]
    TooManyPixels,
    #[error("Unsupported file type")]
    Unsupported,
    #[error("File could not be decoded")]
    Undecodable,
    #[error("PDF took too long to render")]
    PdfTimeout,
    #[error("PDF rendering is not available")]
    PdfUnavailable,
}

impl From<ThumbnailError> for ApiError {
    fn from(error: ThumbnailError) -> ApiError {
        let code = match error {
            ThumbnailError::InvalidSize => ErrorCode::InvalidSize,
            ThumbnailError::TooLarge => ErrorCode::FileTooLarge,
            ThumbnailError::TooManyPixels => ErrorCode::ImageTooLarge,
            ThumbnailError::Unsupported => ErrorCode::UnsupportedFileType,
            ThumbnailError::Undecodable | ThumbnailError::PdfTimeout => ErrorCode::UndecodableFile,
            ThumbnailError::PdfUnavailable => ErrorCode::PdfUnavailable,
        };
        ApiError::new(code, error.to_string())
    }
}

impl ThumbnailError {
    /// How the `eds render-pdf` worker tells this failure.
    fn exit_code(&self) -> i32 {
        match self {
            ThumbnailError::TooManyPixels => 4,
            ThumbnailError::PdfUnavailable => 5,
            _ => 3,
        }
    }

    /// The failure a worker's exit code tells; a crash or an unknown code is
    /// a file that could not be decoded.
    pub fn from_exit_code(code: Option<i32>) -> ThumbnailError {
        match code {
            Some(4) => ThumbnailError::TooManyPixels,
            Some(5) => ThumbnailError::PdfUnavailable,
            _ => ThumbnailError::Undecodable,
        }
    }
}

/// A thumbnail side from its path segment.
pub fn parse_size(text: &str) -> Result<u32, ThumbnailError> {
    SIZES
        .into_iter()
        .find(|size| size.to_string() == text)
        .ok_or(ThumbnailError::InvalidSize)
}

/// What a source file is, from its first bytes (never from its name or declared type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Image(ImageFormat),
    Pdf,
}

pub fn sniff(bytes: &[u8]) -> Result<Source, ThumbnailError> {
    if bytes.starts_with(b"%PDF-") {
        return Ok(Source::Pdf);
    }
    match image::guess_format(bytes) {
        Ok(
            format @ (ImageFormat::Jpeg | ImageFormat::Png | ImageFormat::Gif | ImageFormat::Bmp | ImageFormat::Tiff),
        ) => Ok(Source::Image(format)),
        _ => Err(ThumbnailError::Unsupported),
    }
}

/// An image's thumbnail. The dimensions are read from the header and checked
/// before anything is decoded.
pub fn render_image(bytes: &[u8], format: ImageFormat, size: u32) -> Result<Vec<u8>, ThumbnailError> {
    let (width, height) = ImageReader::with_format(Cursor::new(bytes), format)
        .into_dimensions()
        .map_err(|_| ThumbnailError::Undecodable)?;
    if u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(ThumbnailError::TooManyPixels);
    }
    let rgb = match format {
        ImageFormat::Jpeg => decode_jpeg_scaled(bytes, size).map_or_else(|| decode(bytes, format), Ok)?,
        _ => decode(bytes, format)?,
    };
    cover_jpeg(rgb, size)
}

fn decode(bytes: &[u8], format: ImageFormat) -> Result<RgbImage, ThumbnailError> {
    let image = image::load_from_memory_with_format(bytes, format).map_err(|_| ThumbnailError::Undecodable)?;
    Ok(flatten(image))
}

/// Decodes a JPEG at the smallest DCT scale (1/8 to 1/1) that still covers
/// the thumbnail; `None` for the pixel formats left to the full decoder.
fn decode_jpeg_scaled(bytes: &[u8], size: u32) -> Option<RgbImage> {
    let mut decoder = jpeg_decoder::Decoder::new(Cursor::new(bytes));
    decoder.read_info().ok()?;
    let side = u16::try_from(size).ok()?;
    let (width, height) = decoder.scale(side, side).ok()?;
    let pixels = decoder.decode().ok()?;
    let (width, height) = (u32::from(width), u32::from(height));
    match decoder.info()?.pixel_format {
        jpeg_decoder::PixelFormat::RGB24 => RgbImage::from_raw(width, height, pixels),
        jpeg_decoder::PixelFormat::L8 => {
            image::GrayImage::from_raw(width, height, pixels).map(|gray| DynamicImage::ImageLuma8(gray).to_rgb8())
        }
        _ => None,
    }
}

/// RGB pixels; transparent parts are laid on white.
fn flatten(image: DynamicImage) -> RgbImage {
    if !image.color().has_alpha() {
        return image.to_rgb8();
    }
    let rgba = image.to_rgba8();
    let mut rgb = RgbImage::new(rgba.width(), rgba.height());
    for (out, pixel) in rgb.pixels_mut().zip(rgba.pixels()) {
        let alpha = u16::from(pixel[3]);
        for channel in 0..3 {
            out[channel] = ((u16::from(pixel[channel]) * alpha + 255 * (255 - alpha)) / 255) as u8;
        }
    }
    rgb
}

/// Scales and centre-crops to a `size` × `size` square, encoded as JPEG.
pub fn cover_jpeg(rgb: RgbImage, size: u32) -> Result<Vec<u8>, ThumbnailError> {
    let (width, height) = rgb.dimensions();
    if width == 0 || height == 0 {
        return Err(ThumbnailError::Undecodable);
    }
    let source =
        Image::from_vec_u8(width, height, rgb.into_raw(), PixelType::U8x3).map_err(|_| ThumbnailError::Undecodable)?;
    let mut square = Image::new(size, size, PixelType::U8x3);
    let options = ResizeOptions::new()
        .resize_alg(ResizeAlg::Convolution(FilterType::CatmullRom))
        .fit_into_destination(Some((0.5, 0.5)));
    Resizer::new()
        .resize(&source, &mut square, &options)
        .map_err(|_| ThumbnailError::Undecodable)?;
    let mut jpeg = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, JPEG_QUALITY)
        .encode(square.buffer(), size, size, image::ExtendedColorType::Rgb8)
        .map_err(|_| ThumbnailError::Undecodable)?;
    Ok(jpeg)
}

/// PDFium, bound once per process to the library at `path` (the first path
/// asked for wins: the bindings are process-wide).
pub fn pdfium(path: &Path) -> Result<&'static Pdfium, ThumbnailError> {
    static PDFIUM: OnceLock<Result<Pdfium, String>> = OnceLock::new();
    PDFIUM
        .get_or_init(|| {
            Pdfium::bind_to_library(path)
                .map(Pdfium::new)
                .map_err(|e| format!("{}: {e}", path.display()))
        })
        .as_ref()
        .map_err(|error| {
            tracing::error!(%error, "libpdfium could not be loaded");
            ThumbnailError::PdfUnavailable
        })
}

/// A PDF's first page as a thumbnail, rendered just large enough to cover it.
pub fn render_pdf(pdfium: &Pdfium, bytes: &[u8], size: u32) -> Result<Vec<u8>, ThumbnailError> {
    let document = pdfium
        .load_pdf_from_byte_slice(bytes, None)
        .map_err(|_| ThumbnailError::Undecodable)?;
    let page = document.pages().first().map_err(|_| ThumbnailError::Undecodable)?;
    let (width, height) = (page.width().value, page.height().value);
    if !(width > 0.0 && height > 0.0) {
        return Err(ThumbnailError::Undecodable);
    }
    let scale = size as f32 / width.min(height);
    let (target_width, target_height) = ((width * scale).ceil(), (height * scale).ceil());
    if f64::from(target_width) * f64::from(target_height) > MAX_PIXELS as f64 {
        return Err(ThumbnailError::TooManyPixels);
    }
    let config = PdfRenderConfig::new()
        .set_target_size(target_width as Pixels, target_height as Pixels)
        .set_clear_color(PdfColor::WHITE)
        .render_form_data(true);
    let image = page
        .render_with_config(&config)
        .map_err(|_| ThumbnailError::Undecodable)?
        .as_image()
        .map_err(|_| ThumbnailError::Undecodable)?;
    cover_jpeg(flatten(image), size)
}

/// The `eds render-pdf` worker: the PDF on stdin, its thumbnail JPEG on
/// stdout, a failure told by the exit code. Run as a process so that the
/// server can kill a rendering over its time limit (PDFium cannot be stopped).
pub fn render_pdf_worker(library: &Path, size: u32) -> i32 {
    let mut bytes = Vec::new();
    let rendered = std::io::stdin()
        .lock()
        .take(MAX_SOURCE_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|_| ThumbnailError::Undecodable)
        .and_then(|_| render_pdf(pdfium(library)?, &bytes, size));
    match rendered {
        Ok(jpeg) => {
            let mut stdout = std::io::stdout().lock();
            match stdout.write_all(&jpeg).and_then(|()| stdout.flush()) {
                Ok(()) => 0,
                Err(_) => 1,
            }
        }
        Err(error) => error.exit_code(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(image: DynamicImage, format: ImageFormat) -> Vec<u8> {
        let mut bytes = Cursor::new(Vec::new());
        image.write_to(&mut bytes, format).unwrap();
        bytes.into_inner()
    }

    #[test]
    fn sizes_are_50_200_400_only() {
        assert_eq!(parse_size("50"), Ok(50));
        assert_eq!(parse_size("400"), Ok(400));
        for bad in ["0", "100", "050", "400px", ""] {
            assert_eq!(parse_size(bad), Err(ThumbnailError::InvalidSize), "{bad}");
        }
    }

    #[test]
    fn a_wide_jpeg_becomes_a_square_jpeg_with_its_centre_kept() {
        // Left and right thirds red, middle third blue: the square keeps the blue centre.
        let image = RgbImage::from_fn(1200, 400, |x, _| {
            if (400..800).contains(&x) {
                image::Rgb([0, 0, 255])
            } else {
                image::Rgb([255, 0, 0])
            }
        });
        let bytes = encoded(DynamicImage::ImageRgb8(image), ImageFormat::Jpeg);
        let jpeg = render_image(&bytes, ImageFormat::Jpeg, 50).unwrap();
        let thumb = image::load_from_memory_with_format(&jpeg, ImageFormat::Jpeg)
            .unwrap()
            .to_rgb8();
        assert_eq!(thumb.dimensions(), (50, 50));
        let centre = thumb.get_pixel(25, 25);
        assert!(centre[2] > 200 && centre[0] < 60, "{centre:?}");
    }

    #[test]
    fn transparent_pixels_are_laid_on_white() {
        let image = image::RgbaImage::from_pixel(10, 10, image::Rgba([0, 0, 0, 0]));
        let bytes = encoded(DynamicImage::ImageRgba8(image), ImageFormat::Png);
        let jpeg = render_image(&bytes, ImageFormat::Png, 50).unwrap();
        let thumb = image::load_from_memory(&jpeg).unwrap().to_rgb8();
        assert!(thumb.get_pixel(25, 25)[0] > 240);
    }

    #[test]
    fn unknown_bytes_are_unsupported_and_broken_images_undecodable() {
        assert_eq!(
            sniff(b"<svg xmlns=\"http://www.w3.org/2000/svg\"/>"),
            Err(ThumbnailError::Unsupported)
        );
        assert_eq!(sniff(b"%PDF-1.4"), Ok(Source::Pdf));
        let mut png = encoded(DynamicImage::new_rgb8(8, 8), ImageFormat::Png);
        png.truncate(40);
        assert_eq!(
            render_image(&png, ImageFormat::Png, 50),
            Err(ThumbnailError::Undecodable)
        );
    }
}
