//! Turning a fetched body into text for the model: content types, charsets, HTML extraction,
//! and the length limit with its hint.

use dom_smoothie::{Config, Readability, TextMode};
use url::Url;

use super::PageMeta;
use crate::web::http::default_favicon;

pub const DEFAULT_MAX_LENGTH: usize = 16_000;
pub const MIN_MAX_LENGTH: usize = 1_000;
pub const MAX_MAX_LENGTH: usize = 64_000;
/// Bounds the extraction work on pathological pages; past it the plain-text fallback is used.
const MAX_ELEMENTS_TO_EXTRACT: usize = 200_000;
/// Column width for the plain-text fallback; wide enough that prose is not re-wrapped much.
const FALLBACK_TEXT_WIDTH: usize = 120;

/// How a body is turned into text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Html,
    PlainText,
    Json,
}

/// A `Content-Type` value split into what we use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaType {
    /// Lower-cased `type/subtype`.
    pub essence: String,
    pub charset: Option<String>,
}

impl MediaType {
    pub fn parse(header: &str) -> Self {
        let mut parts = header.split(';');
        let essence = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let charset = parts.find_map(|param| {
            let (name, value) = param.split_once('=')?;
            name.trim()
                .eq_ignore_ascii_case("charset")
                .then(|| value.trim().trim_matches('"').to_ascii_lowercase())
        });
        Self { essence, charset }
    }

    /// `None` for types we cannot turn into text.
    pub fn kind(&self) -> Option<Kind> {
        match self.essence.as_str() {
            "text/html" | "application/xhtml+xml" => Some(Kind::Html),
            "text/plain" | "text/markdown" | "text/x-markdown" => Some(Kind::PlainText),
            "application/json" | "text/json" => Some(Kind::Json),
            other if other.starts_with("application/") && other.ends_with("+json") => Some(Kind::Json),
            _ => None,
        }
    }
}

/// A guess for a body served without a `Content-Type`: text that looks like a page is HTML, other
/// UTF-8 text is plain text, anything else is refused.
pub fn sniff_kind(body: &[u8]) -> Option<Kind> {
    let head = &body[..body.len().min(1024)];
    if head.contains(&0) {
        return None;
    }
    let text = match std::str::from_utf8(head) {
        Ok(text) => text,
        // The cut may fall inside a character; only a real decoding error means binary.
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return None,
    };
    let start = text.trim_start().to_ascii_lowercase();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        Some(Kind::Html)
    } else {
        Some(Kind::PlainText)
    }
}

/// HTML may name its charset in a `<meta>` tag instead of the header.
fn charset_from_html_head(body: &[u8]) -> Option<String> {
    let head = String::from_utf8_lossy(&body[..body.len().min(2048)]).to_ascii_lowercase();
    let at = head.find("charset=")? + "charset=".len();
    let value: String = head[at..]
        .trim_start_matches(['"', '\''])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
        .collect();
    (!value.is_empty()).then_some(value)
}

/// Windows-1252 differs from ISO-8859-1 only in 0x80..=0x9F; browsers decode both labels this way.
const WINDOWS_1252_HIGH: [char; 32] = [
    '\u{20AC}', '\u{81}', '\u{201A}', '\u{192}', '\u{201E}', '\u{2026}', '\u{2020}', '\u{2021}', '\u{2C6}',
    '\u{2030}', '\u{160}', '\u{2039}', '\u{152}', '\u{8D}', '\u{17D}', '\u{8F}', '\u{90}', '\u{2018}',
    '\u{2019}', '\u{201C}', '\u{201D}', '\u{2022}', '\u{2013}', '\u{2014}', '\u{2DC}', '\u{2122}', '\u{161}',
    '\u{203A}', '\u{153}', '\u{9D}', '\u{17E}', '\u{178}',
];

fn is_latin1_label(label: &str) -> bool {
    matches!(
        label,
        "iso-8859-1"
            | "iso8859-1"
            | "latin1"
            | "latin-1"
            | "l1"
            | "windows-1252"
            | "cp1252"
            | "x-cp1252"
            | "us-ascii"
            | "ascii"
    )
}

