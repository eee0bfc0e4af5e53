//! Pages written to hurt whoever reads them, for the web fetch's tests: elements nested
//! thousands deep, millions of elements in a few kilobytes of gzip, and PDFs whose drawing
//! inflates from kilobytes to tens of megabytes, on a page or inside a form the page draws.
//! Each is small on the wire and huge once read, as an attacker's page would be.

use std::io::Write;

use axum::Router;
use axum::extract::Path;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// The routes, under `/hostile/`.
pub fn routes() -> Router {
    Router::new()
        .route("/hostile/deep/{tag}/{n}", get(deep))
        .route("/hostile/flat", get(flat))
        .route("/hostile/pdf-page/{mb}", get(pdf_page))
        .route("/hostile/pdf-form/{mb}", get(pdf_form))
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let _ = encoder.write_all(bytes);
    encoder.finish().unwrap_or_default()
}

fn gzipped_html(body: &[u8]) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CONTENT_ENCODING, "gzip"),
        ],
        gzip(body),
    )
        .into_response()
}

/// `n` `<tag>`s, each inside the last, around one word.
async fn deep(Path((tag, n)): Path<(String, usize)>) -> Response {
    let tag: String = tag.chars().filter(char::is_ascii_alphanumeric).collect();
    let page = format!(
        "<!doctype html><html><head><title>deep</title></head><body><p>The deep end.</p>{}innermost{}</body></html>",
        format!("<{tag}>").repeat(n),
        format!("</{tag}>").repeat(n)
    );
    gzipped_html(page.as_bytes())
}

/// 32 MB of `<p>a</p>` (four million elements), about 50 KB on the wire.
async fn flat() -> Response {
    let head = b"<!doctype html><html><head><title>flat</title></head><body>";
    let unit = b"<p>a</p>";
    let mut page = head.to_vec();
    while page.len() + unit.len() < 32 * 1024 * 1024 - 4096 {
        page.extend_from_slice(unit);
    }
    page.extend_from_slice(b"</body></html>");
    gzipped_html(&page)
}

/// A one-page PDF whose page draws `mb` MB of `q Q` (save and restore, nothing shown).
async fn pdf_page(Path(mb): Path<usize>) -> Response {
    pdf_response(pdf(&[
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>".to_vec(),
        flate_stream("", &drawing(mb)),
    ]))
}

/// A one-page PDF whose page shows a line of text and then a form that draws `mb` MB of
/// `q Q`: the page's own content is small, the form is not.
async fn pdf_form(Path(mb): Path<usize>) -> Response {
    pdf_response(pdf(&[
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 6 0 R >> /XObject << /Fm1 5 0 R >> >> /Contents 4 0 R >>".to_vec(),
        flate_stream("", b"BT /F1 12 Tf 72 700 Td (A form follows.) Tj ET /Fm1 Do"),
        flate_stream(
            "/Type /XObject /Subtype /Form /BBox [0 0 612 792]",
            &drawing(mb),
        ),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec(),
    ]))
}

fn drawing(mb: usize) -> Vec<u8> {
    b"q Q\n".repeat(mb * 1024 * 1024 / 4)
}

fn flate_stream(dict: &str, content: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let _ = encoder.write_all(content);
    let data = encoder.finish().unwrap_or_default();
    let mut out = format!(
        "<< {dict} /Length {} /Filter /FlateDecode >>\nstream\n",
        data.len()
    )
    .into_bytes();
    out.extend_from_slice(&data);
    out.extend_from_slice(b"\nendstream");
    out
}

/// A PDF of a catalog, one page tree of one page (object 3), and `page_and_after` from
/// object 3 on.
fn pdf(page_and_after: &[Vec<u8>]) -> Vec<u8> {
    let mut objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
    ];
    objects.extend_from_slice(page_and_after);
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(object);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

fn pdf_response(body: Vec<u8>) -> Response {
    ([(header::CONTENT_TYPE, "application/pdf")], body).into_response()
}
