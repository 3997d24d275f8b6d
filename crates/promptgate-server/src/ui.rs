//! Serves the built web app (`web/dist`) at `/`: files as they are, and `index.html` for any other
//! page path so the app's own routes survive a reload. API paths never reach this: an unknown
//! `/v1/...` path still answers the JSON 404.

use std::path::{Component, Path, PathBuf};

use axum::body::Body;
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

/// Where the app is built to, relative to the working directory, when the config names no `dir`.
pub const DEFAULT_DIR: &str = "web/dist";

/// The `[ui]` section.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UiConfig {
    /// The built app; default `web/dist` when it exists. An empty string turns the app off.
    pub dir: Option<String>,
}

impl UiConfig {
    /// The folder to serve, when there is a built app in it.
    pub fn root(&self) -> Option<PathBuf> {
        let dir = PathBuf::from(self.dir.as_deref().unwrap_or(DEFAULT_DIR));
        (!dir.as_os_str().is_empty() && dir.join("index.html").is_file()).then_some(dir)
    }
}

/// Paths that belong to the API and its operational routes: never answered with the app.
fn is_api_path(path: &str) -> bool {
    ["/v1", "/healthz", "/readyz", "/metrics", "/openapi.json"]
        .iter()
        .any(|p| path == *p || path.strip_prefix(p).is_some_and(|rest| rest.starts_with('/')))
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// The file under `root` a request path names, if the path is plain (no `..`, no drive prefixes).
fn file_for(root: &Path, path: &str) -> Option<PathBuf> {
    let relative = Path::new(path.trim_start_matches('/'));
    if !relative.components().all(|c| matches!(c, Component::Normal(_))) || path.contains('\\') {
        return None;
    }
    let file = root.join(relative);
    file.is_file().then_some(file)
}

/// What the app's page may load: its own files, API calls to this origin, artifacts in frames from
/// this origin (or `artifact_origin`, where signed artifact links point), images from attachments,
/// and the favicons of cited sites (https only; the app loads them without a referrer). Answers are
/// Markdown rendered without raw HTML or images; this is the second line should that ever slip.
fn page_csp(artifact_origin: Option<&str>) -> String {
    let frames = artifact_origin.map_or_else(String::new, |o| format!(" {}", o.trim_end_matches('/')));
    format!(
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob: https:; \
         font-src 'self' data:; connect-src 'self'; frame-src 'self'{frames}; object-src 'none'; \
         base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
}

/// Answers a GET for a page or asset of the app, or `None` when the request is not the app's.
pub async fn serve(
    root: &Path,
    method: &Method,
    uri: &Uri,
    artifact_origin: Option<&str>,
) -> Option<Response> {
    if (method != Method::GET && method != Method::HEAD) || is_api_path(uri.path()) {
        return None;
    }
    let (file, is_asset) = match file_for(root, uri.path()) {
        Some(file) => (file, uri.path().starts_with("/assets/")),
        None => (root.join("index.html"), false),
    };
    let bytes = match tokio::fs::read(&file).await {
        Ok(bytes) => bytes,
        Err(e) => {
            tracing::warn!(file = %file.display(), error = %e, "cannot read a web app file");
            return Some(StatusCode::NOT_FOUND.into_response());
        }
    };
    let mut res = Response::new(if method == Method::HEAD {
        Body::empty()
    } else {
        Body::from(bytes)
    });
    let headers = res.headers_mut();
    let kind = content_type(&file);
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    if kind.starts_with("text/html")
        && let Ok(csp) = HeaderValue::from_str(&page_csp(artifact_origin))
    {
        headers.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // Built assets carry a content hash in their names; the page itself must be fetched fresh so a
    // new build is picked up.
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(if is_asset {
            "public, max-age=31536000, immutable"
        } else {
            "no-cache"
        }),
    );
    Some(res)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_paths_are_never_the_apps() {
        for path in [
            "/v1",
            "/v1/nope",
            "/healthz",
            "/readyz",
            "/metrics",
            "/openapi.json",
        ] {
            assert!(is_api_path(path), "{path}");
        }
        for path in ["/", "/threads/abc", "/v1x", "/assets/index.js", "/healthzz"] {
            assert!(!is_api_path(path), "{path}");
        }
    }

    #[test]
    fn paths_that_climb_out_are_refused() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        assert!(file_for(root, "/Cargo.toml").is_some());
        assert!(file_for(root, "/../../Cargo.toml").is_none());
        assert!(file_for(root, "/src/../Cargo.toml").is_none());
    }
}
