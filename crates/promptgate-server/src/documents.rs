//! `[documents]`: how attached files are read for the model (PDFs above all): how large a file,
//! how far its content may expand, how long one read may take, and how many run at once.

use serde::Deserialize;

use promptgate_service::deployment::{DocumentReader, DocumentSettings, PdfLimits};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DocumentsConfig {
    /// A larger PDF is not read.
    pub max_pdf_bytes: usize,
    /// What a PDF's compressed streams may inflate to, plus what its pages draw, in all.
    pub max_expanded_bytes: usize,
    /// One file's reading, at most.
    pub read_timeout_ms: u64,
    /// Files read at once on this server; one user's files take at most all but one of them.
    pub threads: usize,
    /// Files whose text (or why it could not be read) is kept for later sends.
    pub kept_files: usize,
}

impl Default for DocumentsConfig {
    fn default() -> Self {
        let settings = DocumentSettings::default();
        Self {
            max_pdf_bytes: settings.pdf.max_bytes,
            max_expanded_bytes: settings.pdf.max_expanded_bytes,
            read_timeout_ms: u64::try_from(settings.read_timeout.as_millis()).unwrap_or(u64::MAX),
            threads: settings.threads,
            kept_files: settings.kept,
        }
    }
}

impl DocumentsConfig {
    /// The server's reader of attached files.
    pub fn reader(&self) -> DocumentReader {
        DocumentReader::new(DocumentSettings {
            pdf: PdfLimits {
                max_bytes: self.max_pdf_bytes,
                max_expanded_bytes: self.max_expanded_bytes,
            },
            read_timeout: std::time::Duration::from_millis(self.read_timeout_ms),
            threads: self.threads,
            kept: self.kept_files,
        })
    }

    /// The bounds that must be positive, by key.
    pub(crate) fn positive(&self) -> [(&'static str, u64); 5] {
        let size = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        [
            ("documents.max_pdf_bytes", size(self.max_pdf_bytes)),
            ("documents.max_expanded_bytes", size(self.max_expanded_bytes)),
            ("documents.read_timeout_ms", self.read_timeout_ms),
            ("documents.threads", size(self.threads)),
            ("documents.kept_files", size(self.kept_files)),
        ]
    }
}
