//! Vision wire types: images prepared for a model to look at.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Largest image accepted as input, in bytes.
pub const MAX_INPUT_BYTES: u64 = 10 * 1024 * 1024;
/// Largest image returned, in bytes.
pub const MAX_OUTPUT_BYTES: u64 = 5 * 1024 * 1024;
/// Images are scaled down to fit this box.
pub const MAX_WIDTH: u32 = 1920;
/// Images are scaled down to fit this box.
pub const MAX_HEIGHT: u32 = 1080;

/// `POST /v1/vision/see_image`: exactly one of `path` (in the workspace) or `url` (http/https).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SeeImageRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl SeeImageRequest {
    /// An image in the workspace.
    pub fn path(path: impl Into<String>) -> Self {
        SeeImageRequest {
            path: Some(path.into()),
            url: None,
        }
    }

    /// An image on the web.
    pub fn url(url: impl Into<String>) -> Self {
        SeeImageRequest {
            path: None,
            url: Some(url.into()),
        }
    }
}

/// An image ready for a model: scaled to fit 1920x1080, JPEG (or PNG when it has
/// transparency), at most 5 MB.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SeeImageResponse {
    /// `image/jpeg` or `image/png`.
    pub mime: String,
    pub base64: String,
    pub width: u32,
    pub height: u32,
    pub original_width: u32,
    pub original_height: u32,
    /// Size of the input.
    pub original_bytes: u64,
    /// Size of the output (decoded from base64).
    pub bytes: u64,
}
