//! The client's connection to a provider over real loopback HTTP: refusals, deadlines,
//! cancellation, connection reuse and what goes out in the headers.

use crate::common;

use std::time::Duration;

use common::{ask, client, next_errors, run, upstream, with_timeouts};
use promptgate_llm::scripted::{Script, Step, content_chunk, finish_chunk, text};
use promptgate_llm::{ChatModel, LlmError, OpenAiCompatible, ProviderConfig, StreamEvent, TimeoutPhase};

#[tokio::test]
async fn refusals_carry_the_provider_message_but_never_the_key() {
    let upstream = upstream().await;
    upstream.push(Script::status(401, "Incorrect API key provided: sk-test-secret"));
    upstream.push(Script::status(429, "Rate limit reached for requests"));
    upstream.push(Script::new().step(Step::Status(500, "upstream exploded".to_owned())));
    let model = client(&upstream);

    let unauthorised = run(&model, ask("q")).await;
    assert_eq!(
        unauthorised.error,
        Some(LlmError::Status {
            status: 401,
            message: "Incorrect API key provided: [redacted]".to_owned()
        })
    );
    let limited = run(&model, ask("q")).await;
    assert_eq!(
        limited.error,
        Some(LlmError::Status {
            status: 429,
            message: "Rate limit reached for requests".to_owned()
        })
    );
    let broken = run(&model, ask("q")).await;
    assert_eq!(
        broken.error,
        Some(LlmError::Status {
            status: 500,
            message: "upstream exploded".to_owned()
        })
    );
}

#[tokio::test]
async fn long_error_bodies_are_cut_short() {
    let upstream = upstream().await;
    upstream.push(Script::status(502, &"x".repeat(100_000)));
    let outcome = run(&client(&upstream), ask("q")).await;
    match outcome.error {
        Some(LlmError::Status { status: 502, message }) => assert!(message.chars().count() <= 501),
        other => panic!("expected a 502, got {other:?}"),
    }
}

#[tokio::test]
async fn a_slow_first_byte_times_out() {
    let upstream = upstream().await;
    upstream.push(
        Script::new()
            .delay(Duration::from_secs(5))
            .chunk(content_chunk("late")),
    );
    upstream.push(Script::new().hang());
    let model = with_timeouts(&upstream, 200, 5_000);

    let slow_headers = run(&model, ask("q")).await;
    assert_timed_out(&slow_headers.error, TimeoutPhase::FirstByte);
    let hung = run(&model, ask("q")).await;
    assert_timed_out(&hung.error, TimeoutPhase::FirstByte);
}

