//! OneDrive search and file content through Graph.

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{GraphClient, ONEDRIVE};
use crate::oauth::http::{array_field, str_field};
use crate::oauth::text::truncate_marked;
use promptgate_core::tools::ToolError;

const DEFAULT_MAX_RESULTS: u32 = 20;
const MAX_RESULTS_CAP: u32 = 50;
/// Text handed to the model is cut here.
const CONTENT_CHAR_LIMIT: usize = 16_000;
/// Enough bytes for the character limit even in 4-byte UTF-8; the rest of a big file is not read.
const CONTENT_BYTE_LIMIT: usize = 4 * CONTENT_CHAR_LIMIT + 4;
const ITEM_FIELDS: &str =
    "id,name,size,file,folder,createdDateTime,lastModifiedDateTime,webUrl,parentReference";

impl GraphClient {
    /// Files matching `query` anywhere in the user's drive, as `{files, total_count, has_more}`.
    pub async fn search_onedrive(&self, query: &str, max_results: Option<u32>) -> Result<Value, ToolError> {
        let query = query.trim();
        if query.is_empty() {
            return Err(ToolError::InvalidArguments(
                "the search query is empty".to_owned(),
            ));
        }
        let top = max_results
            .unwrap_or(DEFAULT_MAX_RESULTS)
            .clamp(1, MAX_RESULTS_CAP)
            .to_string();
        // OData string literals escape a quote by doubling it.
        let search = format!("search(q='{}')", query.replace('\'', "''"));
        let page = self
            .get_json(
                ONEDRIVE,
                &["me", "drive", "root", &search],
                &[("$top", &top), ("$select", ITEM_FIELDS)],
            )
            .await?
            .json(ONEDRIVE)?;
        let files: Vec<Value> = array_field(&page, "value").iter().map(file_summary).collect();
        let count = files.len() as u64;
        let total_count = page.get("@odata.count").and_then(Value::as_u64).unwrap_or(count);
        let has_more = page.get("@odata.nextLink").is_some() || total_count > count;
        Ok(json!({ "files": files, "total_count": total_count, "has_more": has_more }))
    }

    /// The text of a file. Files that are not text, or cannot be reached, come back with
    /// `content: null`, `extraction_failed: true` and the reason, so the model can explain it.
    pub async fn get_onedrive_file_content(&self, file_id: &str) -> Result<Value, ToolError> {
        let file_id = file_id.trim();
        if file_id.is_empty() {
            return Err(ToolError::InvalidArguments("the file id is empty".to_owned()));
        }
        let reply = self
            .get_json(
                ONEDRIVE,
                &["me", "drive", "items", file_id],
                &[("$select", ITEM_FIELDS)],
            )
            .await?;
        if let Some(reason) = unreachable_reason(reply.status) {
            return Ok(failure(file_id, reason, None));
        }
        let item = reply.json(ONEDRIVE)?;
        let name = str_field(&item, "name");
        let mime_type = item
            .get("file")
            .map(|f| str_field(f, "mimeType"))
            .unwrap_or_default();
        let category = classify(mime_type, name, item.get("folder").is_some());
        if category != FileCategory::Text {
            let mut result = failure(file_id, "unsupported_type", Some(category.as_str()));
            result["name"] = json!(name);
            result["mime_type"] = json!(mime_type);
            return Ok(result);
        }
        let reply = self
            .get(
                ONEDRIVE,
                &["me", "drive", "items", file_id, "content"],
                &[],
                CONTENT_BYTE_LIMIT,
            )
            .await?;
        if let Some(reason) = unreachable_reason(reply.status) {
            return Ok(failure(file_id, reason, None));
        }
        if !reply.status.is_success() {
            return Err(crate::oauth::http::status_error(
                ONEDRIVE,
                reply.status,
                &reply.body,
            ));
        }
        let text = String::from_utf8_lossy(&reply.body);
        let (content, cut) = truncate_marked(&text, CONTENT_CHAR_LIMIT);
        Ok(json!({
            "file_id": file_id,
            "name": name,
            // OneDrive's own type is cleaner than the download's header (which carries a charset).
            "mime_type": if mime_type.is_empty() {
                reply.content_type.as_deref().map_or("", |ct| ct.split(';').next().unwrap_or(ct).trim())
            } else {
                mime_type
            },
            "size_bytes": item.get("size").and_then(Value::as_u64).unwrap_or(0),
            "content": content,
            "isTruncated": cut || reply.clipped,
            "extraction_failed": false,
        }))
    }
}

fn unreachable_reason(status: StatusCode) -> Option<&'static str> {
    match status {
        StatusCode::FORBIDDEN => Some("access_denied"),
        StatusCode::NOT_FOUND => Some("not_found"),
        _ => None,
    }
}

fn failure(file_id: &str, reason: &str, category: Option<&str>) -> Value {
    let mut result = json!({
        "file_id": file_id,
        "content": null,
        "extraction_failed": true,
        "failure_reason": reason,
    });
    if let Some(category) = category {
        result["file_category"] = json!(category);
    }
    result
}

