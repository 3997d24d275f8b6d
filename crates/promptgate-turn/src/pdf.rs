//! The text layer of an attached PDF, read within bounds.
//!
//! A PDF is mostly compressed streams and drawing instructions, and a small file can inflate to
//! gigabytes, list one page content thousands of times, or draw a form inside itself until the
//! stack runs out. Before the parser sees a file, two checks spend one byte budget
//! ([`PdfLimits::max_expanded_bytes`]): every compressed stream is inflated into a throwaway
//! buffer (no parser involved, so none can be tricked into inflating more), then every page's
//! drawing is walked, each form counted every time it is drawn, nested at most
//! [`MAX_FORM_DEPTH`] deep. Encrypted files and compressions this server does not bound (LZW,
//! ASCII85) are refused instead of read, and so are arrays and dictionaries nested past
//! [`MAX_NESTING`] in the file, an object stream or a drawing (the parser recurses into them). The reading itself stops at its [`Deadline`]: the
//! extractor is given an output that fails once the time is up, so a file that is slow to draw
//! frees its thread at the limit instead of holding it until the parser is done.

use std::collections::HashMap;
use std::io::Read;
use std::time::{Duration, Instant};

use flate2::read::ZlibDecoder;
use lopdf::content::Content;
use lopdf::{Dictionary, Document, Object, ObjectId};
use pdf_extract::{MediaBox, OutputDev, OutputError, PlainTextOutput, Transform};

/// Forms drawn inside forms, at most this deep; real documents nest a few levels.
pub const MAX_FORM_DEPTH: usize = 8;
/// Tokens (numbers, names, operators...) in one page or form; past it, decoding its drawing would
/// cost far more memory than the bytes suggest.
pub const MAX_TOKENS_PER_DRAWING: usize = 200_000;
/// Levels of compression inside compression that are inflated.
const MAX_NESTED_INFLATIONS: usize = 8;
/// Pages up the page tree a page inherits from, at most.
const MAX_PAGE_TREE_DEPTH: usize = 64;
/// Arrays and dictionaries inside each other, at most this deep. The parser reads them by
/// recursion, and a small file of nothing but `[` runs its thread out of stack, which ends the
/// process, not the read; real documents nest a few levels.
pub const MAX_NESTING: usize = 128;

/// How much of a PDF is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PdfLimits {
    /// A larger file is not read.
    pub max_bytes: usize,
    /// What the file's streams may inflate to, plus what its pages draw, in all.
    pub max_expanded_bytes: usize,
}

impl Default for PdfLimits {
    fn default() -> Self {
        Self {
            max_bytes: 16 * 1024 * 1024,
            max_expanded_bytes: 32 * 1024 * 1024,
        }
    }
}

/// Why a PDF's text cannot be given; the text completes "…; <reason> and could not be read".
pub(crate) type Unreadable = String;

/// When a file's reading must end.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    at: Instant,
    limit: Duration,
}

impl Deadline {
    /// `limit` from now.
    pub(crate) fn after(limit: Duration) -> Self {
        Self {
            at: Instant::now() + limit,
            limit,
        }
    }

    fn passed(&self) -> bool {
        Instant::now() >= self.at
    }

    fn check(&self) -> Result<(), Unreadable> {
        if self.passed() {
            return Err(took_too_long(self.limit));
        }
        Ok(())
    }
}

/// Why a file whose reading outlived `limit` is not given.
pub(crate) fn took_too_long(limit: Duration) -> Unreadable {
    let millis = limit.as_millis();
    let limit = match millis % 1000 {
        0 if millis == 1000 => "1 second".to_owned(),
        0 => format!("{} seconds", millis / 1000),
        _ => format!("{millis} ms"),
    };
    format!("it took longer than {limit} to read")
}

