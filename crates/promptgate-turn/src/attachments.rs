//! The text of attached files, for the model: text, Markdown, CSV, JSON and PDF files sent inline
//! (as `data:` URLs, which is how `useChat` sends a picked file) reach the model as their text,
//! framed by their name. Anything else stays a label. Files behind an http(s) URL are never fetched
//! from here: that URL came from a client and may point anywhere, the server's own network included.
//! Reading a file is CPU work: the send path does it through [`crate::documents`], off the async
//! workers.

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

use crate::pdf::{Deadline, PdfLimits, pdf_text};

/// Standard base64 that takes the data with or without its `=` padding, as encoders differ.
const LENIENT_BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Characters of one file given to the model; a longer file is cut, and the model is told so.
pub const MAX_FILE_CHARS: usize = 16_000;

/// What the model gets for one attached file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileText {
    /// The file's text, already framed with its name.
    Text(String),
    /// Not a text file, or not inline: only its name and type.
    Label,
}

/// The text a model sees for an attached file, or [`FileText::Label`] when there is none to give.
/// A PDF is read within `pdf`'s limits and by its deadline; without them (a caller on a runtime
/// worker, where parsing one would hold every other request) it gets its label.
pub(crate) fn file_text(
    name: &str,
    media_type: &str,
    url: &str,
    pdf: Option<(PdfLimits, Deadline)>,
) -> FileText {
    if !has_text(name, media_type, url) {
        return FileText::Label;
    }
    let (Some(kind), Some(bytes)) = (readable(name, media_type), data_url_bytes(url)) else {
        return FileText::Label;
    };
    let text = match (kind, pdf) {
        (Readable::Pdf, Some((limits, deadline))) => pdf_text(&bytes, limits, deadline),
        (Readable::Pdf, None) => return FileText::Label,
        (Readable::Text, _) => {
            let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
            std::str::from_utf8(bytes)
                .map(str::to_owned)
                .map_err(|_| "its content is not UTF-8 text".to_owned())
        }
    };
    FileText::Text(match text {
        Ok(text) => framed(name, media_type, &text),
        Err(why) => unreadable(name, media_type, &why),
    })
}

/// Whether [`file_text`] may give more than a label: a kind of file whose text is read, sent inline.
pub fn has_text(name: &str, media_type: &str, url: &str) -> bool {
    readable(name, media_type).is_some() && url.starts_with("data:")
}

/// The prompt tells the model to say when an attachment is unreadable; it needs to know which and why.
pub(crate) fn unreadable(name: &str, media_type: &str, why: &str) -> String {
    format!("[Attached file: {name} ({media_type}); {why} and could not be read]")
}

/// The file's text between its name and an end marker, cut at [`MAX_FILE_CHARS`].
fn framed(name: &str, media_type: &str, text: &str) -> String {
    let (body, cut) = match text.char_indices().nth(MAX_FILE_CHARS) {
        Some((end, _)) => (&text[..end], true),
        None => (text, false),
    };
    let mut out = String::with_capacity(body.len() + name.len() * 2 + 64);
    out.push_str(&format!("[Attached file: {name} ({media_type})]\n"));
    out.push_str(body.trim_end());
    if cut {
        out.push_str(&format!(
            "\n...[truncated: the file is longer than {MAX_FILE_CHARS} characters]"
        ));
    }
    out.push_str(&format!("\n[End of {name}]"));
    out
}

/// The files whose text a model can be given.
enum Readable {
    Text,
    Pdf,
}

