//! A PDF's text (pdf-extract, pure Rust: nothing to install in the sandbox).

use super::WebError;

/// The text of a PDF, pages apart by a blank line. pdf-extract panics on some malformed
/// files; a panic is the PDF's fault and answered as such.
pub fn text(bytes: Vec<u8>, url: &str) -> Result<String, WebError> {
    let url = url.to_string();
    let outcome = std::panic::catch_unwind(move || pdf_extract::extract_text_from_mem(&bytes));
    match outcome {
        Ok(Ok(text)) if !text.trim().is_empty() => Ok(tidy(&text)),
        Ok(Ok(_)) => Err(WebError::Unreadable(format!(
            "{url} is a PDF with no text in it (scanned pages are images); download it and look at it with see_image"
        ))),
        Ok(Err(e)) => Err(WebError::Unreadable(format!(
            "{url} is a PDF that cannot be read: {e}"
        ))),
        Err(_) => Err(WebError::Unreadable(format!(
            "{url} is a PDF that cannot be read (malformed)"
        ))),
    }
}

/// Lines trimmed, runs of blank lines made one.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = true;
    for line in text.lines().map(str::trim_end) {
        if line.trim().is_empty() {
            if !blank {
                out.push('\n');
            }
            blank = true;
        } else {
            out.push_str(line);
            out.push('\n');
            blank = false;
        }
    }
    out.trim_end().to_string()
}