/// The text layer of `bytes`, page by page.
pub(crate) fn pdf_text(bytes: &[u8], limits: PdfLimits, deadline: Deadline) -> Result<String, Unreadable> {
    if bytes.len() > limits.max_bytes {
        return Err(format!("it is a PDF larger than {}", mib(limits.max_bytes)));
    }
    let mut budget = Budget {
        left: limits.max_expanded_bytes,
        limit: limits.max_expanded_bytes,
    };
    refuse_unbounded_features(bytes)?;
    refuse_deep_nesting(bytes)?;
    inflate_every_stream(bytes, &mut budget, deadline)?;
    // A malformed file may make the parser panic; that is the file's fault, and it must cost the
    // user one unreadable attachment, not the turn.
    let parsed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> Result<String, Unreadable> {
        let doc = Document::load_mem(bytes).map_err(|err| {
            tracing::debug!(%err, "an attached PDF could not be loaded");
            unparseable()
        })?;
        deadline.check()?;
        walk_drawing(&doc, &mut budget, deadline)?;
        let mut text = String::new();
        let mut output = Timed {
            inner: PlainTextOutput::new(&mut text),
            deadline,
        };
        let extracted = pdf_extract::output_doc(&doc, &mut output);
        deadline.check()?;
        extracted.map_err(|err| {
            tracing::debug!(%err, "an attached PDF could not be parsed");
            unparseable()
        })?;
        Ok(text)
    }));
    match parsed {
        Ok(Ok(text)) if text.trim().is_empty() => {
            Err("it is a PDF without a text layer (a scan or images only)".to_owned())
        }
        // Page breaks come out as leading blank lines; the frame already starts a line.
        Ok(Ok(text)) => Ok(text.trim_start().to_owned()),
        Ok(Err(why)) => Err(why),
        Err(_) => Err(unparseable()),
    }
}

fn unparseable() -> Unreadable {
    "it is not a PDF this server can parse".to_owned()
}

/// A byte count as a person reads it: whole MiB or KiB when it is one.
fn mib(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// What is left of the byte budget.
struct Budget {
    left: usize,
    limit: usize,
}

impl Budget {
    fn spend(&mut self, bytes: usize) -> Result<(), Unreadable> {
        match self.left.checked_sub(bytes) {
            Some(left) => {
                self.left = left;
                Ok(())
            }
            None => Err(format!(
                "it is a PDF whose content expands past the {} this server reads",
                mib(self.limit)
            )),
        }
    }
}

/// Encryption (the parser decrypts, then inflates what the first check could not see) and the
/// filters the parser would decode without a bound. Names are compared as the parser reads them,
/// `#xx` escapes decoded.
fn refuse_unbounded_features(pdf: &[u8]) -> Result<(), Unreadable> {
    for name in names(pdf) {
        match name.as_slice() {
            b"Encrypt" => return Err("it is an encrypted PDF".to_owned()),
            b"LZWDecode" | b"ASCII85Decode" => {
                return Err(
                    "it is a PDF compressed in a way this server does not read (LZW or ASCII85)".to_owned(),
                );
            }
            _ => {}
        }
    }
    Ok(())
}

/// The names in the file (`/Name`), decoded, up to the length of the longest one looked for.
fn names(pdf: &[u8]) -> impl Iterator<Item = Vec<u8>> + '_ {
    const LONGEST: usize = 16;
    memchr::memchr_iter(b'/', pdf).filter_map(|at| {
        let mut name = Vec::new();
        let mut rest = &pdf[at + 1..];
        while let Some((&byte, tail)) = rest.split_first() {
            if byte.is_ascii_whitespace() || b"()<>[]{}/%".contains(&byte) || byte == 0 {
                break;
            }
            let (decoded, tail) = match (byte, tail) {
                (b'#', [high, low, tail @ ..]) => match (hex(*high), hex(*low)) {
                    (Some(high), Some(low)) => (high << 4 | low, tail),
                    _ => (byte, tail),
                },
                _ => (byte, tail),
            };
            if name.len() == LONGEST {
                return None;
            }
            name.push(decoded);
            rest = tail;
        }
        Some(name)
    })
}

fn hex(digit: u8) -> Option<u8> {
    (digit as char).to_digit(16).map(|d| d as u8)
}

