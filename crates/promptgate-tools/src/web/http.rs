//! HTTP plumbing shared by the search backends and the fetcher.

use reqwest::Response;
use url::Url;

/// A response body, read up to a cap.
pub(crate) struct CappedBody {
    pub bytes: Vec<u8>,
    /// The body went on past the cap; `bytes` holds only its beginning.
    pub cut_at_cap: bool,
}

/// Reads a body chunk by chunk and stops at `cap` bytes, so a huge or endless body never sits
/// in memory whole.
pub(crate) async fn read_capped(mut response: Response, cap: usize) -> Result<CappedBody, reqwest::Error> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = cap - bytes.len();
        if chunk.len() > room {
            bytes.extend_from_slice(&chunk[..room]);
            return Ok(CappedBody {
                bytes,
                cut_at_cap: true,
            });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(CappedBody {
        bytes,
        cut_at_cap: false,
    })
}

/// A reason a user can act on, without the request URL (it may carry a query or credentials).
pub(crate) fn describe_transport_error(error: &reqwest::Error, peer: &str) -> String {
    if error.is_timeout() {
        format!("{peer} did not answer in time (timed out)")
    } else if let Some(tls) = tls_failure(error) {
        format!("could not set up a secure connection to {peer} ({tls})")
    } else if error.is_connect() {
        format!("could not connect to {peer}")
    } else if error.is_body() || error.is_decode() {
        format!("the connection to {peer} broke while reading the response")
    } else {
        format!("the request to {peer} failed")
    }
}

/// The TLS error under a transport error, if any. TLS errors travel inside (nested) `io::Error`s,
/// whose `source()` skips the wrapped error itself, so those levels are unwrapped by hand.
fn tls_failure(error: &reqwest::Error) -> Option<&rustls::Error> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = current {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        current = match e.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()) {
            Some(wrapped) => Some(wrapped),
            None => e.source(),
        };
    }
    None
}

/// `scheme://host[:port]/favicon.ico`, where browsers look when a page names no icon.
pub(crate) fn default_favicon(page: &Url) -> Option<String> {
    page.host_str()?;
    page.join("/favicon.ico").ok().map(String::from)
}

/// Only web pages are useful to cite and to fetch.
pub(crate) fn is_web_url(url: &Url) -> bool {
    matches!(url.scheme(), "http" | "https") && url.host_str().is_some()
}
