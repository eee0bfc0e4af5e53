//! Fetching a URL over HTTP within the daemon's limits: redirects followed (at most 10),
//! gzip, brotli and deflate undone, the body capped while it streams in, the text decoded
//! from whatever charset the page says it is in.

use std::time::Duration;

use futures_util::StreamExt;

use super::WebError;

/// Most bytes of one page downloaded (a PDF included).
pub const MAX_PAGE_BYTES: u64 = 32 * 1024 * 1024;
/// Most redirects followed.
const MAX_REDIRECTS: usize = 10;
/// The whole of one download, redirects included, unless the daemon is told otherwise.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// A fetched body and what the server said about it.
#[derive(Debug)]
pub struct Downloaded {
    /// Where the body came from, after redirects.
    pub url: String,
    /// The `Content-Type` as sent (empty when none was).
    pub content_type: String,
    pub bytes: Vec<u8>,
}

/// What a body holds, by its type (or its first bytes when the server named none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Html,
    Pdf,
    /// Text to pass on as it is (plain text, JSON, XML, CSV, Markdown).
    Text,
}

/// The client web fetches go through.
pub fn client() -> Result<reqwest::Client, reqwest::Error> {
    reqwest::Client::builder()
        .user_agent(concat!(
            "Mozilla/5.0 (compatible; coved/",
            env!("CARGO_PKG_VERSION"),
            "; +https://github.com/cove-agent/cove)"
        ))
        .redirect(reqwest::redirect::Policy::limited(MAX_REDIRECTS))
        .connect_timeout(Duration::from_secs(10))
        .build()
}

/// Downloads `url` (http or https), refusing what is not a page before reading its body.
pub async fn download(
    client: &reqwest::Client,
    url: &reqwest::Url,
    timeout: Duration,
) -> Result<Downloaded, WebError> {
    let response = client
        .get(url.clone())
        .header(
            reqwest::header::ACCEPT,
            "text/html,application/xhtml+xml,application/pdf;q=0.9,text/plain;q=0.8,*/*;q=0.5",
        )
        .header(reqwest::header::ACCEPT_LANGUAGE, "en,*;q=0.5")
        .timeout(timeout)
        .send()
        .await
        .map_err(|e| WebError::from_reqwest(url.as_str(), e, timeout))?;
    let landed = response.url().to_string();
    let status = response.status();
    if !status.is_success() {
        return Err(WebError::Status {
            url: landed,
            status: status.as_u16(),
            reason: status.canonical_reason().unwrap_or("").to_string(),
        });
    }
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    if !content_type.is_empty() && kind_of_type(&content_type).is_none() {
        return Err(WebError::NotAPage {
            url: landed,
            content_type,
        });
    }
    if let Some(len) = response.content_length().filter(|l| *l > MAX_PAGE_BYTES) {
        return Err(WebError::TooLarge {
            url: landed,
            size: Some(len),
        });
    }
    let mut bytes = Vec::new();
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| WebError::from_reqwest(&landed, e, timeout))?;
        if (bytes.len() + chunk.len()) as u64 > MAX_PAGE_BYTES {
            return Err(WebError::TooLarge {
                url: landed,
                size: None,
            });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Downloaded {
        url: landed,
        content_type,
        bytes,
    })
}

/// What a `Content-Type` holds, or `None` for a type that is not a page.
pub fn kind_of_type(content_type: &str) -> Option<Kind> {
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match mime.as_str() {
        "text/html" | "application/xhtml+xml" => Some(Kind::Html),
        "application/pdf" | "application/x-pdf" => Some(Kind::Pdf),
        "application/json"
        | "application/xml"
        | "application/javascript"
        | "application/x-javascript"
        | "application/rss+xml"
        | "application/atom+xml"
        | "application/ld+json" => Some(Kind::Text),
        m if m.starts_with("text/") || m.ends_with("+json") || m.ends_with("+xml") => {
            Some(Kind::Text)
        }
        _ => None,
    }
}