/// Inflates, into a buffer that is dropped, whatever zlib data starts where a stream's data may
/// start (after each `stream` keyword), to its end whatever the stream's declared length, and
/// again while what came out is zlib data itself. A parser reading any of these streams gets at
/// most what was counted here.
/// An object stream's objects are parsed as the file's are, so its inflated data is held to
/// [`MAX_NESTING`] too.
fn inflate_every_stream(pdf: &[u8], budget: &mut Budget, deadline: Deadline) -> Result<(), Unreadable> {
    for keyword in memchr::memmem::find_iter(pdf, b"stream") {
        deadline.check()?;
        let mut data = std::borrow::Cow::Borrowed(&pdf[data_start(pdf, keyword + 6)..]);
        for _ in 0..MAX_NESTED_INFLATIONS {
            match inflate(&data, budget)? {
                Some(inflated) => data = std::borrow::Cow::Owned(inflated),
                None => break,
            }
        }
        if matches!(data, std::borrow::Cow::Owned(_)) && is_object_stream(pdf, keyword) {
            refuse_deep_nesting(&data)?;
        }
    }
    Ok(())
}

/// Whether the dictionary before the `stream` keyword at `keyword` (from its object's `obj`) names
/// `/ObjStm`.
fn is_object_stream(pdf: &[u8], keyword: usize) -> bool {
    let head = &pdf[..keyword];
    let from = memchr::memmem::rfind(head, b"obj").unwrap_or(0);
    names(&head[from..]).any(|name| name == b"ObjStm")
}

fn refuse_deep_nesting(data: &[u8]) -> Result<(), Unreadable> {
    if nests_too_deep(data) {
        return Err(format!(
            "it is a PDF with arrays or dictionaries nested more than {MAX_NESTING} deep"
        ));
    }
    Ok(())
}

/// Whether `data`, in the PDF's object or drawing syntax, nests arrays and dictionaries more than
/// [`MAX_NESTING`] deep. Strings, comments and stream data are passed over, as the parser passes
/// over them; a closing bracket without an opening one counts for nothing.
fn nests_too_deep(data: &[u8]) -> bool {
    let mut depth = 0usize;
    let mut at = 0;
    while let Some(&byte) = data.get(at) {
        let next = data.get(at + 1).copied();
        match byte {
            b'[' => depth += 1,
            b']' => depth = depth.saturating_sub(1),
            b'<' if next == Some(b'<') => {
                depth += 1;
                at += 1;
            }
            b'>' if next == Some(b'>') => {
                depth = depth.saturating_sub(1);
                at += 1;
            }
            // A hex string.
            b'<' => at = memchr::memchr(b'>', &data[at..]).map_or(data.len(), |end| at + end),
            b'(' => at = literal_end(data, at),
            b'%' => at = memchr::memchr2(b'\r', b'\n', &data[at..]).map_or(data.len(), |end| at + end),
            b's' if data[at..].starts_with(b"stream")
                && at
                    .checked_sub(1)
                    .is_none_or(|before| !data[before].is_ascii_alphanumeric()) =>
            {
                at = memchr::memmem::find(&data[at..], b"endstream").map_or(data.len(), |end| at + end + 8);
            }
            _ => {}
        }
        if depth > MAX_NESTING {
            return true;
        }
        at += 1;
    }
    false
}

/// Where the literal string opening at `open` ends: its closing parenthesis (balanced ones
/// inside, a backslash escaping the byte after it), or the end of `data`.
fn literal_end(data: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    let mut at = open;
    while let Some(&byte) = data.get(at) {
        match byte {
            b'\\' => at += 1,
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return at;
                }
            }
            _ => {}
        }
        at += 1;
    }
    data.len()
}

/// Where a stream's data starts after its keyword: spaces, then one end of line.
fn data_start(pdf: &[u8], mut at: usize) -> usize {
    while matches!(pdf.get(at), Some(b' ' | b'\t')) {
        at += 1;
    }
    match (pdf.get(at), pdf.get(at + 1)) {
        (Some(b'\r'), Some(b'\n')) => at + 2,
        (Some(b'\r' | b'\n'), _) => at + 1,
        _ => at,
    }
}

