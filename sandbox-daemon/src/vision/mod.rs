//! Vision: an image from the workspace or the web, made fit for a model to look at.

pub mod http;

use std::io::{Cursor, Read};
use std::time::Duration;

use base64::Engine;
use cove_protocol::vision::{
    MAX_HEIGHT, MAX_INPUT_BYTES, MAX_OUTPUT_BYTES, MAX_WIDTH, SeeImageRequest, SeeImageResponse,
};
use futures_util::StreamExt;
use image::codecs::jpeg::JpegEncoder;
use image::imageops::FilterType;
use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader, Limits};

use crate::files::{FileError, Workspace};

/// How long fetching an image URL may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// JPEG qualities tried, best first, until the output fits.
const JPEG_QUALITIES: [u8; 4] = [85, 70, 55, 40];
/// Most pixels decoded: a 40-megapixel photo, 160 MB as RGBA.
pub const MAX_PIXELS: u64 = 40_000_000;
/// Longest side decoded.
const MAX_SIDE: u32 = 20_000;
/// Most memory one decode may allocate.
const MAX_DECODE_BYTES: u64 = 256 * 1024 * 1024;

fn not_decodable(e: image::ImageError) -> VisionError {
    VisionError::NotAnImage(format!("the image cannot be decoded: {e}"))
}

/// What went wrong preparing an image, by what the caller should do about it.
#[derive(Debug, thiserror::Error)]
pub enum VisionError {
    /// Fix the request.
    #[error("{0}")]
    InvalidRequest(String),
    /// The path is refused or missing.
    #[error(transparent)]
    File(#[from] FileError),
    /// Use a smaller image.
    #[error("the image is {size} bytes, over the {limit}-byte limit")]
    TooLarge { size: u64, limit: u64 },
    /// Use an image of fewer pixels (scale it down first).
    #[error(
        "the image is {width}x{height} pixels, over the limit of {limit} pixels; scale it down first (e.g. `convert in.png -resize 4000x4000 out.png`)"
    )]
    TooManyPixels { width: u32, height: u32, limit: u64 },
    /// Give a PNG, JPEG, GIF or WebP.
    #[error("{0}")]
    NotAnImage(String),
    /// Check the URL.
    #[error("{0}")]
    FetchFailed(String),
    /// Not the caller's fault.
    #[error("{0}")]
    Internal(String),
}

/// Reads the image a request names (at most 10 MB).
pub async fn load(
    workspace: &std::sync::Arc<Workspace>,
    http: &reqwest::Client,
    request: &SeeImageRequest,
) -> Result<Vec<u8>, VisionError> {
    match (&request.path, &request.url) {
        (Some(path), None) => {
            let workspace = workspace.clone();
            let path = path.clone();
            crate::blocking::blocking(move || read_file(&workspace, &path))
                .await
                .map_err(|e| VisionError::Internal(e.to_string()))?
        }
        (None, Some(url)) => fetch(http, url).await,
        _ => Err(VisionError::InvalidRequest(
            "give exactly one of path (in the workspace) or url".into(),
        )),
    }
}

fn read_file(workspace: &Workspace, path: &str) -> Result<Vec<u8>, VisionError> {
    let (file, len) = workspace.open_for_download(path)?;
    if len > MAX_INPUT_BYTES {
        return Err(VisionError::TooLarge {
            size: len,
            limit: MAX_INPUT_BYTES,
        });
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| VisionError::Internal(format!("cannot read {path}: {e}")))?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(VisionError::TooLarge {
            size: bytes.len() as u64,
            limit: MAX_INPUT_BYTES,
        });
    }
    Ok(bytes)
}

