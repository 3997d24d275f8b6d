//! Web tools: search through a configured backend, and a fetcher that reads public pages only.
//!
//! Both produce plain results (`SearchHit`, `FetchedPage`); numbering them as sources for `[N]`
//! citations is the turn's job.
//!
//! Configuration, as the server's config file would carry it:
//!
//! ```toml
//! [search]                      # a SearchConfig
//! kind = "searxng"              # or "brave", with api_key = "..." (base_url defaults to Brave's)
//! base_url = "http://searxng:8080"
//!
//! [fetch]                       # a FetchPolicy; every key is optional
//! allow_loopback = false
//! allow_private = false         # RFC 1918, CGNAT and ULA; link-local stays refused
//! allowed_addrs = ["10.1.2.3:443"]
//! max_redirects = 5
//! max_body_bytes = 5242880
//! timeout_secs = 15
//! user_agent = "promptgate (fetch_content)"
//! ```

pub mod fetch;
mod http;
pub mod search;

pub use fetch::{FetchPolicy, FetchedPage, HostResolver, PageMeta, SafeFetcher, SystemResolver};
pub use search::{BraveSearch, BundledSearch, SearchBackend, SearchConfig, SearchHit, SearxNg};