/// The inflated bytes of `data` (what a decoder makes of it before any error, as the parser
/// keeps that too), or `None` when it is not zlib data.
fn inflate(data: &[u8], budget: &mut Budget) -> Result<Option<Vec<u8>>, Unreadable> {
    let header_ok = matches!(data, [cmf, flg, ..] if cmf & 0x0F == 8 && cmf >> 4 <= 7
        && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0);
    if !header_ok {
        return Ok(None);
    }
    let mut out = Vec::new();
    let cap = u64::try_from(budget.left).unwrap_or(u64::MAX).saturating_add(1);
    let _ = ZlibDecoder::new(data).take(cap).read_to_end(&mut out);
    budget.spend(out.len())?;
    Ok((!out.is_empty()).then_some(out))
}

/// Walks what the text extractor will draw: each page's content streams (a stream listed twice
/// counts twice) and every form each of them draws, each time it is drawn.
fn walk_drawing(doc: &Document, budget: &mut Budget, deadline: Deadline) -> Result<(), Unreadable> {
    let mut sizes = HashMap::new();
    for page in doc.get_pages().into_values() {
        deadline.check()?;
        let dict = doc.get_dictionary(page).map_err(|_| unparseable())?;
        let resources = inherited_resources(doc, dict)?;
        for content in doc.get_page_contents(page) {
            let size = *sizes
                .entry(content)
                .or_insert_with(|| stream_content(doc, content).map_or(0, |c| c.len()));
            budget.spend(size)?;
        }
        let content = doc.get_page_content(page).map_err(|_| unparseable())?;
        draw(doc, &content, resources, 0, budget)?;
    }
    Ok(())
}

/// A page's resources, from it or the nearest page-tree node above it that has them.
fn inherited_resources<'a>(
    doc: &'a Document,
    mut dict: &'a Dictionary,
) -> Result<Option<&'a Dictionary>, Unreadable> {
    for _ in 0..MAX_PAGE_TREE_DEPTH {
        if let Ok(resources) = dict.get(b"Resources") {
            return Ok(deref(doc, resources).as_dict().ok());
        }
        match dict.get(b"Parent").and_then(Object::as_reference) {
            Ok(parent) => dict = doc.get_dictionary(parent).map_err(|_| unparseable())?,
            Err(_) => return Ok(None),
        }
    }
    Err("it is a PDF whose page tree is too deep (or loops)".to_owned())
}

fn deref<'a>(doc: &'a Document, object: &'a Object) -> &'a Object {
    doc.dereference(object).map_or(object, |(_, target)| target)
}

/// A stream's data as the extractor reads it: inflated when it can be, else as stored.
fn stream_content(doc: &Document, id: ObjectId) -> Option<Vec<u8>> {
    let stream = doc.get_object(id).and_then(Object::as_stream).ok()?;
    Some(
        stream
            .decompressed_content()
            .unwrap_or_else(|_| stream.content.clone()),
    )
}

/// The forms one drawing draws (`Do`), each walked in turn with its own resources (or the
/// drawing's, as the extractor does when a form has none).
fn draw(
    doc: &Document,
    content: &[u8],
    resources: Option<&Dictionary>,
    depth: usize,
    budget: &mut Budget,
) -> Result<(), Unreadable> {
    if depth > MAX_FORM_DEPTH {
        return Err(format!(
            "it is a PDF that draws forms nested more than {MAX_FORM_DEPTH} deep (or in themselves)"
        ));
    }
    refuse_deep_nesting(content)?;
    if tokens(content) > MAX_TOKENS_PER_DRAWING {
        return Err(format!(
            "it is a PDF with a page or form of more than {MAX_TOKENS_PER_DRAWING} drawing instructions"
        ));
    }
    // What does not decode is the extractor's to refuse.
    let Ok(operations) = Content::decode(content).map(|c| c.operations) else {
        return Ok(());
    };
    let forms = resources
        .and_then(|r| r.get(b"XObject").ok())
        .and_then(|x| deref(doc, x).as_dict().ok());
    for operation in operations.iter().filter(|o| o.operator == "Do") {
        let Some(form) = operation
            .operands
            .first()
            .and_then(|name| name.as_name().ok())
            .and_then(|name| forms?.get(name).ok())
            .and_then(|form| deref(doc, form).as_stream().ok())
        else {
            continue;
        };
        let inner = form
            .decompressed_content()
            .unwrap_or_else(|_| form.content.clone());
        // Drawing even an empty form costs something, so a million of them are not free.
        budget.spend(inner.len().max(1))?;
        let own = form
            .dict
            .get(b"Resources")
            .ok()
            .and_then(|r| deref(doc, r).as_dict().ok());
        draw(doc, &inner, own.or(resources), depth + 1, budget)?;
    }
    Ok(())
}