async fn fetch(http: &reqwest::Client, raw: &str) -> Result<Vec<u8>, VisionError> {
    let url = reqwest::Url::parse(raw)
        .map_err(|e| VisionError::InvalidRequest(format!("{raw:?} is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(VisionError::InvalidRequest(
            "only http and https URLs can be fetched".into(),
        ));
    }
    let response = http
        .get(url.clone())
        .timeout(FETCH_TIMEOUT)
        .send()
        .await
        .map_err(|e| VisionError::FetchFailed(format!("cannot fetch {url}: {e}")))?;
    if !response.status().is_success() {
        return Err(VisionError::FetchFailed(format!(
            "{url} answered HTTP {}",
            response.status()
        )));
    }
    if let Some(len) = response.content_length().filter(|l| *l > MAX_INPUT_BYTES) {
        return Err(VisionError::TooLarge {
            size: len,
            limit: MAX_INPUT_BYTES,
        });
    }
    let mut bytes = Vec::new();
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| VisionError::FetchFailed(format!("{url} broke off: {e}")))?;
        if (bytes.len() + chunk.len()) as u64 > MAX_INPUT_BYTES {
            return Err(VisionError::TooLarge {
                size: (bytes.len() + chunk.len()) as u64,
                limit: MAX_INPUT_BYTES,
            });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// Decodes, scales to fit 1920x1080 and re-encodes an image to at most 5 MB.
pub fn prepare(input: &[u8]) -> Result<SeeImageResponse, VisionError> {
    let mut reader = ImageReader::new(Cursor::new(input))
        .with_guessed_format()
        .map_err(|e| VisionError::Internal(format!("cannot read the image: {e}")))?;
    match reader.format() {
        Some(ImageFormat::Png | ImageFormat::Jpeg | ImageFormat::Gif | ImageFormat::WebP) => {}
        Some(other) => {
            return Err(VisionError::NotAnImage(format!(
                "{other:?} images are not supported; use PNG, JPEG, GIF or WebP"
            )));
        }
        None => {
            return Err(VisionError::NotAnImage(
                "this is not an image (not PNG, JPEG, GIF or WebP)".into(),
            ));
        }
    }
    // A small file can claim enormous dimensions (a 62-byte GIF, a 490 KB PNG of 13000x13000
    // pixels): refuse before allocating them.
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_DECODE_BYTES);
    reader.limits(limits);
    let decoder = reader.into_decoder().map_err(not_decodable)?;
    let (width, height) = decoder.dimensions();
    let pixels = u64::from(width) * u64::from(height);
    if pixels > MAX_PIXELS {
        return Err(VisionError::TooManyPixels {
            width,
            height,
            limit: MAX_PIXELS,
        });
    }
    let image = DynamicImage::from_decoder(decoder).map_err(not_decodable)?;
    let (original_width, original_height) = (image.width(), image.height());
    let mut scaled = if original_width > MAX_WIDTH || original_height > MAX_HEIGHT {
        if original_width > 2 * MAX_WIDTH || original_height > 2 * MAX_HEIGHT {
            // Averages blocks of source pixels straight into the output: no full-size
            // intermediate buffer, unlike a filtered resize.
            image.thumbnail(MAX_WIDTH, MAX_HEIGHT)
        } else {
            image.resize(MAX_WIDTH, MAX_HEIGHT, FilterType::Triangle)
        }
    } else {
        image
    };
    let transparent = uses_transparency(&scaled);
    let (mime, bytes) = loop {
        let encoded = if transparent {
            encode_png(&scaled)?.map(|b| ("image/png", b))
        } else {
            encode_jpeg(&scaled)?.map(|b| ("image/jpeg", b))
        };
        if let Some(found) = encoded {
            break found;
        }
        // Still over 5 MB at the lowest quality: shrink and try again.
        let (w, h) = (scaled.width() * 3 / 4, scaled.height() * 3 / 4);
        if w < 16 || h < 16 {
            return Err(VisionError::Internal(
                "cannot bring the image under 5 MB".into(),
            ));
        }
        scaled = scaled.resize_exact(w, h, FilterType::Triangle);
    };
    Ok(SeeImageResponse {
        mime: mime.to_string(),
        width: scaled.width(),
        height: scaled.height(),
        original_width,
        original_height,
        original_bytes: input.len() as u64,
        bytes: bytes.len() as u64,
        base64: base64::engine::general_purpose::STANDARD.encode(&bytes),
    })
}

