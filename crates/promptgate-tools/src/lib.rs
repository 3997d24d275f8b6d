//! Executors behind the tools a send offers. Each executor is built per send with what it needs
//! (storage handle, user id, HTTP client, the turn's source registry), so a call takes only its arguments.
//!
//! Depends on core (and the outbound HTTP guard) only. What the tools keep (tasks, artifacts, sealed
//! integration tokens) and search (project chats) goes through the traits of
//! `promptgate_core::storage`, which the store implements; the service hands the store in as
//! `Arc<dyn …>`. [`oauth::TokenSealer`] in turn implements core's `SecretBox`, the cipher the
//! store seals MCP secrets with.

pub mod builtin;
pub mod google;
pub mod microsoft;
pub mod oauth;
pub mod web;