/// The extractor's text output, failing every call once the deadline has passed: the extractor
/// hands back the first error it meets, so the reading stops at the next character or page.
struct Timed<'a> {
    inner: PlainTextOutput<&'a mut String>,
    deadline: Deadline,
}

impl Timed<'_> {
    fn in_time(&self) -> Result<(), OutputError> {
        if self.deadline.passed() {
            return Err(OutputError::FormatError(std::fmt::Error));
        }
        Ok(())
    }
}

impl OutputDev for Timed<'_> {
    fn begin_page(
        &mut self,
        page: u32,
        media_box: &MediaBox,
        art_box: Option<(f64, f64, f64, f64)>,
    ) -> Result<(), OutputError> {
        self.in_time()?;
        self.inner.begin_page(page, media_box, art_box)
    }

    fn end_page(&mut self) -> Result<(), OutputError> {
        self.in_time()?;
        self.inner.end_page()
    }

    fn output_character(
        &mut self,
        trm: &Transform,
        width: f64,
        spacing: f64,
        font_size: f64,
        char: &str,
    ) -> Result<(), OutputError> {
        self.in_time()?;
        self.inner.output_character(trm, width, spacing, font_size, char)
    }

    fn begin_word(&mut self) -> Result<(), OutputError> {
        self.in_time()?;
        self.inner.begin_word()
    }

    fn end_word(&mut self) -> Result<(), OutputError> {
        self.in_time()?;
        self.inner.end_word()
    }

    fn end_line(&mut self) -> Result<(), OutputError> {
        self.in_time()?;
        self.inner.end_line()
    }
}

