//! The text of attached files, for the model: text, Markdown, CSV and JSON files sent inline (as
//! `data:` URLs, which is how `useChat` sends a picked file) reach the model as their text, framed
//! by their name. Anything else stays a label. Files behind an http(s) URL are never fetched from
//! here: that URL came from a client and may point anywhere, the server's own network included.

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

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
pub fn file_text(name: &str, media_type: &str, url: &str) -> FileText {
    if !is_text_file(name, media_type) {
        return FileText::Label;
    }
    let Some(bytes) = data_url_bytes(url) else {
        return FileText::Label;
    };
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
    let Ok(text) = std::str::from_utf8(bytes) else {
        // The prompt tells the model to say when an attachment is unreadable; it needs to know.
        return FileText::Text(format!(
            "[Attached file: {name} ({media_type}); its content is not UTF-8 text and could not be read]"
        ));
    };
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
    FileText::Text(out)
}

/// Text, Markdown, CSV and JSON by media type; by the name's extension when the client sent a
/// generic type (browsers give `.md` files no type, or `application/octet-stream`).
fn is_text_file(name: &str, media_type: &str) -> bool {
    let essence = media_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    match essence.as_str() {
        "application/json" | "application/x-ndjson" => true,
        "" | "application/octet-stream" => {
            let extension = name.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase());
            matches!(
                extension.as_deref(),
                Some("txt" | "text" | "md" | "markdown" | "csv" | "tsv" | "json" | "jsonl")
            )
        }
        other => other.starts_with("text/") && other != "text/html" || other.ends_with("+json"),
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
                file_text(name, media_type, &inline(media_type, content)),
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
            file_text("a.csv", "text/csv", "data:text/csv,day%2Chigh%0Amon%2C06%3A40"),
            FileText::Text("[Attached file: a.csv (text/csv)]\nday,high\nmon,06:40\n[End of a.csv]".into())
        );
        let with_bom = format!(
            "data:text/plain;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(b"\xEF\xBB\xBFhi")
        );
        assert_eq!(
            file_text("b.txt", "text/plain", &with_bom),
            FileText::Text("[Attached file: b.txt (text/plain)]\nhi\n[End of b.txt]".into())
        );
    }

    #[test]
    fn other_files_remote_files_and_html_stay_labels() {
        assert_eq!(
            file_text(
                "doc.pdf",
                "application/pdf",
                "data:application/pdf;base64,JVBERi0="
            ),
            FileText::Label
        );
        assert_eq!(
            file_text("notes.txt", "text/plain", "https://files.example/notes.txt"),
            FileText::Label
        );
        assert_eq!(
            file_text("page.html", "text/html", &inline("text/html", "<p>x</p>")),
            FileText::Label
        );
        assert_eq!(
            file_text("archive.zip", "application/octet-stream", "data:;base64,UEsDBA=="),
            FileText::Label
        );
    }

    #[test]
    fn a_long_file_is_cut_and_the_model_is_told() {
        let long = "é".repeat(MAX_FILE_CHARS + 10);
        let FileText::Text(text) = file_text("long.txt", "text/plain", &inline("text/plain", &long)) else {
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
        let FileText::Text(text) = file_text("menu.txt", "text/plain", &latin1) else {
            panic!("reported, not dropped");
        };
        assert!(text.contains("could not be read"), "{text}");
    }
}
