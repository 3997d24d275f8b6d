//! Web tools: search through a configured backend, and a fetcher that reads public pages only.
//!
//! Both produce plain results (`SearchHit`, `FetchedPage`); numbering them as sources for `[N]`
//! citations is the turn's job.

pub mod fetch;
mod http;
pub mod search;

pub use fetch::{FetchPolicy, FetchedPage, HostResolver, PageMeta, SafeFetcher, SystemResolver};
pub use search::{BraveSearch, SearchBackend, SearchConfig, SearchHit, SearxNg};
