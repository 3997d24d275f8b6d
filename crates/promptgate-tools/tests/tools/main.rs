//! The tools crate's integration tests, one binary: every executor against real parts on loopback (web
//! search and fetch, the Google and Microsoft APIs, OAuth) and the built-in tools on both store backends.

mod builtin;
mod google_calendar;
mod google_drafts;
mod google_gmail;
mod microsoft_graph;
mod oauth_flow;
mod support;
mod web_fetch_content;
mod web_fetch_guard;
mod web_fetch_ssrf;
mod web_search;
mod web_support;
