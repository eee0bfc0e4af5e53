//! `see_image` from the workspace and from the web.

use std::io::Cursor;

use base64::Engine;
use cove_harness::{DaemonBuilder, FixtureSite};
use cove_protocol::ErrorCode;
use cove_protocol::vision::SeeImageRequest;
use image::{DynamicImage, ImageFormat, Rgb, RgbImage, Rgba, RgbaImage};

fn encode(image: &DynamicImage, format: ImageFormat) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    image.write_to(&mut out, format).unwrap();
    out.into_inner()
}

/// A picture with detail, so encoders cannot shrink it to nothing.
fn picture(width: u32, height: u32) -> DynamicImage {
    DynamicImage::ImageRgb8(RgbImage::from_fn(width, height, |x, y| {
        Rgb([
            (x * 7 % 256) as u8,
            (y * 13 % 256) as u8,
            ((x ^ y) % 256) as u8,
        ])
    }))
}

fn decode(b64: &str) -> DynamicImage {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    image::load_from_memory(&bytes).unwrap()
}

#[tokio::test]
async fn workspace_images_of_every_format_come_back_ready_for_a_model() {
    let d = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .spawn()
        .await
        .unwrap();
    let c = &d.client;
    let small = picture(320, 200);
    for (name, format) in [
        ("a.png", ImageFormat::Png),
        ("b.jpg", ImageFormat::Jpeg),
        ("c.gif", ImageFormat::Gif),
        ("d.webp", ImageFormat::WebP),
    ] {
        let source = if format == ImageFormat::Gif {
            DynamicImage::ImageRgba8(small.to_rgba8())
        } else {
            small.clone()
        };
        let bytes = encode(&source, format);
        std::fs::write(d.path(name), &bytes).unwrap();
        let seen = c.see_image(&SeeImageRequest::path(name)).await.unwrap();
        assert_eq!((seen.width, seen.height), (320, 200), "{name}");
        assert_eq!(seen.original_bytes, bytes.len() as u64, "{name}");
        assert_eq!(seen.mime, "image/jpeg", "{name}");
        let back = decode(&seen.base64);
        assert_eq!((back.width(), back.height()), (320, 200), "{name}");
    }
    // Transparency survives as PNG.
    let mut clear = RgbaImage::from_pixel(64, 64, Rgba([200, 0, 0, 255]));
    clear.put_pixel(3, 3, Rgba([0, 0, 0, 0]));
    std::fs::write(
        d.path("clear.png"),
        encode(&DynamicImage::ImageRgba8(clear), ImageFormat::Png),
    )
    .unwrap();
    let seen = c
        .see_image(&SeeImageRequest::path("clear.png"))
        .await
        .unwrap();
    assert_eq!(seen.mime, "image/png");
    assert_eq!(decode(&seen.base64).to_rgba8().get_pixel(3, 3).0[3], 0);
}

#[tokio::test]
async fn large_images_are_scaled_to_fit_and_capped() {
    let d = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .spawn()
        .await
        .unwrap();
    let c = &d.client;
    let big = encode(&picture(4000, 3000), ImageFormat::Jpeg);
    assert!(
        big.len() < 10 * 1024 * 1024,
        "the input stays under the input cap"
    );
    std::fs::write(d.path("big.jpg"), &big).unwrap();
    let seen = c
        .see_image(&SeeImageRequest::path("big.jpg"))
        .await
        .unwrap();
    assert_eq!(
        (seen.width, seen.height),
        (1440, 1080),
        "fit 1920x1080, aspect kept"
    );
    assert_eq!((seen.original_width, seen.original_height), (4000, 3000));
    assert!(seen.bytes <= 5 * 1024 * 1024);
    assert_eq!(
        seen.bytes as usize,
        base64::engine::general_purpose::STANDARD
            .decode(&seen.base64)
            .unwrap()
            .len()
    );
    let tall = encode(&picture(500, 4000), ImageFormat::Jpeg);
    std::fs::write(d.path("tall.jpg"), &tall).unwrap();
    let seen = c
        .see_image(&SeeImageRequest::path("tall.jpg"))
        .await
        .unwrap();
    assert_eq!((seen.width, seen.height), (135, 1080));
}

#[tokio::test]
async fn bad_inputs_are_refused_clearly() {
    let d = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .spawn()
        .await
        .unwrap();
    let c = &d.client;
    let mut huge = encode(&picture(16, 16), ImageFormat::Png);
    huge.resize(11 * 1024 * 1024, 0);
    std::fs::write(d.path("huge.png"), &huge).unwrap();
    let err = c
        .see_image(&SeeImageRequest::path("huge.png"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::PayloadTooLarge), "{err}");
    std::fs::write(d.path("notes.txt"), "not a picture").unwrap();
    let err = c
        .see_image(&SeeImageRequest::path("notes.txt"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::NotAnImage), "{err}");
    let err = c
        .see_image(&SeeImageRequest::path("missing.png"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::NotFound));
    let err = c
        .see_image(&SeeImageRequest::path("../outside.png"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::PathOutsideWorkspace));
    for request in [
        SeeImageRequest {
            path: None,
            url: None,
        },
        SeeImageRequest {
            path: Some("a.png".into()),
            url: Some("http://x/a.png".into()),
        },
        SeeImageRequest::url("ftp://example.com/a.png"),
        SeeImageRequest::url("not a url"),
    ] {
        let err = c.see_image(&request).await.unwrap_err();
        assert_eq!(err.code(), Some(&ErrorCode::InvalidRequest), "{request:?}");
    }
}

#[tokio::test]
async fn images_are_fetched_from_the_web() {
    let d = DaemonBuilder::new(env!("CARGO_BIN_EXE_coved"))
        .spawn()
        .await
        .unwrap();
    let site = FixtureSite::start().await.unwrap();
    let c = &d.client;
    site.put_file(
        "photo.webp",
        "image/webp",
        encode(&picture(2400, 1200), ImageFormat::WebP),
    );
    let seen = c
        .see_image(&SeeImageRequest::url(site.url("files/photo.webp")))
        .await
        .unwrap();
    assert_eq!((seen.width, seen.height), (1920, 960));
    let err = c
        .see_image(&SeeImageRequest::url(site.url("files/nope.png")))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::FetchFailed), "{err}");
    site.put_file(
        "page.html",
        "text/html",
        b"<html>not an image</html>".to_vec(),
    );
    let err = c
        .see_image(&SeeImageRequest::url(site.url("files/page.html")))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::NotAnImage));
    let mut huge = encode(&picture(16, 16), ImageFormat::Png);
    huge.resize(11 * 1024 * 1024, 0);
    site.put_file("huge.png", "image/png", huge);
    let err = c
        .see_image(&SeeImageRequest::url(site.url("files/huge.png")))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::PayloadTooLarge));
    let port = cove_harness::ClosedPort::new().unwrap();
    let closed = port.addr();
    let err = c
        .see_image(&SeeImageRequest::url(format!("http://{closed}/a.png")))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&ErrorCode::FetchFailed));
}
