//! A PDF's text (pdf-extract, pure Rust: nothing to install in the sandbox), page by page.
//! Runs in a page reader (see [`super::reader`]). A page's drawing is inflated and decoded
//! into operations whole, at hundreds of bytes of memory per byte of content, so a page
//! whose content streams inflate past [`MAX_PAGE_CONTENT`] is skipped, not read; the
//! reader's memory limit covers what this check cannot see (forms, fonts).

use std::io::Read;

use pdf_extract::{Document, Object, ObjectId, PlainTextOutput, output_doc_page};

/// Inflated bytes of one page's content streams read at most (a page of dense text has a
/// few tens of kilobytes).
pub const MAX_PAGE_CONTENT: u64 = 1 << 20;
/// Pages read at most.
const MAX_PAGES: usize = 2000;

/// The text of a PDF, pages apart by a blank line, or why it has none. pdf-extract panics
/// on some malformed files; a panic is the PDF's fault and answered as such.
pub fn text(bytes: &[u8], url: &str) -> Result<String, String> {
    let outcome = std::panic::catch_unwind(|| read_pages(bytes));
    match outcome {
        Ok(Ok(text)) if !text.trim().is_empty() => Ok(tidy(&text)),
        Ok(Ok(_)) => Err(format!(
            "{url} is a PDF with no text in it (scanned pages are images); download it and look at it with see_image"
        )),
        Ok(Err(e)) => Err(format!("{url} is a PDF that cannot be read: {e}")),
        Err(_) => Err(format!("{url} is a PDF that cannot be read (malformed)")),
    }
}

fn read_pages(bytes: &[u8]) -> Result<String, pdf_extract::OutputError> {
    let mut doc = Document::load_mem(bytes)?;
    if doc.is_encrypted() {
        // Most "encrypted" PDFs only restrict printing, with an empty password.
        doc.decrypt("")?;
    }
    let pages = doc.get_pages();
    let mut out = String::new();
    for (&number, &id) in pages.iter().take(MAX_PAGES) {
        if content_bytes(&doc, id, MAX_PAGE_CONTENT) > MAX_PAGE_CONTENT {
            out.push_str(&format!(
                "\n\n[page {number}: its drawing inflates past {} MB; not read]\n\n",
                MAX_PAGE_CONTENT >> 20
            ));
            continue;
        }
        let mut page = String::new();
        output_doc_page(&doc, &mut PlainTextOutput::new(&mut page), number)?;
        out.push_str(&page);
        out.push_str("\n\n");
    }
    if pages.len() > MAX_PAGES {
        out.push_str(&format!(
            "[{} more pages not read: coved reads the first {MAX_PAGES}]",
            pages.len() - MAX_PAGES
        ));
    }
    Ok(out)
}

/// How many bytes the content streams of page `id` inflate to, counting no further than
/// just past `cap`.
fn content_bytes(doc: &Document, id: ObjectId, cap: u64) -> u64 {
    let mut total = 0u64;
    for stream_id in doc.get_page_contents(id) {
        let Ok(Object::Stream(stream)) = doc.get_object(stream_id) else {
            continue;
        };
        let flate = stream
            .filters()
            .is_ok_and(|filters| filters.iter().any(|f| *f == b"FlateDecode"));
        let left = cap.saturating_sub(total) + 1;
        total += if flate {
            inflated_len(&stream.content, left)
        } else {
            stream.content.len() as u64
        };
        if total > cap {
            break;
        }
    }
    total
}

/// Bytes `data` inflates to, at most `limit`: as zlib, else (as lopdf falls back to) raw
/// deflate after the two header bytes.
fn inflated_len(data: &[u8], limit: u64) -> u64 {
    let count = |reader: &mut dyn Read| {
        let mut sink = std::io::sink();
        std::io::copy(&mut reader.take(limit), &mut sink)
    };
    match count(&mut flate2::read::ZlibDecoder::new(data)) {
        Ok(n) => n,
        Err(_) if data.len() > 2 => {
            count(&mut flate2::read::DeflateDecoder::new(&data[2..])).unwrap_or(0)
        }
        Err(_) => 0,
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn inflated_length_stops_past_the_limit() {
        let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(&vec![b'q'; 8 << 20]).unwrap();
        let bomb = enc.finish().unwrap();
        assert!(bomb.len() < 64 << 10);
        assert_eq!(inflated_len(&bomb, 1000), 1000);
        assert_eq!(inflated_len(&bomb, 16 << 20), 8 << 20);
    }
}