/// Text, Markdown, CSV, JSON and PDF by media type; by the name's extension when the client sent a
/// generic type (browsers give `.md` files no type, or `application/octet-stream`).
fn readable(name: &str, media_type: &str) -> Option<Readable> {
    let essence = media_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    match essence.as_str() {
        "application/pdf" => Some(Readable::Pdf),
        "application/json" | "application/x-ndjson" => Some(Readable::Text),
        "" | "application/octet-stream" => {
            let extension = name.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase());
            match extension.as_deref()? {
                "pdf" => Some(Readable::Pdf),
                "txt" | "text" | "md" | "markdown" | "csv" | "tsv" | "json" | "jsonl" => Some(Readable::Text),
                _ => None,
            }
        }
        other => (other.starts_with("text/") && other != "text/html" || other.ends_with("+json"))
            .then_some(Readable::Text),
    }
}

/// The bytes of a `data:` URL: base64 when it says so, percent-encoded otherwise.
fn data_url_bytes(url: &str) -> Option<Vec<u8>> {
    let rest = url.strip_prefix("data:")?;
    let (meta, data) = rest.split_once(',')?;
    if meta
        .rsplit(';')
        .next()
        .is_some_and(|last| last.eq_ignore_ascii_case("base64"))
    {
        // Some encoders wrap base64 lines; whitespace is never part of the data.
        let compact: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        return LENIENT_BASE64.decode(compact).ok();
    }
    Some(percent_decode(data))
}

