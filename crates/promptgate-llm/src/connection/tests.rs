//! The connections against real servers on loopback: TLS with the name checked and HTTP/1.1 chosen
//! whatever the server offers, connections kept, and a kept connection the server closed replaced.
//!
//! `testdata/cert.pem` is a self-signed certificate for `localhost` and `127.0.0.1` (its key beside
//! it), made for these tests with
//! `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 36500
//! -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1
//! -addext basicConstraints=critical,CA:FALSE`; it protects nothing.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

use super::{Http1Client, Route, connect_first, interleaved};

const CERT: &[u8] = include_bytes!("testdata/cert.pem");
const KEY: &[u8] = include_bytes!("testdata/key.pem");
const BODY: &[u8] = b"data: {\"ok\":true}\n\n";

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A client configuration that trusts the test certificate and offers both protocols, as the
/// platform's does.
fn client_tls() -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(CERT).unwrap()).unwrap();
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    config
}

/// An HTTPS server offering HTTP/2 first; it answers every request with [`BODY`] and notes each
/// connection's negotiated protocol.
async fn https_server(address: &str) -> (u16, Arc<Mutex<Vec<Option<Vec<u8>>>>>) {
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(CERT).unwrap()],
            PrivateKeyDer::from_pem_slice(KEY).unwrap(),
        )
        .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind((address, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let protocols = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&protocols);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let seen = Arc::clone(&seen);
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                seen.lock()
                    .unwrap()
                    .push(tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec));
                let answer = service_fn(|_request| async {
                    Ok::<_, Infallible>(http::Response::new(Full::new(Bytes::from_static(BODY))))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), answer)
                    .await;
            });
        }
    });
    (port, protocols)
}

fn request(authority: &str) -> http::Request<Full<Bytes>> {
    http::Request::post("/v1/chat/completions")
        .header(http::header::HOST, authority)
        .body(Full::new(Bytes::from_static(b"{}")))
        .unwrap()
}

async fn read_to_end(client: &Arc<Http1Client>, authority: &str) -> Vec<u8> {
    let response = client.send(request(authority)).await.unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let mut read = Vec::new();
    while let Some(piece) = body.next().await {
        read.extend_from_slice(&piece.unwrap());
    }
    read
}

#[tokio::test]
async fn tls_checks_the_name_speaks_http1_and_keeps_the_connection() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (port, protocols) = https_server("127.0.0.1").await;
    let url = url::Url::parse(&format!("https://localhost:{port}/v1/chat/completions")).unwrap();
    let client = Arc::new(Http1Client::new(&url, Some(client_tls()), Duration::from_secs(5)).unwrap());
    let authority = Http1Client::authority(&url);
    for _ in 0..3 {
        assert_eq!(read_to_end(&client, &authority).await, BODY);
    }
    assert_eq!(*protocols.lock().unwrap(), vec![Some(b"http/1.1".to_vec())]);

    // The certificate names localhost and 127.0.0.1 only.
    let (port, _) = https_server("127.0.0.2").await;
    let wrong = url::Url::parse(&format!("https://127.0.0.2:{port}/")).unwrap();
    let client = Arc::new(Http1Client::new(&wrong, Some(client_tls()), Duration::from_secs(5)).unwrap());
    let Err(refused) = client.send(request("127.0.0.2")).await else {
        panic!("a certificate for other names was accepted");
    };
    assert!(refused.to_string().contains("TLS"), "{refused}");
}