#[tokio::test]
async fn a_whole_answer_is_asked_for_once_and_waited_for_as_long_as_its_own_limit() {
    let upstream = upstream().await;
    upstream.set_recording(true);
    let slow = Script::new()
        .delay(Duration::from_millis(600))
        .chunk(content_chunk("written "))
        .chunk(content_chunk("whole"))
        .chunk(finish_chunk("stop"))
        .done();
    upstream.push(slow.clone());
    upstream.push(slow);
    upstream.push(Script::new().hang());
    let mut config = common::config(&upstream);
    config.timeouts.first_byte = Duration::from_millis(200);
    config.timeouts.whole_answer = Duration::from_millis(1_500);
    let model = OpenAiCompatible::new(config).unwrap();

    let answered = run(&model, common::ask_whole("q")).await;
    assert_eq!(answered.error, None);
    assert_eq!(answered.text(), "written whole");
    let sent = upstream.last_request().unwrap();
    assert_eq!(sent["stream"], serde_json::json!(false));
    assert!(sent.get("stream_options").is_none(), "{sent}");
    // The same pause before a streamed answer's first byte is past its limit.
    let streamed = run(&model, ask("q")).await;
    assert_timed_out(&streamed.error, TimeoutPhase::FirstByte);
    let hung = run(&model, common::ask_whole("q")).await;
    assert_timed_out(&hung.error, TimeoutPhase::FirstByte);
    match hung.error {
        Some(LlmError::Timeout { seconds, .. }) => {
            assert_eq!(seconds, 2, "the whole answer's limit, 1.5 s, rounded up")
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
}

#[tokio::test]
async fn an_idle_gap_times_out_but_keep_alive_comments_do_not() {
    let upstream = upstream().await;
    upstream.push(
        Script::new()
            .chunk(content_chunk("a"))
            .delay(Duration::from_secs(5))
            .chunk(finish_chunk("stop")),
    );
    let mut kept_alive = Script::new().chunk(content_chunk("a"));
    for _ in 0..4 {
        kept_alive = kept_alive.delay(Duration::from_millis(50)).comment();
    }
    upstream.push(kept_alive.chunk(finish_chunk("stop")).done());
    let model = with_timeouts(&upstream, 5_000, 1_000);

    let idle = run(&model, ask("q")).await;
    assert_eq!(idle.text(), "a");
    assert_timed_out(&idle.error, TimeoutPhase::Idle);

    let alive = run(&model, ask("q")).await;
    assert_eq!(alive.error, None);
}

#[tokio::test]
async fn dropping_the_stream_closes_the_upstream_request() {
    let upstream = upstream().await;
    upstream.push(Script::new().chunk(content_chunk("first")).hang());
    let model = client(&upstream);
    let mut stream = model.stream(ask("q")).await.expect("the request is accepted");
    let first = futures::StreamExt::next(&mut stream).await;
    assert_eq!(first, Some(Ok(StreamEvent::TextDelta("first".into()))));
    drop(stream);

    for _ in 0..200 {
        if upstream.disconnects() == 1 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the upstream never saw the client go away");
}

#[tokio::test]
async fn finished_streams_leave_their_connection_for_the_next_request() {
    let upstream = upstream().await;
    // The body ends a moment after [DONE], as it does when the end is a separate network packet.
    upstream.replay_by_default(text(["again"]).delay(Duration::from_millis(20)));
    let model = client(&upstream);
    for _ in 0..4 {
        assert_eq!(run(&model, ask("q")).await.error, None);
        // Unlike the caller, the pool only gets the connection back once the body has ended.
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert_eq!(upstream.calls(), 4);
    assert_eq!(upstream.connections(), 1);
}

#[tokio::test]
async fn an_unreachable_provider_is_a_connect_error() {
    common::init();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    let model =
        OpenAiCompatible::new(ProviderConfig::new("gone", format!("http://{addr}/v1/"))).expect("config");
    assert_eq!(model.url(), format!("http://{addr}/v1/chat/completions"));
    let outcome = run(&model, ask("q")).await;
    assert!(
        matches!(outcome.error, Some(LlmError::Connect(_))),
        "got {:?}",
        outcome.error
    );
}

#[test]
fn a_bad_base_url_is_refused_up_front() {
    common::init();
    let error = OpenAiCompatible::new(ProviderConfig::new("typo", "api.openai.com/v1")).err();
    assert!(matches!(error, Some(LlmError::Connect(m)) if m.contains("http://")));
}

#[test]
fn the_config_debug_output_hides_the_key() {
    let mut config = ProviderConfig::new("p", "https://example.com/v1");
    config.api_key = Some("sk-live-123".to_owned());
    config.extra_headers = vec![("x-secret".to_owned(), "hidden-value".to_owned())];
    let shown = format!("{config:?}");
    assert!(
        !shown.contains("sk-live-123") && !shown.contains("hidden-value"),
        "{shown}"
    );
}

#[tokio::test]
async fn a_provider_that_never_accepts_the_connection_times_out_connecting() {
    common::init();
    // A listener that never accepts, with its backlog filled: further connection attempts get
    // no answer at all, like a firewalled host.
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
    let listener = socket.listen(0).expect("listen");
    let addr = listener.local_addr().expect("addr");
    let mut fillers = Vec::new();
    for _ in 0..8 {
        let attempt = tokio::time::timeout(Duration::from_millis(200), tokio::net::TcpStream::connect(addr));
        match attempt.await {
            Ok(Ok(stream)) => fillers.push(stream),
            _ => break,
        }
    }
    let mut config = ProviderConfig::new("firewalled", format!("http://{addr}/v1"));
    config.timeouts.connect = Duration::from_millis(300);
    let model = OpenAiCompatible::new(config).expect("config");
    let outcome = run(&model, ask("q")).await;
    assert_timed_out(&outcome.error, TimeoutPhase::Connect);
}

#[tokio::test]
async fn keep_alive_comments_alone_do_not_count_as_a_first_event() {
    let upstream = upstream().await;
    let mut only_comments = Script::new();
    for _ in 0..40 {
        only_comments = only_comments.comment().delay(Duration::from_millis(100));
    }
    upstream.push(only_comments.chunk(content_chunk("too late")));
    let outcome = run(&with_timeouts(&upstream, 500, 5_000), ask("q")).await;
    assert_timed_out(&outcome.error, TimeoutPhase::FirstByte);
}

#[tokio::test]
async fn the_api_key_and_extra_headers_are_sent() {
    let upstream = upstream().await;
    upstream.push(text(["ok"]));
    let mut config = common::config(&upstream);
    config.extra_headers = vec![("HTTP-Referer".to_owned(), "https://promptgate.example".to_owned())];
    let model = OpenAiCompatible::new(config).expect("config");
    assert_eq!(run(&model, ask("q")).await.error, None);

    let headers = upstream.request_headers().pop().expect("one request");
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    assert_eq!(header("authorization").as_deref(), Some("Bearer sk-test-secret"));
    assert_eq!(
        header("http-referer").as_deref(),
        Some("https://promptgate.example")
    );
    assert_eq!(header("content-type").as_deref(), Some("application/json"));
}

fn assert_timed_out(error: &Option<LlmError>, phase: TimeoutPhase) {
    assert!(
        matches!(error, Some(LlmError::Timeout { phase: p, .. }) if *p == phase),
        "expected a {phase} timeout, got {error:?}"
    );
}

#[tokio::test]
async fn a_redirect_is_a_refusal_not_a_second_request() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    // A provider that answers every request with a redirect, counting the requests it sees.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let requests = Arc::new(AtomicUsize::new(0));
    let seen = requests.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                while let Ok(n) = socket.read(&mut buf).await {
                    if n == 0 {
                        return;
                    }
                    let lines = buf[..n].windows(11).filter(|w| w == b" HTTP/1.1\r\n").count();
                    for _ in 0..lines {
                        seen.fetch_add(1, Ordering::SeqCst);
                        let answer = b"HTTP/1.1 308 Permanent Redirect\r\nlocation: /v2/chat/completions\r\ncontent-length: 0\r\n\r\n";
                        if socket.write_all(answer).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });

    let model = OpenAiCompatible::new(ProviderConfig::new("moved", base_url)).unwrap();
    let outcome = run(&model, ask("q")).await;
    assert!(
        matches!(outcome.error, Some(LlmError::Status { status: 308, .. })),
        "{:?}",
        outcome.error
    );
    assert_eq!(
        requests.load(Ordering::SeqCst),
        1,
        "the request is not re-sent to where the provider points"
    );
}

#[tokio::test]
async fn a_prompt_longer_than_the_window_is_told_apart_from_other_refusals() {
    let upstream = upstream().await;
    // OpenAI's shape: 400 with the code `context_length_exceeded`.
    let openai = serde_json::json!({"error": {
        "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens.",
        "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}});
    upstream.push(Script::new().step(Step::Status(400, openai.to_string())));
    // A server that copies OpenAI's wording but not its code (vLLM).
    upstream.push(Script::status(
        400,
        "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.",
    ));
    // Other 400s and a rate limit counted in tokens stay what they are.
    upstream.push(Script::status(400, "Invalid value for 'temperature'"));
    upstream.push(Script::status(
        429,
        "Rate limit reached: too many tokens per min, context length of 8192",
    ));
    let model = client(&upstream);

    let errors = next_errors(&model, ["q"; 4].map(ask)).await;
    assert!(
        matches!(&errors[0], Some(LlmError::ContextTooLong(message)) if message.contains("128000 tokens")),
        "{:?}",
        errors[0]
    );
    assert!(matches!(errors[1], Some(LlmError::ContextTooLong(_))));
    assert!(matches!(errors[2], Some(LlmError::Status { status: 400, .. })));
    assert!(matches!(errors[3], Some(LlmError::Status { status: 429, .. })));
}

#[tokio::test]
async fn a_provider_behind_a_proxy_is_reached_through_it() {
    // The scripted upstream stands in for a forward proxy: it reads the absolute-form request a
    // client sends to a proxy by its path. The provider's own name resolves nowhere (`.invalid`),
    // so an answer can only have come through the proxy.
    let proxy = upstream().await;
    proxy.push(text(["through the proxy"]));
    let mut config = ProviderConfig::new("behind-a-proxy", "http://provider.invalid/v1");
    config.api_key = Some("sk-test-secret".to_owned());
    config.proxy = Some(format!("http://{}", proxy.addr()));
    let model = OpenAiCompatible::new(config).expect("config");
    let outcome = run(&model, ask("q")).await;
    assert_eq!(outcome.error, None);
    assert_eq!(outcome.text(), "through the proxy");

    let headers = proxy.request_headers().pop().expect("one request");
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    assert_eq!(header("host").as_deref(), Some("provider.invalid"));
    assert_eq!(header("authorization").as_deref(), Some("Bearer sk-test-secret"));
}
