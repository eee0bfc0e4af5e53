//! Images that claim far more pixels than their bytes carry: the decompression bombs of the
//! vision tests and benchmarks.

use std::path::Path;

use anyhow::{Result, bail};

const BLANK_PNG: &str = include_str!("../fixtures/vision/blank_png.py");

/// A GIF of a few dozen bytes whose logical screen is 11000x11000 pixels.
pub fn gif_bomb() -> Vec<u8> {
    let mut gif = b"GIF89a".to_vec();
    gif.extend_from_slice(&11000u16.to_le_bytes());
    gif.extend_from_slice(&11000u16.to_le_bytes());
    gif.extend_from_slice(&[0x80, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff]);
    gif.extend_from_slice(&[0x21, 0xf9, 0x04, 0x04, 0, 0, 0, 0, 0x2c]);
    for v in [0u16, 0, 1, 1] {
        gif.extend_from_slice(&v.to_le_bytes());
    }
    gif.extend_from_slice(&[0, 0x02, 0x02, 0x44, 0x01, 0, 0x3b]);
    gif
}

/// Writes a blank PNG of `width` x `height` pixels to `path` (with python3: the rows are
/// compressed one at a time, so hundreds of megapixels take a few hundred kilobytes).
pub fn blank_png(path: &Path, width: u32, height: u32) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("blank_png.py");
    std::fs::write(&script, BLANK_PNG)?;
    let made = std::process::Command::new("python3")
        .arg(&script)
        .arg(path)
        .arg(width.to_string())
        .arg(height.to_string())
        .status()?;
    if !made.success() {
        bail!("python3 blank_png.py failed: {made}");
    }
    Ok(())
}