#[tokio::test]
async fn a_kept_connection_the_server_closed_is_replaced_before_the_request_goes_out() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let connections = Arc::new(Mutex::new(0));
    let counted = Arc::clone(&connections);
    // Answers one request per connection, then closes it without having said so.
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            *counted.lock().unwrap() += 1;
            tokio::spawn(async move {
                let mut head = [0u8; 4096];
                let _ = tokio::io::AsyncReadExt::read(&mut tcp, &mut head).await;
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
                    BODY.len()
                );
                let _ = tcp.write_all(answer.as_bytes()).await;
                let _ = tcp.write_all(BODY).await;
                // Later, as a server's idle timeout would.
                tokio::time::sleep(Duration::from_millis(50)).await;
                let _ = tcp.shutdown().await;
            });
        }
    });
    let url = url::Url::parse(&format!("http://127.0.0.1:{port}/v1/chat/completions")).unwrap();
    let client = Arc::new(Http1Client::new(&url, None, Duration::from_secs(5)).unwrap());
    let authority = Http1Client::authority(&url);
    assert_eq!(read_to_end(&client, &authority).await, BODY);
    assert_eq!(client.idle.lock().unwrap().len(), 1, "the connection was kept");
    // Time for the server's close to reach this side.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(read_to_end(&client, &authority).await, BODY);
    assert_eq!(*connections.lock().unwrap(), 2);
}

#[test]
fn addresses_are_tried_one_family_then_the_other() {
    let addr = |text: &str| text.parse::<std::net::SocketAddr>().unwrap();
    let resolved = vec![
        addr("[2001:db8::1]:443"),
        addr("[2001:db8::2]:443"),
        addr("192.0.2.1:443"),
        addr("[2001:db8::3]:443"),
    ];
    assert_eq!(
        interleaved(resolved),
        vec![
            addr("[2001:db8::1]:443"),
            addr("192.0.2.1:443"),
            addr("[2001:db8::2]:443"),
            addr("[2001:db8::3]:443"),
        ]
    );
}

#[tokio::test]
async fn an_address_that_drops_connections_does_not_hold_up_the_next() {
    // 127.0.0.1 never answers: a listener that never accepts, its backlog full, drops further
    // attempts as a route that goes nowhere does (the kernel retries such an attempt for minutes).
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let silent = socket.listen(0).unwrap();
    let port = silent.local_addr().unwrap().port();
    let mut fillers = Vec::new();
    while let Ok(Ok(stream)) = tokio::time::timeout(
        Duration::from_millis(200),
        tokio::net::TcpStream::connect(("127.0.0.1", port)),
    )
    .await
    {
        fillers.push(stream);
    }
    let answering = TcpListener::bind(("127.0.0.2", port)).await.unwrap();
    let addrs = vec![
        format!("127.0.0.1:{port}").parse().unwrap(),
        format!("127.0.0.2:{port}").parse().unwrap(),
    ];
    let connected = tokio::time::timeout(Duration::from_secs(5), connect_first(addrs))
        .await
        .expect("the second address was tried while the first hung")
        .unwrap();
    assert_eq!(connected.peer_addr().unwrap(), answering.local_addr().unwrap());
}

#[tokio::test]
async fn an_address_that_refuses_hands_over_to_the_next_and_the_last_failure_is_told() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let only_refusals = vec![format!("127.0.0.1:{port}").parse().unwrap()];
    let error = connect_first(only_refusals).await.unwrap_err();
    assert!(
        error.to_string().contains(&format!("127.0.0.1:{port}")),
        "{error}"
    );

    let answering = TcpListener::bind("127.0.0.2:0").await.unwrap();
    let open = answering.local_addr().unwrap();
    let addrs = vec![format!("127.0.0.1:{port}").parse().unwrap(), open];
    let connected = connect_first(addrs).await.unwrap();
    assert_eq!(connected.peer_addr().unwrap(), open);
}

#[test]
fn a_proxied_route_is_built_in_a_process_that_chose_no_tls_provider() {
    // Each test runs in a process of its own: nothing installed a provider before this.
    let url = url::Url::parse("http://provider.invalid/v1/chat/completions").unwrap();
    let route = Route::new(&url, None, Duration::from_secs(1), Some("http://127.0.0.1:9"));
    assert!(matches!(route, Ok(Route::Proxied { .. })));
}