/// What a body holds: its type when the server named one, else its first bytes.
pub fn kind_of(downloaded: &Downloaded) -> Result<Kind, WebError> {
    if let Some(kind) = kind_of_type(&downloaded.content_type) {
        return Ok(kind);
    }
    let head = &downloaded.bytes[..downloaded.bytes.len().min(1024)];
    if head.starts_with(b"%PDF-") {
        return Ok(Kind::Pdf);
    }
    if head.contains(&0) {
        return Err(WebError::NotAPage {
            url: downloaded.url.clone(),
            content_type: "binary data (no Content-Type)".into(),
        });
    }
    let lower = String::from_utf8_lossy(head).to_ascii_lowercase();
    if lower.contains("<html") || lower.contains("<!doctype html") || lower.contains("<body") {
        Ok(Kind::Html)
    } else {
        Ok(Kind::Text)
    }
}

/// The body as text, decoded from the charset the header names, else a byte-order mark,
/// else a `<meta>` charset in the first kilobytes, else UTF-8 (windows-1252 when it is not).
pub fn decode(downloaded: &Downloaded, kind: Kind) -> String {
    decode_bytes(&downloaded.bytes, &downloaded.content_type, kind)
}

/// `bytes` as text, their charset found as [`decode`] finds it.
pub fn decode_bytes(bytes: &[u8], content_type: &str, kind: Kind) -> String {
    let from_header = charset_param(content_type);
    let encoding = from_header
        .and_then(|label| encoding_rs::Encoding::for_label(label.as_bytes()))
        .or_else(|| encoding_rs::Encoding::for_bom(bytes).map(|(e, _)| e))
        .or_else(|| {
            (kind == Kind::Html)
                .then(|| meta_charset(&bytes[..bytes.len().min(4096)]))
                .flatten()
                .and_then(|label| encoding_rs::Encoding::for_label(label.as_bytes()))
        });
    let encoding = match encoding {
        Some(e) => e,
        None if std::str::from_utf8(bytes).is_ok() => encoding_rs::UTF_8,
        None => encoding_rs::WINDOWS_1252,
    };
    let (text, _, _) = encoding.decode(bytes);
    text.into_owned()
}

fn charset_param(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches('"').to_string())
    })
}

/// The charset a `<meta charset=...>` or `<meta http-equiv content="...; charset=...">` names.
fn meta_charset(head: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(head).to_ascii_lowercase();
    let at = text.find("charset=")? + "charset=".len();
    let rest = text[at..].trim_start_matches(['"', '\'', ' ']);
    let label: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
        .collect();
    (!label.is_empty()).then_some(label)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(content_type: &str, bytes: &[u8]) -> Downloaded {
        Downloaded {
            url: "http://x/".into(),
            content_type: content_type.into(),
            bytes: bytes.to_vec(),
        }
    }

    #[test]
    fn charsets_come_from_the_header_then_the_meta_tag() {
        let latin1 = b"<html><head><meta charset=\"iso-8859-1\"></head><body>caf\xe9</body></html>";
        assert!(decode(&body("text/html", latin1), Kind::Html).contains("café"));
        let koi8 = b"<p>\xf0\xd2\xc9\xd7\xc5\xd4</p>";
        assert!(decode(&body("text/html; charset=KOI8-R", koi8), Kind::Html).contains("Привет"));
        let http_equiv = b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=windows-1251\"><p>\xcf\xf0\xe8</p>";
        assert!(decode(&body("text/html", http_equiv), Kind::Html).contains("При"));
        assert!(decode(&body("", b"caf\xe9"), Kind::Text).contains("café"));
        assert!(decode(&body("", "café".as_bytes()), Kind::Text).contains("café"));
    }

    #[test]
    fn types_are_sorted_into_pages_and_the_rest() {
        assert_eq!(kind_of_type("text/html; charset=utf-8"), Some(Kind::Html));
        assert_eq!(kind_of_type("application/pdf"), Some(Kind::Pdf));
        assert_eq!(kind_of_type("application/vnd.api+json"), Some(Kind::Text));
        assert_eq!(kind_of_type("image/png"), None);
        assert_eq!(kind_of_type("application/octet-stream"), None);
        assert_eq!(kind_of(&body("", b"%PDF-1.7 ...")).ok(), Some(Kind::Pdf));
        assert!(kind_of(&body("", b"\x89PNG\r\n\x1a\n\0\0")).is_err());
        assert_eq!(
            kind_of(&body("", b"<!DOCTYPE html><p>x")).ok(),
            Some(Kind::Html)
        );
    }
}
