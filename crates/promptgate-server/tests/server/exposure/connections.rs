//! Connection limits on the server's own accept loop: slow heads, idle keep-alives, connections that
//! never ask, stalled bodies, the cap on open connections (idle ones make room, busy ones do not),
//! streams that outlive all of those, and draining on shutdown.

use std::net::SocketAddr;
use std::time::Duration;

use promptgate_llm::scripted::{Script, ScriptedUpstream, Step, content_chunk, role_chunk, text};
use promptgate_server::config::{AuthMode, Config};
use promptgate_server::listen::{ConnectionLimits, serve_connections};
use promptgate_store::testing::TestDb;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use super::{Raw, parse};
use crate::common::{init, parse_sse, scripted_config, test_config, use_chat_body};

/// A generous bound on waits that should end, so a broken server fails the test instead of hanging it.
const HANG_GUARD: Duration = Duration::from_secs(60);

struct Served {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    _db: TestDb,
}

async fn serve(config: Config, limits: ConnectionLimits) -> Served {
    init();
    let db = TestDb::sqlite().await;
    // The config names the test's own database, so a key the server keeps beside it lands there.
    let mut config = config;
    config.database_url = db.url().to_owned();
    let state = promptgate_server::cli::prepare_with(
        config,
        promptgate_service::Database::from_store(db.store().clone()),
    )
    .await
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let app = promptgate_server::app::build(state);
    let task = tokio::spawn(serve_connections(listener, app, limits, async {
        let _ = stopped.await;
    }));
    Served {
        addr,
        stop: Some(stop),
        task,
        _db: db,
    }
}

/// Idle connections park half-way to their idle timeout, so the tests that wait for that timeout
/// also see a parked connection closed. A connection that never asks gets the idle timeout too.
fn limits(header_read: u64, idle: u64, max_connections: usize) -> ConnectionLimits {
    ConnectionLimits {
        header_read_timeout: Duration::from_secs(header_read),
        idle_timeout: Duration::from_secs(idle),
        first_request_timeout: Duration::from_secs(idle),
        max_connections,
        park_after: Duration::from_secs(idle) / 2,
    }
}

/// Waits until the server closes the socket (end of stream or reset), reading whatever it sends.
async fn closed_by_server(tcp: &mut TcpStream) -> Vec<u8> {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(HANG_GUARD, tcp.read(&mut buf)).await {
            Err(_) => panic!("the server kept the connection open; it sent {seen:?}"),
            Ok(Ok(0) | Err(_)) => return seen,
            Ok(Ok(n)) => seen.extend_from_slice(&buf[..n]),
        }
    }
}

/// One keep-alive request on an open connection; reads exactly one response.
async fn roundtrip(tcp: &mut TcpStream, path: &str) -> Raw {
    roundtrip_rest(tcp, &format!("GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")).await
}

/// Sends `rest` (what remains of a request) and reads exactly one response.
async fn roundtrip_rest(tcp: &mut TcpStream, rest: &str) -> Raw {
    tcp.write_all(rest.as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = tokio::time::timeout(HANG_GUARD, tcp.read(&mut buf))
            .await
            .expect("no answer")
            .unwrap();
        assert!(n > 0, "the connection closed mid-answer: {bytes:?}");
        bytes.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&bytes);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().to_owned())
                })
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0);
            if body.len() >= length {
                return parse(&bytes);
            }
        }
    }
}

/// A keep-alive connection whose first request has been answered, so the idle timeout is the
/// clock it runs on.
async fn asked_once(addr: SocketAddr) -> TcpStream {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    assert_eq!(roundtrip(&mut tcp, "/healthz").await.status, 200);
    tcp
}

/// [`serve`] in front of the scripted model, for tests whose sends reach a provider.
async fn serve_scripted(limits: ConnectionLimits) -> (Served, ScriptedUpstream) {
    init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let config = scripted_config(AuthMode::SingleUser, &upstream.base_url());
    (serve(config, limits).await, upstream)
}