/// About the objects a drawing decodes into: runs of regular bytes, and every delimiter (a name's
/// slash, a bracket) starts one, so a drawing written without spaces counts as many.
fn tokens(content: &[u8]) -> usize {
    const DELIMITERS: &[u8] = b"()<>[]{}/%";
    let mut count = 0;
    let mut after_break = true;
    for byte in content {
        let space = byte.is_ascii_whitespace() || *byte == 0;
        let delimiter = DELIMITERS.contains(byte);
        if !space && (after_break || delimiter) {
            count += 1;
        }
        after_break = space || delimiter;
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{FONT, pdf, pdf_of_pages, stream, zlib};

    /// One page (object 3) whose content is object 4, with `resources` and the objects after 4.
    fn one_page(contents: &str, resources: &str, content: Vec<u8>, more: Vec<Vec<u8>>) -> Vec<u8> {
        let mut objects = vec![
            b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
            format!("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources {resources} /Contents {contents} >>")
                .into_bytes(),
            content,
        ];
        objects.extend(more);
        pdf(&objects)
    }

    const TEXT: &[u8] = b"BT /F1 12 Tf 72 720 Td (Tide tables) Tj ET";

    fn small(max_expanded_bytes: usize) -> PdfLimits {
        PdfLimits {
            max_expanded_bytes,
            ..PdfLimits::default()
        }
    }

    fn refusal(pdf: &[u8], limits: PdfLimits) -> String {
        pdf_text(pdf, limits, minute()).expect_err("refused")
    }

    fn minute() -> Deadline {
        Deadline::after(Duration::from_secs(60))
    }

    #[test]
    fn a_file_nested_deeper_than_the_parser_can_go_is_refused_before_it() {
        // Unchecked, this file runs the reading thread out of stack: the process ends.
        let deep = format!("{}{}", "[".repeat(20_000), "]".repeat(20_000));
        let file = one_page("4 0 R", &format!("<< /Junk {deep} >>"), stream("", TEXT), vec![]);
        assert_eq!(
            refusal(&file, PdfLimits::default()),
            format!("it is a PDF with arrays or dictionaries nested more than {MAX_NESTING} deep")
        );
        let dicts = format!("{}{}", "<< /A ".repeat(5_000), ">>".repeat(5_000));
        let file = one_page("4 0 R", &dicts, stream("", TEXT), vec![]);
        assert!(refusal(&file, PdfLimits::default()).contains("nested more than"));
    }

    #[test]
    fn nesting_inside_compressed_drawings_and_object_streams_is_refused_too() {
        let deep = format!("{}{}", "[".repeat(20_000), "]".repeat(20_000));
        let drawing = format!("BT /F1 12 Tf 72 720 Td {deep} TJ ET");
        let file = one_page(
            "4 0 R",
            FONT,
            stream("/Filter /FlateDecode", &zlib(drawing.as_bytes())),
            vec![],
        );
        assert!(refusal(&file, PdfLimits::default()).contains("nested more than"));
        let objects = format!("5 0 {deep}");
        let packed = stream(
            "/Type /ObjStm /N 1 /First 4 /Filter /FlateDecode",
            &zlib(objects.as_bytes()),
        );
        let file = one_page("4 0 R", FONT, stream("", TEXT), vec![packed]);
        assert!(refusal(&file, PdfLimits::default()).contains("nested more than"));
    }

    #[test]
    fn brackets_in_strings_comments_and_other_streams_do_not_count() {
        let words = format!(
            "BT /F1 12 Tf 72 720 Td ({}Tide tables) Tj ET % {}",
            "[".repeat(500),
            "<<".repeat(500)
        );
        let file = one_page("4 0 R", FONT, stream("", words.as_bytes()), vec![]);
        assert!(
            pdf_text(&file, PdfLimits::default(), minute())
                .unwrap()
                .contains("Tide tables")
        );
        // Image data is bytes, not syntax: a flat region of the byte `[` is no nesting.
        let image = stream(
            "/Type /XObject /Subtype /Image /Width 100 /Height 100 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode",
            &zlib(&[b'['; 10_000]),
        );
        let file = one_page("4 0 R", FONT, stream("", TEXT), vec![image]);
        assert_eq!(
            pdf_text(&file, PdfLimits::default(), minute()).unwrap().trim(),
            "Tide tables"
        );
    }

    #[test]
    fn a_compressed_page_within_the_budget_reads() {
        let file = one_page("4 0 R", FONT, stream("/Filter /FlateDecode", &zlib(TEXT)), vec![]);
        assert_eq!(
            pdf_text(&file, PdfLimits::default(), minute()).unwrap().trim(),
            "Tide tables"
        );
    }

    #[test]
    fn a_stream_that_inflates_past_the_budget_is_refused() {
        let mut content = TEXT.to_vec();
        content.extend(std::iter::repeat_n(b' ', 1 << 20));
        let file = one_page(
            "4 0 R",
            FONT,
            stream("/Filter /FlateDecode", &zlib(&content)),
            vec![],
        );
        assert!(file.len() < 8 * 1024, "a small file: {} bytes", file.len());
        let why = refusal(&file, small(256 * 1024));
        assert_eq!(
            why,
            "it is a PDF whose content expands past the 256 KiB this server reads"
        );
        assert!(
            pdf_text(&file, small(4 << 20), minute()).is_ok(),
            "within a larger budget it reads"
        );
    }

    #[test]
    fn compression_inside_compression_is_counted_whatever_the_length_says() {
        let mut content = TEXT.to_vec();
        content.extend(std::iter::repeat_n(b' ', 1 << 20));
        let twice = zlib(&zlib(&content));
        // A length that covers only the start of the data does not hide the rest.
        let mut body = b"<< /Length 8 /Filter [/FlateDecode /FlateDecode] >>\nstream\n".to_vec();
        body.extend_from_slice(&twice);
        body.extend_from_slice(b"\nendstream");
        let file = one_page("4 0 R", FONT, body, vec![]);
        assert!(refusal(&file, small(512 * 1024)).contains("expands past"));
    }

    #[test]
    fn encryption_and_unbounded_filters_are_refused_however_their_names_are_spelled() {
        let lzw = one_page("4 0 R", FONT, stream("/Filter /LZW#44ecode", b"x"), vec![]);
        assert!(refusal(&lzw, PdfLimits::default()).contains("LZW or ASCII85"));
        let a85 = one_page(
            "4 0 R",
            FONT,
            stream("/Filter [/ASCII85Decode /FlateDecode]", b"x"),
            vec![],
        );
        assert!(refusal(&a85, PdfLimits::default()).contains("LZW or ASCII85"));
        let mut encrypted = one_page("4 0 R", FONT, stream("", TEXT), vec![]);
        encrypted.extend_from_slice(b"trailer\n<< /Encrypt 9 0 R >>\n");
        assert_eq!(
            refusal(&encrypted, PdfLimits::default()),
            "it is an encrypted PDF"
        );
    }

    #[test]
    fn a_form_that_draws_itself_is_refused_rather_than_overflowing_the_stack() {
        // The form has no resources of its own, so it draws with the page's, where it is `F`.
        let form = stream("/Type /XObject /Subtype /Form /BBox [0 0 10 10]", b"/F Do");
        let file = one_page(
            "4 0 R",
            "<< /XObject << /F 5 0 R >> >>",
            stream("", b"/F Do"),
            vec![form],
        );
        assert!(refusal(&file, PdfLimits::default()).contains("nested more than 8 deep"));
    }

    #[test]
    fn a_form_drawn_again_and_again_spends_the_budget_each_time() {
        let form = stream("/Type /XObject /Subtype /Form /BBox [0 0 10 10]", &[b' '; 4096]);
        let draws = "/F Do ".repeat(1000);
        let file = one_page(
            "4 0 R",
            "<< /XObject << /F 5 0 R >> >>",
            stream("", draws.as_bytes()),
            vec![form],
        );
        assert!(refusal(&file, small(1 << 20)).contains("expands past"));
    }

    #[test]
    fn a_content_listed_many_times_counts_each_time() {
        let contents = format!("[{}]", "4 0 R ".repeat(2000));
        let file = one_page(&contents, FONT, stream("", &[b' '; 4096]), vec![]);
        assert!(refusal(&file, small(1 << 20)).contains("expands past"));
    }

    #[test]
    fn a_drawing_of_too_many_instructions_is_refused() {
        let content = "0 ".repeat(MAX_TOKENS_PER_DRAWING + 1);
        let file = one_page("4 0 R", FONT, stream("", content.as_bytes()), vec![]);
        assert!(refusal(&file, PdfLimits::default()).contains("drawing instructions"));
        // Written without spaces, names count one by one all the same.
        let names = "/a".repeat(MAX_TOKENS_PER_DRAWING + 1);
        let file = one_page("4 0 R", FONT, stream("", names.as_bytes()), vec![]);
        assert!(refusal(&file, PdfLimits::default()).contains("drawing instructions"));
    }

    #[test]
    fn a_file_slow_to_draw_stops_at_the_deadline() {
        // Pages that all draw one small compressed stream of many short words: a few kilobytes
        // that take the extractor minutes.
        let words = format!("BT /F1 12 Tf 72 720 Td {}ET", "(ab) Tj 1 0 Td ".repeat(12_000));
        let file = pdf_of_pages(40, &zlib(words.as_bytes()));
        assert!(file.len() < 8 * 1024, "a small file: {} bytes", file.len());
        let deadline = Deadline::after(Duration::from_millis(300));
        assert_eq!(
            pdf_text(&file, PdfLimits::default(), deadline),
            Err("it took longer than 300 ms to read".to_owned())
        );
    }
}