fn percent_decode(data: &str) -> Vec<u8> {
    let bytes = data.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[at] == b'%'
            && let (Some(high), Some(low)) = (
                bytes.get(at + 1).copied().and_then(hex),
                bytes.get(at + 2).copied().and_then(hex),
            )
        {
            out.push((high * 16 + low) as u8);
            at += 3;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(name: &str, media_type: &str, url: &str) -> FileText {
        let minute = Deadline::after(std::time::Duration::from_secs(60));
        file_text(name, media_type, url, Some((PdfLimits::default(), minute)))
    }

    fn inline(media_type: &str, text: &str) -> String {
        format!(
            "data:{media_type};base64,{}",
            base64::engine::general_purpose::STANDARD.encode(text)
        )
    }

    #[test]
    fn text_markdown_csv_and_json_files_reach_the_model_as_their_text() {
        for (name, media_type, content) in [
            ("notes.txt", "text/plain", "Buy milk."),
            ("plan.md", "text/markdown", "# Plan\n- tides"),
            ("tides.csv", "text/csv", "day,high\nmon,06:40"),
            ("tides.json", "application/json", "{\"mon\": \"06:40\"}"),
            ("readme.md", "", "# Read me"),
            ("data.jsonl", "application/octet-stream", "{}"),
        ] {
            assert_eq!(
                read(name, media_type, &inline(media_type, content)),
                FileText::Text(format!(
                    "[Attached file: {name} ({media_type})]\n{content}\n[End of {name}]"
                )),
                "{name}"
            );
        }
    }

    #[test]
    fn percent_encoded_data_urls_and_a_byte_order_mark_are_read() {
        assert_eq!(
            read("a.csv", "text/csv", "data:text/csv,day%2Chigh%0Amon%2C06%3A40"),
            FileText::Text("[Attached file: a.csv (text/csv)]\nday,high\nmon,06:40\n[End of a.csv]".into())
        );
        let with_bom = format!(
            "data:text/plain;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(b"\xEF\xBB\xBFhi")
        );
        assert_eq!(
            read("b.txt", "text/plain", &with_bom),
            FileText::Text("[Attached file: b.txt (text/plain)]\nhi\n[End of b.txt]".into())
        );
    }

    #[test]
    fn other_files_remote_files_and_html_stay_labels() {
        assert_eq!(
            read("doc.pdf", "application/pdf", "https://files.example/doc.pdf"),
            FileText::Label
        );
        assert_eq!(
            read("notes.txt", "text/plain", "https://files.example/notes.txt"),
            FileText::Label
        );
        assert_eq!(
            read("page.html", "text/html", &inline("text/html", "<p>x</p>")),
            FileText::Label
        );
        assert_eq!(
            read("archive.zip", "application/octet-stream", "data:;base64,UEsDBA=="),
            FileText::Label
        );
    }

    #[test]
    fn a_long_file_is_cut_and_the_model_is_told() {
        let long = "é".repeat(MAX_FILE_CHARS + 10);
        let FileText::Text(text) = read("long.txt", "text/plain", &inline("text/plain", &long)) else {
            panic!("a text file");
        };
        assert_eq!(text.matches('é').count(), MAX_FILE_CHARS);
        assert!(text.contains("...[truncated"), "{text}");
        assert!(text.ends_with("[End of long.txt]"));
    }

    #[test]
    fn a_file_that_is_not_utf8_is_reported_unreadable() {
        let latin1 = format!(
            "data:text/plain;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(b"caf\xE9")
        );
        let FileText::Text(text) = read("menu.txt", "text/plain", &latin1) else {
            panic!("reported, not dropped");
        };
        assert!(text.contains("could not be read"), "{text}");
    }

    /// A one-page PDF whose page shows `lines` in Helvetica, with a correct cross-reference table.
    fn pdf_with(lines: &[&str]) -> Vec<u8> {
        let mut content = String::from("BT /F1 12 Tf 72 720 Td 14 TL");
        for line in lines {
            content.push_str(&format!(" ({line}) Tj T*"));
        }
        content.push_str(" ET");
        let objects = [
            "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
            "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_owned(),
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>".to_owned(),
            format!("<< /Length {} >>\nstream\n{content}\nendstream", content.len()),
            "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".to_owned(),
        ];
        let mut pdf = b"%PDF-1.4\n".to_vec();
        let mut offsets = Vec::new();
        for (n, body) in objects.iter().enumerate() {
            offsets.push(pdf.len());
            pdf.extend_from_slice(format!("{} 0 obj\n{body}\nendobj\n", n + 1).as_bytes());
        }
        let xref = pdf.len();
        pdf.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
        for offset in offsets {
            pdf.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
        }
        pdf.extend_from_slice(
            format!(
                "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
                objects.len() + 1
            )
            .as_bytes(),
        );
        pdf
    }

    fn pdf_url(bytes: &[u8]) -> String {
        format!(
            "data:application/pdf;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(bytes)
        )
    }

    #[test]
    fn a_pdf_reaches_the_model_as_the_text_of_its_pages() {
        let pdf = pdf_with(&["Invoice 2026-114", "Total due: 42 EUR"]);
        let FileText::Text(text) = read("invoice.pdf", "application/pdf", &pdf_url(&pdf)) else {
            panic!("a PDF with text is read");
        };
        assert!(
            text.starts_with("[Attached file: invoice.pdf (application/pdf)]\n"),
            "{text}"
        );
        assert!(text.contains("Invoice 2026-114"), "{text}");
        assert!(text.contains("Total due: 42 EUR"), "{text}");
        assert!(text.ends_with("[End of invoice.pdf]"));
        // Browsers may send no type; the name says it is a PDF.
        let by_name = read("INVOICE.PDF", "", &pdf_url(&pdf));
        let expected = text
            .replace("invoice.pdf (application/pdf)", "INVOICE.PDF ()")
            .replace("End of invoice.pdf", "End of INVOICE.PDF");
        assert_eq!(by_name, FileText::Text(expected));
        assert!(
            text.starts_with("[Attached file: invoice.pdf (application/pdf)]\nInvoice"),
            "{text}"
        );
    }

    #[test]
    fn a_broken_or_textless_pdf_is_reported_unreadable_not_dropped() {
        for (bytes, why) in [
            (b"%PDF-".to_vec(), "not a PDF this server can parse"),
            (b"not a pdf at all".to_vec(), "not a PDF this server can parse"),
            (pdf_with(&[]), "without a text layer"),
        ] {
            let FileText::Text(text) = read("scan.pdf", "application/pdf", &pdf_url(&bytes)) else {
                panic!("reported, not dropped");
            };
            assert!(text.contains(why) && text.contains("could not be read"), "{text}");
        }
    }
}