fn file_summary(item: &Value) -> Value {
    let name = str_field(item, "name");
    let parent = item
        .get("parentReference")
        .map(|p| str_field(p, "path"))
        .unwrap_or_default();
    // Graph paths look like `/drive/root:/Documents`; users think of `/Documents`.
    let folder = parent
        .split_once("root:")
        .map_or(parent, |(_, rest)| rest)
        .trim_end_matches('/');
    json!({
        "id": str_field(item, "id"),
        "name": name,
        "mime_type": item.get("file").map(|f| str_field(f, "mimeType")),
        "size_bytes": item.get("size").and_then(Value::as_u64).unwrap_or(0),
        "created_time": str_field(item, "createdDateTime"),
        "modified_time": str_field(item, "lastModifiedDateTime"),
        "web_url": str_field(item, "webUrl"),
        "is_folder": item.get("folder").is_some(),
        "path": format!("{folder}/{name}"),
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FileCategory {
    Text,
    Pdf,
    Image,
    Video,
    Audio,
    Office,
    Binary,
    Unknown,
}

impl FileCategory {
    fn as_str(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Pdf => "pdf",
            Self::Image => "image",
            Self::Video => "video",
            Self::Audio => "audio",
            Self::Office => "office",
            Self::Binary => "binary",
            Self::Unknown => "unknown",
        }
    }
}

const TEXT_EXTENSIONS: &[&str] = &[
    "txt", "md", "markdown", "csv", "tsv", "json", "xml", "yaml", "yml", "toml", "ini", "log", "html", "htm",
    "css", "js", "ts", "py", "rs", "go", "java", "c", "h", "cpp", "sh", "sql", "rtf", "srt", "vtt",
];
const OFFICE_EXTENSIONS: &[&str] = &[
    "doc", "docx", "xls", "xlsx", "ppt", "pptx", "odt", "ods", "odp", "one", "vsdx",
];
const BINARY_EXTENSIONS: &[&str] = &["zip", "gz", "tar", "7z", "rar", "exe", "dll", "bin", "iso", "dmg"];

/// Decides from the MIME type first and the extension second, since OneDrive often reports
/// `application/octet-stream` for files whose extension says exactly what they are.
fn classify(mime_type: &str, name: &str, is_folder: bool) -> FileCategory {
    if is_folder {
        return FileCategory::Unknown;
    }
    let mime = mime_type.to_ascii_lowercase();
    let ext = name
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase())
        .unwrap_or_default();
    let textual_mime = mime.starts_with("text/")
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
        || [
            "application/json",
            "application/xml",
            "application/javascript",
            "application/x-yaml",
            "application/yaml",
            "application/x-sh",
            "application/sql",
            "application/rtf",
        ]
        .contains(&mime.as_str());
    if textual_mime {
        return FileCategory::Text;
    }
    if mime == "application/pdf" || ext == "pdf" {
        return FileCategory::Pdf;
    }
    if mime.starts_with("image/") {
        return FileCategory::Image;
    }
    if mime.starts_with("video/") {
        return FileCategory::Video;
    }
    if mime.starts_with("audio/") {
        return FileCategory::Audio;
    }
    if mime.contains("officedocument")
        || mime.contains("opendocument")
        || mime.contains("ms-")
        || mime == "application/msword"
        || OFFICE_EXTENSIONS.contains(&ext.as_str())
    {
        return FileCategory::Office;
    }
    if TEXT_EXTENSIONS.contains(&ext.as_str()) {
        return FileCategory::Text;
    }
    if ["jpg", "jpeg", "png", "gif", "webp", "heic", "bmp", "svg", "tiff"].contains(&ext.as_str()) {
        return FileCategory::Image;
    }
    if ["mp4", "mov", "mkv", "avi", "webm"].contains(&ext.as_str()) {
        return FileCategory::Video;
    }
    if ["mp3", "wav", "m4a", "flac", "ogg", "aac"].contains(&ext.as_str()) {
        return FileCategory::Audio;
    }
    if mime.starts_with("application/") || BINARY_EXTENSIONS.contains(&ext.as_str()) {
        return FileCategory::Binary;
    }
    FileCategory::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_prefers_mime_then_extension() {
        assert_eq!(classify("text/plain", "notes.txt", false), FileCategory::Text);
        assert_eq!(
            classify("application/octet-stream", "notes.md", false),
            FileCategory::Text
        );
        assert_eq!(classify("application/pdf", "a.pdf", false), FileCategory::Pdf);
        assert_eq!(
            classify(
                "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
                "a.docx",
                false
            ),
            FileCategory::Office
        );
        assert_eq!(classify("image/png", "a.png", false), FileCategory::Image);
        assert_eq!(classify("application/zip", "a.zip", false), FileCategory::Binary);
        assert_eq!(classify("", "README", false), FileCategory::Unknown);
        assert_eq!(classify("", "Docs", true), FileCategory::Unknown);
    }
}
