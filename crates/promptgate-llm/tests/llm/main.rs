//! The llm crate's integration tests, one binary: the OpenAI-compatible and Anthropic clients against a
//! scripted upstream on loopback, golden transcripts of both wire formats, the connection policy and the
//! offline demo model.

mod anthropic;
mod common;
mod connection;
mod demo;
mod golden;
mod request_bodies;
mod scripted;
mod upstream;