fn uses_transparency(image: &DynamicImage) -> bool {
    image.color().has_alpha() && image.to_rgba8().pixels().any(|p| p.0[3] < 255)
}

fn encode_png(image: &DynamicImage) -> Result<Option<Vec<u8>>, VisionError> {
    let mut out = Cursor::new(Vec::new());
    image
        .write_to(&mut out, ImageFormat::Png)
        .map_err(|e| VisionError::Internal(format!("PNG encoding failed: {e}")))?;
    let out = out.into_inner();
    Ok((out.len() as u64 <= MAX_OUTPUT_BYTES).then_some(out))
}

fn encode_jpeg(image: &DynamicImage) -> Result<Option<Vec<u8>>, VisionError> {
    let rgb = image.to_rgb8();
    for quality in JPEG_QUALITIES {
        let mut out = Vec::new();
        JpegEncoder::new_with_quality(&mut out, quality)
            .encode_image(&rgb)
            .map_err(|e| VisionError::Internal(format!("JPEG encoding failed: {e}")))?;
        if out.len() as u64 <= MAX_OUTPUT_BYTES {
            return Ok(Some(out));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{Rgb, RgbImage, Rgba, RgbaImage};

    fn encode(image: DynamicImage, format: ImageFormat) -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        image.write_to(&mut out, format).unwrap();
        out.into_inner()
    }

    #[test]
    fn large_images_are_scaled_to_fit_and_keep_their_aspect() {
        let big = DynamicImage::ImageRgb8(RgbImage::from_pixel(3840, 1000, Rgb([10, 200, 30])));
        let out = prepare(&encode(big, ImageFormat::Png)).unwrap();
        assert_eq!((out.width, out.height), (1920, 500));
        assert_eq!((out.original_width, out.original_height), (3840, 1000));
        assert_eq!(out.mime, "image/jpeg");
    }

    #[test]
    fn small_images_keep_their_size_and_transparency_keeps_png() {
        let mut img = RgbaImage::from_pixel(40, 30, Rgba([0, 0, 0, 255]));
        img.put_pixel(0, 0, Rgba([0, 0, 0, 0]));
        let out = prepare(&encode(DynamicImage::ImageRgba8(img), ImageFormat::Png)).unwrap();
        assert_eq!(
            (out.width, out.height, out.mime.as_str()),
            (40, 30, "image/png")
        );
        let opaque = RgbaImage::from_pixel(40, 30, Rgba([1, 2, 3, 255]));
        let out = prepare(&encode(DynamicImage::ImageRgba8(opaque), ImageFormat::Png)).unwrap();
        assert_eq!(
            out.mime, "image/jpeg",
            "an alpha channel nobody uses is dropped"
        );
    }

    #[test]
    fn every_supported_format_decodes() {
        let img = DynamicImage::ImageRgba8(RgbaImage::from_pixel(8, 8, Rgba([5, 6, 7, 255])));
        for format in [
            ImageFormat::Png,
            ImageFormat::Jpeg,
            ImageFormat::Gif,
            ImageFormat::WebP,
        ] {
            let source = if format == ImageFormat::Jpeg {
                DynamicImage::ImageRgb8(img.to_rgb8())
            } else {
                img.clone()
            };
            let out = prepare(&encode(source, format)).unwrap();
            assert_eq!((out.width, out.height), (8, 8), "{format:?}");
            assert_eq!(
                out.bytes as usize,
                base64::engine::general_purpose::STANDARD
                    .decode(&out.base64)
                    .unwrap()
                    .len()
            );
        }
    }

    #[test]
    fn non_images_are_refused_clearly() {
        assert!(matches!(
            prepare(b"hello, world"),
            Err(VisionError::NotAnImage(_))
        ));
        assert!(matches!(
            prepare(b"\x89PNG\r\n\x1a\ncorrupt"),
            Err(VisionError::NotAnImage(_))
        ));
        let bmp = b"BM\x3a\0\0\0\0\0\0\0\x36\0\0\0\x28\0\0\0";
        assert!(
            matches!(prepare(bmp), Err(VisionError::NotAnImage(_))),
            "BMP is not offered"
        );
    }
}
