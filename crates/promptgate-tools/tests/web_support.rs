//! Shared by the web tests: TLS provider set-up and a real HTTP server on loopback.
#![allow(dead_code, clippy::panic)]

use std::net::SocketAddr;

use axum::Router;

pub fn init() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Serves `app` on 127.0.0.1 at a free port until the test's runtime ends.
pub async fn serve(app: Router) -> SocketAddr {
    init();
    let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
        Ok(listener) => listener,
        Err(e) => panic!("cannot bind a loopback port: {e}"),
    };
    let addr = match listener.local_addr() {
        Ok(addr) => addr,
        Err(e) => panic!("no local address: {e}"),
    };
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}
