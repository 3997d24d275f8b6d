//! PDF builders for tests (cargo feature `testing`): the PDF reader's unit tests and the server's
//! attachment tests build their files with the same few functions, so a file they call valid is
//! valid by the same rules in both.
//!
//! A failure to compress panics: this module only runs inside tests, where a panic is the failure
//! report.
#![allow(clippy::expect_used)]

use std::io::Write;

use flate2::Compression;
use flate2::write::ZlibEncoder;

/// `data` zlib-compressed, as a `/FlateDecode` stream holds it.
pub fn zlib(data: &[u8]) -> Vec<u8> {
    let mut encoder = ZlibEncoder::new(Vec::new(), Compression::best());
    encoder.write_all(data).expect("compressing in memory");
    encoder.finish().expect("compressing in memory")
}

/// A stream object of `data` (encoded already) with `extra` in its dictionary, e.g.
/// `/Filter /FlateDecode`.
pub fn stream(extra: &str, data: &[u8]) -> Vec<u8> {
    let mut body = format!("<< /Length {} {extra} >>\nstream\n", data.len()).into_bytes();
    body.extend_from_slice(data);
    body.extend_from_slice(b"\nendstream");
    body
}

/// A PDF of these objects (numbered from 1; 1 is the catalog), with a correct cross-reference table.
pub fn pdf(objects: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (n, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", n + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    let size = objects.len() + 1;
    out.extend_from_slice(format!("xref\n0 {size}\n0000000000 65535 f \n").as_bytes());
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!("trailer\n<< /Size {size} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n").as_bytes(),
    );
    out
}

/// A resource dictionary with Helvetica as `/F1`, for content streams that draw text.
pub const FONT: &str = "<< /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >>";

/// `pages` pages that all draw the one content stream `content` (FlateDecode-compressed already).
pub fn pdf_of_pages(pages: usize, content: &[u8]) -> Vec<u8> {
    let kids: Vec<String> = (0..pages).map(|n| format!("{} 0 R", 4 + n)).collect();
    let mut objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        format!(
            "<< /Type /Pages /Kids [{}] /Count {pages} /Resources {FONT} >>",
            kids.join(" ")
        )
        .into_bytes(),
        stream("/Filter /FlateDecode", content),
    ];
    objects.extend(
        (0..pages)
            .map(|_| b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R >>".to_vec()),
    );
    pdf(&objects)
}