/// Decodes a body as UTF-8 unless its charset says Latin-1 / Windows-1252. Other charsets are
/// read as UTF-8 with replacement characters: better a few odd characters than no page.
pub fn decode_text(body: &[u8], kind: Kind, declared_charset: Option<&str>) -> String {
    let sniffed = match (declared_charset, kind) {
        (None, Kind::Html) => charset_from_html_head(body),
        _ => None,
    };
    let charset = declared_charset.map(str::to_owned).or(sniffed);
    if charset.as_deref().is_some_and(is_latin1_label) {
        return body
            .iter()
            .map(|&b| match b {
                0x80..=0x9f => WINDOWS_1252_HIGH[usize::from(b - 0x80)],
                _ => char::from(b),
            })
            .collect();
    }
    if let Some(label) = charset.as_deref().filter(|l| !matches!(*l, "utf-8" | "utf8")) {
        tracing::debug!(charset = label, "unsupported charset, reading the page as UTF-8");
    }
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    // A body cut at the byte cap may end inside a character; drop that partial character.
    let complete = match std::str::from_utf8(body) {
        Err(e) if e.error_len().is_none() => &body[..e.valid_up_to()],
        _ => body,
    };
    String::from_utf8_lossy(complete).into_owned()
}

/// JSON is shown pretty-printed; a body that does not parse (for example one cut at the cap)
/// is shown as it came.
pub fn json_text(raw: String) -> String {
    serde_json::from_str::<serde_json::Value>(&raw)
        .ok()
        .and_then(|value| serde_json::to_string_pretty(&value).ok())
        .unwrap_or(raw)
}

/// What an HTML page yields: its readable text as Markdown and its metadata.
pub struct HtmlExtract {
    pub title: Option<String>,
    pub text: String,
    pub meta: PageMeta,
}

/// Extracts the article with a Readability pass; pages it cannot make sense of (navigation
/// hubs, app shells) fall back to a plain rendering of the whole document.
pub fn extract_html(html: &str, page_url: &Url) -> HtmlExtract {
    extract_html_within(html, page_url, MAX_ELEMENTS_TO_EXTRACT)
}

fn extract_html_within(html: &str, page_url: &Url, max_elements: usize) -> HtmlExtract {
    let config = Config {
        text_mode: TextMode::Markdown,
        max_elements_to_parse: max_elements,
        ..Config::default()
    };
    let Ok(mut readability) = Readability::new(html, Some(page_url.as_str()), Some(config)) else {
        return fallback_extract(html, page_url);
    };
    let found = readability.get_article_metadata(readability.parse_json_ld());
    let absolute = |link: Option<String>| {
        let link = link.map(|l| l.trim().to_owned()).filter(|l| !l.is_empty())?;
        page_url.join(&link).ok().map(String::from)
    };
    let meta = PageMeta {
        title: non_blank(Some(found.title)),
        description: non_blank(found.excerpt),
        image: absolute(found.image),
        site_name: non_blank(found.site_name),
        favicon: absolute(found.favicon).or_else(|| default_favicon(page_url)),
        author: non_blank(found.byline),
        published_date: non_blank(found.published_time),
    };
    let article = readability
        .parse()
        .ok()
        .filter(|a| !a.text_content.trim().is_empty());
    let (title, text) = match article {
        Some(article) => (
            non_blank(Some(article.title)),
            article.text_content.trim().to_owned(),
        ),
        None => (None, plain_rendering(html)),
    };
    HtmlExtract {
        title: title.or_else(|| meta.title.clone()),
        text,
        meta,
    }
}

fn fallback_extract(html: &str, page_url: &Url) -> HtmlExtract {
    let meta = PageMeta {
        favicon: default_favicon(page_url),
        ..PageMeta::default()
    };
    HtmlExtract {
        title: None,
        text: plain_rendering(html),
        meta,
    }
}

fn plain_rendering(html: &str) -> String {
    html2text::from_read(html.as_bytes(), FALLBACK_TEXT_WIDTH)
        .map(|text| text.trim().to_owned())
        .unwrap_or_default()
}

