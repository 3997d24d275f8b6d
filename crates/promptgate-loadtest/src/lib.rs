//! An open-loop load driver for promptgate: a scripted upstream on loopback, the gateway as a child
//! process in front of it, and the same request rate sent direct and through the gateway, back to back.

pub mod bare_proxy;
pub mod bare_refuser;
pub mod error;
pub mod gateway;
pub mod load;
pub mod overload;
pub mod report;
pub mod scale;
pub mod scenario;
pub mod stats;
pub mod steal;
pub mod wire;

pub use error::LoadError;

/// Installs the one TLS crypto provider reqwest is built to expect.
pub fn init_tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
