//! Executors behind the tools a send offers. Each executor is built per send with what it needs
//! (store handle, user id, HTTP client, the turn's source registry), so a call takes only its arguments.

pub mod builtin;
pub mod google;
pub mod microsoft;
pub mod oauth;
pub mod web;