fn non_blank(value: Option<String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

pub fn clamp_max_length(requested: Option<usize>) -> usize {
    requested
        .unwrap_or(DEFAULT_MAX_LENGTH)
        .clamp(MIN_MAX_LENGTH, MAX_MAX_LENGTH)
}

/// Cuts `text` to `max_chars` characters (never inside a character). Returns whether the limit
/// was reached; below the hard cap a truncated text ends with a hint to ask for more.
pub fn fit_to_length(text: &str, max_chars: usize) -> (String, bool) {
    let cut_at = text.char_indices().nth(max_chars).map(|(byte, _)| byte);
    let kept = &text[..cut_at.unwrap_or(text.len())];
    let is_truncated = kept.chars().count() >= max_chars;
    let mut fitted = kept.to_owned();
    if is_truncated && max_chars < MAX_MAX_LENGTH {
        let next = (max_chars * 2).min(MAX_MAX_LENGTH);
        fitted.push_str(&format!(
            "\n\n[The text was cut at {max_chars} characters. Call fetch_content again with max_length = {next} to read further.]"
        ));
    }
    (fitted, is_truncated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_media_types() {
        let media = MediaType::parse("Text/HTML; Charset=\"ISO-8859-1\"");
        assert_eq!(media.essence, "text/html");
        assert_eq!(media.charset.as_deref(), Some("iso-8859-1"));
        assert_eq!(media.kind(), Some(Kind::Html));
        assert_eq!(MediaType::parse("application/ld+json").kind(), Some(Kind::Json));
        assert_eq!(MediaType::parse("text/json").kind(), Some(Kind::Json));
        assert_eq!(
            MediaType::parse("text/markdown; charset=utf-8").kind(),
            Some(Kind::PlainText)
        );
        assert_eq!(MediaType::parse("application/pdf").kind(), None);
        assert_eq!(MediaType::parse("image/png").kind(), None);
    }

    #[test]
    fn decodes_latin1_and_windows_1252() {
        let body = b"caf\xe9 \x80 \x93dash\x94";
        assert_eq!(
            decode_text(body, Kind::PlainText, Some("iso-8859-1")),
            "caf\u{e9} \u{20ac} \u{201c}dash\u{201d}"
        );
        let html = b"<html><head><meta charset=\"windows-1252\"></head><body>na\xefve</body></html>";
        assert!(decode_text(html, Kind::Html, None).contains("na\u{ef}ve"));
    }

    #[test]
    fn decodes_utf8_dropping_a_bom_and_a_character_cut_in_half() {
        assert_eq!(
            decode_text(b"\xEF\xBB\xBFgr\xc3\xbc\xc3", Kind::PlainText, Some("utf-8")),
            "gr\u{fc}"
        );
    }

    #[test]
    fn sniffs_bodies_without_a_content_type() {
        assert_eq!(sniff_kind(b"  <!DOCTYPE html><html></html>"), Some(Kind::Html));
        assert_eq!(sniff_kind(b"just words"), Some(Kind::PlainText));
        assert_eq!(sniff_kind(b"\x89PNG\r\n\x1a\n\0\0\0"), None);
    }

    #[test]
    fn a_page_too_big_for_extraction_falls_back_to_plain_text_keeping_its_metadata() {
        let html = "<html><head><title>Big</title><meta property=\"og:site_name\" content=\"Site\"></head>\
            <body><div><p>First paragraph.</p><p>Second paragraph.</p><ul><li>one</li><li>two</li></ul></div></body></html>";
        let page_url = Url::parse("https://example.org/big").unwrap_or_else(|e| panic!("{e}"));

        let page = extract_html_within(html, &page_url, 3);

        assert!(
            page.text.contains("First paragraph.") && page.text.contains("two"),
            "{}",
            page.text
        );
        // The plain renderer marks list items with `*`; extraction would have used `-`.
        assert!(page.text.contains("* one"), "{}", page.text);
        assert_eq!(page.title.as_deref(), Some("Big"));
        assert_eq!(page.meta.site_name.as_deref(), Some("Site"));
        assert_eq!(
            page.meta.favicon.as_deref(),
            Some("https://example.org/favicon.ico")
        );
    }

    #[test]
    fn clamps_max_length() {
        assert_eq!(clamp_max_length(None), 16_000);
        assert_eq!(clamp_max_length(Some(10)), 1_000);
        assert_eq!(clamp_max_length(Some(5_000)), 5_000);
        assert_eq!(clamp_max_length(Some(1_000_000)), 64_000);
    }

    #[test]
    fn fits_text_counting_characters_and_hints_at_more() {
        let text = "\u{e9}".repeat(1_500);
        let (fitted, truncated) = fit_to_length(&text, 1_000);
        assert!(truncated);
        assert!(fitted.starts_with(&"\u{e9}".repeat(1_000)));
        assert!(!fitted.starts_with(&"\u{e9}".repeat(1_001)));
        assert!(fitted.contains("max_length = 2000"));

        let (fitted, truncated) = fit_to_length(&"a".repeat(999), 1_000);
        assert!(!truncated);
        assert_eq!(fitted.len(), 999);

        let (fitted, truncated) = fit_to_length(&"a".repeat(1_000), 1_000);
        assert!(truncated, "a text exactly at the limit counts as truncated");
        assert!(fitted.contains("max_length = 2000"));

        let (fitted, truncated) = fit_to_length(&"a".repeat(40_000), 40_000);
        assert!(truncated);
        assert!(fitted.contains("max_length = 64000"));

        let (fitted, truncated) = fit_to_length(&"a".repeat(70_000), 64_000);
        assert!(truncated);
        assert_eq!(fitted.len(), 64_000, "no hint at the hard cap");
    }
}