async fn healthz(http: &reqwest::Client, addr: SocketAddr) -> u16 {
    http.get(format!("http://{addr}/healthz"))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn idle_half_sent_and_stalled_connections_are_closed_while_healthz_keeps_answering() {
    let mut config = test_config(AuthMode::SingleUser);
    config.server.body_timeout_secs = 1;
    let server = serve(config, limits(1, 1, 64)).await;
    let addr = server.addr;

    let mut silent = TcpStream::connect(addr).await.unwrap();
    let mut half_head = TcpStream::connect(addr).await.unwrap();
    half_head
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nx-slow: ")
        .await
        .unwrap();
    let mut kept_alive = asked_once(addr).await;
    let mut stalled_body = TcpStream::connect(addr).await.unwrap();
    stalled_body
        .write_all(
            b"POST /v1/threads HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
              content-length: 100\r\n\r\n{\"id\":",
        )
        .await
        .unwrap();

    // Fresh connections are served all along.
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    for _ in 0..5 {
        assert_eq!(healthz(&http, addr).await, 200);
    }

    assert!(closed_by_server(&mut silent).await.is_empty());
    assert!(
        closed_by_server(&mut half_head).await.is_empty(),
        "a half-sent head gets no answer"
    );
    assert!(closed_by_server(&mut kept_alive).await.is_empty());
    let answer = parse(&closed_by_server(&mut stalled_body).await);
    assert_eq!(answer.status, 408, "{answer:?}");
    assert_eq!(answer.code(), "request_timeout");
    assert_eq!(healthz(&http, addr).await, 200);
}

#[tokio::test]
async fn a_body_trickling_into_a_streaming_route_gets_408_at_the_body_deadline() {
    let mut config = test_config(AuthMode::SingleUser);
    config.server.body_timeout_secs = 2;
    config.server.body_deadline_secs = 2;
    let server = serve(config, limits(5, 5, 64)).await;
    for route in ["/v1/chat", "/v1/chat/completions"] {
        let mut tcp = TcpStream::connect(server.addr).await.unwrap();
        let head = format!(
            "POST {route} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
             content-length: 400\r\n\r\n"
        );
        tcp.write_all(head.as_bytes()).await.unwrap();
        // A byte every 200 ms never stalls for the stall limit; the body would take 80 s.
        let mut seen = Vec::new();
        let mut buf = [0u8; 1024];
        for _ in 0..300 {
            if tcp.write_all(b" ").await.is_err() {
                break;
            }
            match tokio::time::timeout(Duration::from_millis(200), tcp.read(&mut buf)).await {
                Err(_) => continue,
                Ok(Ok(0) | Err(_)) => break,
                Ok(Ok(n)) => seen.extend_from_slice(&buf[..n]),
            }
            if seen.windows(4).any(|w| w == b"\r\n\r\n") {
                break;
            }
        }
        let mut rest = closed_by_server(&mut tcp).await;
        seen.append(&mut rest);
        let answer = parse(&seen);
        assert_eq!(answer.status, 408, "{route}: {answer:?}");
        assert_eq!(answer.code(), "request_timeout");
        assert!(answer.body.contains("body_deadline_secs"), "{answer:?}");
    }
}

/// Sends `request` as is on a fresh connection and reads the answer until the server closes.
async fn send_raw(addr: SocketAddr, request: &[u8]) -> Raw {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(request).await.unwrap();
    parse(&closed_by_server(&mut tcp).await)
}

#[tokio::test]
async fn a_request_hyper_cannot_parse_gets_a_json_error_with_its_status() {
    let server = serve(test_config(AuthMode::SingleUser), limits(5, 5, 64)).await;
    let malformed: [&[u8]; 3] = [
        b"GET /healthz HTTP/1.1\r\nhost 127.0.0.1\r\n\r\n",
        b"G\x01T /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n",
        b"GET /healthz HTTP/9.9\r\nhost: 127.0.0.1\r\n\r\n",
    ];
    for request in malformed {
        let answer = send_raw(server.addr, request).await;
        assert_eq!(answer.status, 400, "{answer:?}");
        assert_eq!(answer.code(), "invalid_request", "{answer:?}");
        let id = answer.json()["error"]["request_id"].as_str().unwrap().to_owned();
        assert_eq!(answer.header("x-request-id"), Some(id.as_str()));
    }
    // More header lines than hyper parses.
    let mut many = String::from("GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n");
    for i in 0..150 {
        many.push_str(&format!("x-h{i}: v\r\n"));
    }
    many.push_str("\r\n");
    let answer = send_raw(server.addr, many.as_bytes()).await;
    assert_eq!(answer.status, 431, "{answer:?}");
    assert_eq!(answer.code(), "headers_too_large");
    // The connection's next clients are served as usual.
    asked_once(server.addr).await;
}

#[tokio::test]
async fn a_keep_alive_connection_left_idle_still_answers_its_next_requests_until_the_idle_timeout() {
    let server = serve(
        test_config(AuthMode::SingleUser),
        ConnectionLimits {
            park_after: Duration::from_millis(200),
            ..limits(5, 3, 64)
        },
    )
    .await;
    let mut tcp = asked_once(server.addr).await;

    // Parked: the next request is served on the same connection.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(roundtrip(&mut tcp, "/v1/models").await.status, 200);

    // A head that arrives in pieces across the wake-up is still one request, and two pipelined
    // requests in one write are both answered.
    tokio::time::sleep(Duration::from_millis(600)).await;
    tcp.write_all(b"GET /healthz HT").await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        roundtrip_rest(&mut tcp, "TP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
            .await
            .status,
        200
    );
    tokio::time::sleep(Duration::from_millis(600)).await;
    let two = "GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n\
               GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n";
    tcp.write_all(two.as_bytes()).await.unwrap();
    let answers = String::from_utf8(closed_by_server(&mut tcp).await).unwrap();
    assert_eq!(answers.matches("HTTP/1.1 200 OK").count(), 2, "{answers}");

    // And a parked connection is still closed once idle for the idle timeout.
    let mut idle = asked_once(server.addr).await;
    assert!(closed_by_server(&mut idle).await.is_empty());
}

/// A bound on an answer that must come while the cap is full: far below the idle and first-request
/// timeouts (300 s), so only a slot made free at once lets it pass.
const ANSWER_GUARD: Duration = Duration::from_secs(20);

#[tokio::test]
async fn past_the_connection_cap_connections_that_ask_nothing_make_room_and_healthz_answers() {
    let server = serve(test_config(AuthMode::SingleUser), limits(300, 300, 8)).await;
    let addr = server.addr;
    // A keep-alive client that asked before the flood.
    let _regular = asked_once(addr).await;
    // Three times the cap of connections that send nothing, each accepted in turn.
    let mut silent = Vec::new();
    for _ in 0..24 {
        silent.push(TcpStream::connect(addr).await.unwrap());
    }

    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .timeout(ANSWER_GUARD)
        .build()
        .unwrap();
    for _ in 0..3 {
        let status = healthz(&http, addr).await;
        assert_eq!(status, 200);
    }
    // The first silent connections were the ones closed; the newest still hold their slots.
    assert!(
        closed_by_server(&mut silent[0]).await.is_empty(),
        "the longest-silent connection gave up its slot"
    );
    let mut buf = [0u8; 16];
    let newest = silent.last_mut().unwrap();
    assert!(
        matches!(newest.try_read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the newest silent connection is still open"
    );
}

#[tokio::test]
async fn a_connection_that_never_asks_is_closed_at_the_first_request_timeout_and_others_are_not() {
    let server = serve(
        test_config(AuthMode::SingleUser),
        ConnectionLimits {
            first_request_timeout: Duration::from_secs(1),
            ..limits(300, 300, 64)
        },
    )
    .await;
    let mut asked = asked_once(server.addr).await;
    let mut silent = TcpStream::connect(server.addr).await.unwrap();
    assert!(closed_by_server(&mut silent).await.is_empty());
    // A connection that has asked before keeps the idle timeout.
    assert_eq!(roundtrip(&mut asked, "/healthz").await.status, 200);
}

#[tokio::test]
async fn past_the_connection_cap_a_client_waits_while_every_connection_has_a_request_in_progress() {
    let (server, upstream) = serve_scripted(limits(300, 300, 2)).await;
    let addr = server.addr;
    // Two answers that never end hold both slots with a request in progress.
    let mut streams = Vec::new();
    for thread in ["held-1", "held-2"] {
        upstream.push(
            Script::new()
                .chunk(role_chunk())
                .chunk(content_chunk("Holding"))
                .hang(),
        );
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        let body = serde_json::to_string(&use_chat_body(thread, "go", "scripted")).unwrap();
        let head = format!(
            "POST /v1/chat HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
             content-length: {}\r\n\r\n{body}",
            body.len()
        );
        tcp.write_all(head.as_bytes()).await.unwrap();
        let mut first = [0u8; 64];
        let n = tokio::time::timeout(HANG_GUARD, tcp.read(&mut first))
            .await
            .unwrap()
            .unwrap();
        assert!(String::from_utf8_lossy(&first[..n]).starts_with("HTTP/1.1 200"));
        streams.push(tcp);
    }

    // The kernel completes the handshake, but no connection can give up its slot.
    let mut third = TcpStream::connect(addr).await.unwrap();
    third
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut buf = [0u8; 64];
    assert!(
        matches!(third.try_read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the third connection was served while both slots had a stream in progress"
    );

    // A client that leaves ends its turn, and its slot goes to the waiting one.
    drop(streams.pop());
    let answer = parse(&closed_by_server(&mut third).await);
    assert_eq!(answer.status, 200, "{answer:?}");
}

/// A useChat send whose answer pauses mid-way, read to the end in a task.
async fn slow_stream(
    server_addr: SocketAddr,
    upstream: &ScriptedUpstream,
) -> tokio::task::JoinHandle<crate::common::Sse> {
    // One pause longer than both connection clocks (1 s), in the middle of the answer.
    let mut script = text(["slow ", "but ", "whole"]);
    script.steps.insert(2, Step::Delay(Duration::from_millis(2500)));
    upstream.push(script);
    let stream = tokio::spawn(async move {
        let res = reqwest::Client::new()
            .post(format!("http://{server_addr}/v1/chat"))
            .json(&use_chat_body("slow", "go", "scripted"))
            .send()
            .await
            .unwrap();
        let status = res.status();
        let headers = res.headers().clone();
        parse_sse(status, headers, &res.text().await.unwrap())
    });
    while upstream.calls() == 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stream
}

#[tokio::test]
async fn a_stream_with_pauses_longer_than_the_connection_timeouts_is_not_cut() {
    let (server, upstream) = serve_scripted(limits(1, 1, 64)).await;
    let stream = slow_stream(server.addr, &upstream).await;
    let sse = tokio::time::timeout(HANG_GUARD, stream).await.unwrap().unwrap();
    assert!(sse.done, "the stream was cut: {:?}", sse.types());
    assert_eq!(sse.text(), "slow but whole");
}

#[tokio::test]
async fn shutdown_closes_idle_connections_and_returns_once_streams_are_done() {
    let (mut server, upstream) = serve_scripted(limits(60, 60, 64)).await;
    let addr = server.addr;
    let mut idle = asked_once(addr).await;
    let stream = slow_stream(addr, &upstream).await;

    server.stop.take().unwrap().send(()).unwrap();
    assert!(
        closed_by_server(&mut idle).await.is_empty(),
        "an idle keep-alive connection is closed"
    );
    let sse = tokio::time::timeout(HANG_GUARD, stream).await.unwrap().unwrap();
    assert!(sse.done, "the stream was cut by shutdown: {:?}", sse.types());
    assert_eq!(sse.text(), "slow but whole");
    let served = tokio::time::timeout(HANG_GUARD, server.task)
        .await
        .unwrap()
        .unwrap();
    assert!(served.is_ok());
    assert!(TcpStream::connect(addr).await.is_err(), "no longer accepting");
}
