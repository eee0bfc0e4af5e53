//! Images made and edited through an OpenAI-compatible images API
//! (`POST {base}/images/generations`, `POST {base}/images/edits`), with the key the
//! controller holds. The bytes come back as base64 (or a URL, from servers that answer so)
//! and are written into the workspace by the tools.

use std::time::Duration;

use base64::Engine;
use serde::Deserialize;
use serde_json::json;

/// How long one image may take: generation is slow.
const TIMEOUT: Duration = Duration::from_secs(180);
/// Largest image accepted back.
const MAX_IMAGE_BYTES: usize = 50 * 1024 * 1024;
/// The model asked for when none is configured.
pub const DEFAULT_MODEL: &str = "gpt-image-1";
/// Where the API is when no base URL is configured.
pub const DEFAULT_BASE: &str = "https://api.openai.com/v1";

/// A configured images API.
#[derive(Clone, PartialEq, Eq)]
pub struct ImagesApi {
    pub base: String,
    pub key: String,
    pub model: String,
}

impl std::fmt::Debug for ImagesApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        write!(f, "ImagesApi({} at {})", self.model, self.base)
    }
}

/// Why an image could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("the image prompt is empty: describe the image")]
    EmptyPrompt,
    #[error(
        "the images API refused the key ({status}): check COVE_IMAGES_API_KEY (or OPENAI_API_KEY)"
    )]
    Unauthorized { status: u16 },
    #[error("the images API is rate limiting{}; wait before the next image", retry_after.map(|s| format!(" (retry after {s} s)")).unwrap_or_default())]
    RateLimited { retry_after: Option<u64> },
    #[error("the images API refused the request ({status}): {message}")]
    Refused { status: u16, message: String },
    #[error("the images API could not be reached: {0}")]
    Unreachable(String),
    #[error("the images API answered something that is not an image: {0}")]
    Malformed(String),
}

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    data: Vec<Datum>,
}

#[derive(Deserialize)]
struct Datum {
    #[serde(default)]
    b64_json: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    revised_prompt: Option<String>,
}

/// An image the API made.
#[derive(Debug, Clone)]
pub struct MadeImage {
    pub bytes: Vec<u8>,
    /// The prompt as the model rewrote it (DALL-E 3 does).
    pub revised_prompt: Option<String>,
}

impl ImagesApi {
    /// `gpt-image-*` always answers base64 and refuses `response_format`; DALL-E answers a
    /// URL unless asked.
    fn wants_format(&self) -> bool {
        !self.model.starts_with("gpt-image")
    }

    /// A new image from `prompt`; `size` as the API takes it (`1024x1024`, `auto`).
    pub async fn generate(
        &self,
        http: &reqwest::Client,
        prompt: &str,
        size: Option<&str>,
    ) -> Result<MadeImage, ImageError> {
        if prompt.trim().is_empty() {
            return Err(ImageError::EmptyPrompt);
        }
        let mut body = json!({"model": self.model, "prompt": prompt, "n": 1});
        if let Some(size) = size {
            body["size"] = json!(size);
        }
        if self.wants_format() {
            body["response_format"] = json!("b64_json");
        }
        let request = http
            .post(format!("{}/images/generations", self.base))
            .bearer_auth(&self.key)
            .json(&body);
        self.finish(http, request).await
    }

    /// `image` (PNG, JPEG or WebP bytes named `file_name`) changed as `prompt` says.
    pub async fn edit(
        &self,
        http: &reqwest::Client,
        image: Vec<u8>,
        file_name: &str,
        prompt: &str,
        size: Option<&str>,
    ) -> Result<MadeImage, ImageError> {
        if prompt.trim().is_empty() {
            return Err(ImageError::EmptyPrompt);
        }
        let mime = match file_name
            .rsplit('.')
            .next()
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("jpg" | "jpeg") => "image/jpeg",
            Some("webp") => "image/webp",
            _ => "image/png",
        };
        let part = reqwest::multipart::Part::bytes(image)
            .file_name(file_name.to_string())
            .mime_str(mime)
            .map_err(|e| ImageError::Malformed(e.to_string()))?;
        let mut form = reqwest::multipart::Form::new()
            .text("model", self.model.clone())
            .text("prompt", prompt.to_string())
            .text("n", "1")
            .part("image", part);
        if let Some(size) = size {
            form = form.text("size", size.to_string());
        }
        if self.wants_format() {
            form = form.text("response_format", "b64_json");
        }
        let request = http
            .post(format!("{}/images/edits", self.base))
            .bearer_auth(&self.key)
            .multipart(form);
        self.finish(http, request).await
    }

    async fn finish(
        &self,
        http: &reqwest::Client,
        request: reqwest::RequestBuilder,
    ) -> Result<MadeImage, ImageError> {
        let response = request
            .timeout(TIMEOUT)
            .send()
            .await
            .map_err(|e| ImageError::Unreachable(e.to_string()))?;
        let status = response.status().as_u16();
        let retry_after = super::retry_after(&response);
        let body = response
            .text()
            .await
            .map_err(|e| ImageError::Unreachable(e.to_string()))?;
        match status {
            200..=299 => {}
            401 | 403 => return Err(ImageError::Unauthorized { status }),
            429 => return Err(ImageError::RateLimited { retry_after }),
            _ => {
                // OpenAI's errors: {"error": {"message": ...}}.
                let message = serde_json::from_str::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
                    .unwrap_or_else(|| body.chars().take(300).collect());
                return Err(ImageError::Refused { status, message });
            }
        }
        let answer: Answer =
            serde_json::from_str(&body).map_err(|e| ImageError::Malformed(e.to_string()))?;
        let datum = answer
            .data
            .into_iter()
            .next()
            .ok_or_else(|| ImageError::Malformed("no image in the answer".into()))?;
        let bytes = match (datum.b64_json, datum.url) {
            (Some(b64), _) => base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .map_err(|e| ImageError::Malformed(format!("bad base64: {e}")))?,
            (None, Some(url)) => download(http, &url).await?,
            (None, None) => {
                return Err(ImageError::Malformed(
                    "the answer has neither b64_json nor url".into(),
                ));
            }
        };
        if image_kind(&bytes).is_none() {
            return Err(ImageError::Malformed(
                "the bytes are not a PNG, JPEG or WebP image".into(),
            ));
        }
        Ok(MadeImage {
            bytes,
            revised_prompt: datum.revised_prompt,
        })
    }
}

async fn download(http: &reqwest::Client, url: &str) -> Result<Vec<u8>, ImageError> {
    let response = http
        .get(url)
        .timeout(TIMEOUT)
        .send()
        .await
        .map_err(|e| ImageError::Unreachable(format!("cannot download the image: {e}")))?;
    if !response.status().is_success() {
        return Err(ImageError::Unreachable(format!(
            "the image's URL answered {}",
            response.status()
        )));
    }
    let bytes = response
        .bytes()
        .await
        .map_err(|e| ImageError::Unreachable(format!("cannot download the image: {e}")))?;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(ImageError::Malformed("the image is over 50 MB".into()));
    }
    Ok(bytes.to_vec())
}

/// The file extension of an image's bytes, by their signature.
pub fn image_kind(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("jpg")
    } else if bytes.len() > 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("webp")
    } else {
        None
    }
}
