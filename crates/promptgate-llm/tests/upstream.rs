//! The client against a real HTTP server on loopback that replays provider streams.

mod common;

use std::time::Duration;

use common::{ask, client, run, upstream, with_think_tags, with_timeouts};
use promptgate_llm::scripted::{
    Script, Step, choice_chunk, content_chunk, finish_chunk, reasoning_chunk, role_chunk, text,
    tool_call_chunk, tool_calls, usage_chunk,
};
use promptgate_llm::{
    ChatModel, FinishReason, LlmError, OpenAiCompatible, ProviderConfig, StreamEvent, TimeoutPhase, ToolCall,
    ToolChoice, ToolDefinition, Usage,
};
use serde_json::json;

fn usage(prompt: u64, completion: u64) -> StreamEvent {
    StreamEvent::Usage(Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
        ..Usage::default()
    })
}

#[tokio::test]
async fn streams_text_and_sends_a_streaming_request() {
    let upstream = upstream().await;
    upstream.push(text(["Hel", "lo"]));
    let outcome = run(&client(&upstream), ask("hi")).await;

    assert_eq!(outcome.error, None);
    assert_eq!(
        outcome.events,
        vec![
            StreamEvent::TextDelta("Hel".into()),
            StreamEvent::TextDelta("lo".into()),
            usage(10, 2),
            StreamEvent::Finished(FinishReason::Stop),
        ]
    );
    let sent = upstream.last_request().expect("one request");
    assert_eq!(sent["model"], "test-model");
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["stream_options"]["include_usage"], true);
    assert_eq!(
        sent["messages"],
        json!([{ "role": "system", "content": "Be brief." }, { "role": "user", "content": "hi" }])
    );
    assert!(sent.get("tools").is_none() && sent.get("tool_choice").is_none());
    assert_eq!(upstream.calls(), 1);
}

#[tokio::test]
async fn parallel_tool_calls_with_interleaved_indexes() {
    let upstream = upstream().await;
    upstream.push(
        Script::new()
            .chunk(role_chunk())
            .chunk(tool_call_chunk(Some(0), Some("call_1"), Some("search"), ""))
            .chunk(tool_call_chunk(Some(1), Some("call_2"), Some("getTasks"), ""))
            .chunk(tool_call_chunk(Some(0), None, None, "{\"query\":"))
            .chunk(tool_call_chunk(Some(1), None, None, "{}"))
            .chunk(tool_call_chunk(Some(0), None, None, "\"rust\"}"))
            .chunk(finish_chunk("tool_calls"))
            .done(),
    );
    let outcome = run(&client(&upstream), ask("find")).await;

    assert_eq!(outcome.error, None);
    assert_eq!(
        outcome.tool_calls(),
        vec![
            ToolCall::new("call_1", "search", "{\"query\":\"rust\"}"),
            ToolCall::new("call_2", "getTasks", "{}")
        ]
    );
    assert_eq!(
        outcome.last(),
        Some(&StreamEvent::Finished(FinishReason::ToolCalls))
    );
}

#[tokio::test]
async fn tool_call_arguments_in_many_fragments() {
    let upstream = upstream().await;
    upstream.push(tool_calls(&[(
        "call_9",
        "render_html",
        &["{\"ht", "ml\":\"<p>", "hi</p>\"}"],
    )]));
    let outcome = run(&client(&upstream), ask("draw")).await;

    assert_eq!(
        outcome.tool_calls(),
        vec![ToolCall::new("call_9", "render_html", "{\"html\":\"<p>hi</p>\"}")]
    );
    let fragments = outcome
        .events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ToolCallArgumentsDelta { .. }))
        .count();
    assert_eq!(fragments, 3, "fragments are passed on as they arrive");
}

#[tokio::test]
async fn a_whole_tool_call_in_one_fragment_and_calls_without_index() {
    let upstream = upstream().await;
    upstream.push(
        Script::new()
            .chunk(tool_call_chunk(
                Some(0),
                Some("w1"),
                Some("search"),
                "{\"query\":\"a\"}",
            ))
            .chunk(finish_chunk("tool_calls"))
            .done(),
    );
    upstream.push(
        Script::new()
            .chunk(tool_call_chunk(
                None,
                Some("g1"),
                Some("search"),
                "{\"query\":\"a\"}",
            ))
            .chunk(tool_call_chunk(None, Some("g2"), Some("getTasks"), "{}"))
            .chunk(finish_chunk("tool_calls"))
            .done(),
    );
    let model = client(&upstream);

    let whole = run(&model, ask("one")).await;
    assert_eq!(
        whole.tool_calls(),
        vec![ToolCall::new("w1", "search", "{\"query\":\"a\"}")]
    );

    let indexless = run(&model, ask("two")).await;
    assert_eq!(
        indexless.tool_calls(),
        vec![
            ToolCall::new("g1", "search", "{\"query\":\"a\"}"),
            ToolCall::new("g2", "getTasks", "{}")
        ]
    );
}

#[tokio::test]
async fn reasoning_content_is_reasoning() {
    let upstream = upstream().await;
    upstream.push(
        Script::new()
            .chunk(reasoning_chunk("Let me "))
            .chunk(reasoning_chunk("think."))
            .chunk(content_chunk("Done."))
            .chunk(finish_chunk("stop"))
            .done(),
    );
    let outcome = run(&client(&upstream), ask("q")).await;
    assert_eq!(outcome.reasoning(), "Let me think.");
    assert_eq!(outcome.text(), "Done.");
}

#[tokio::test]
async fn think_tags_split_across_chunks() {
    let upstream = upstream().await;
    let pieces = ["<thi", "nk>pon", "der</th", "ink>", "Answer", " <b>bold</b>"];
    let script = pieces
        .iter()
        .fold(Script::new(), |s, p| s.chunk(content_chunk(p)));
    upstream.push(script.chunk(finish_chunk("stop")).done());
    let outcome = run(&with_think_tags(&upstream), ask("q")).await;

    assert_eq!(outcome.error, None);
    assert_eq!(outcome.reasoning(), "ponder");
    assert_eq!(outcome.text(), "Answer <b>bold</b>");
    let leaked = outcome
        .events
        .iter()
        .any(|e| matches!(e, StreamEvent::TextDelta(t) if t.contains("<th")));
    assert!(
        !leaked,
        "no piece of a tag reaches the text: {:?}",
        outcome.events
    );
}

#[tokio::test]
async fn usage_on_the_finish_chunk_and_in_a_final_empty_choices_chunk() {
    let upstream = upstream().await;
    let mut on_finish = finish_chunk("stop");
    on_finish["usage"] = json!({ "prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4 });
    upstream.push(
        Script::new()
            .chunk(content_chunk("a"))
            .chunk(on_finish.clone())
            .done(),
    );
    let mut detailed = usage_chunk(20, 6);
    detailed["usage"]["prompt_tokens_details"] = json!({ "cached_tokens": 16 });
    detailed["usage"]["completion_tokens_details"] = json!({ "reasoning_tokens": 4 });
    upstream.push(
        Script::new()
            .chunk(content_chunk("b"))
            .chunk(on_finish)
            .chunk(detailed)
            .done(),
    );
    let model = client(&upstream);

    let first = run(&model, ask("q")).await;
    assert_eq!(
        first.events[first.events.len() - 2..],
        [usage(3, 1), StreamEvent::Finished(FinishReason::Stop)]
    );

    let second = run(&model, ask("q")).await;
    let expected = Usage {
        prompt_tokens: 20,
        completion_tokens: 6,
        total_tokens: 26,
        reasoning_tokens: Some(4),
        cached_tokens: Some(16),
    };
    assert_eq!(
        second.events[second.events.len() - 2..],
        [
            StreamEvent::Usage(expected),
            StreamEvent::Finished(FinishReason::Stop)
        ],
        "the later usage replaces the one on the finish chunk, and Finished stays last"
    );
}

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
async fn an_error_chunk_mid_stream_ends_the_stream_with_its_message() {
    let upstream = upstream().await;
    upstream.push(
        Script::new()
            .chunk(content_chunk("partial"))
            .chunk(json!({ "error": { "message": "The server had an error", "type": "server_error" } })),
    );
    upstream.push(
        Script::new()
            .chunk(content_chunk("x"))
            .raw("event: error\ndata: {\"message\":\"overloaded\"}\n\n"),
    );
    let model = client(&upstream);

    let chunk = run(&model, ask("q")).await;
    assert_eq!(chunk.text(), "partial", "what came before the error is kept");
    assert!(
        matches!(chunk.error, Some(LlmError::Status { message, .. }) if message == "The server had an error")
    );

    let event = run(&model, ask("q")).await;
    assert!(matches!(event.error, Some(LlmError::Status { message, .. }) if message == "overloaded"));
}

#[tokio::test]
async fn a_stream_that_stops_before_the_finish_reason_is_an_error() {
    let upstream = upstream().await;
    upstream.push(Script::new().chunk(content_chunk("half")));
    // The pause lets the headers and the first chunk leave before the connection is cut.
    upstream.push(
        Script::new()
            .chunk(content_chunk("half"))
            .delay(Duration::from_millis(100))
            .cut(),
    );
    let model = client(&upstream);

    let closed = run(&model, ask("q")).await;
    assert_eq!(closed.text(), "half");
    assert_eq!(
        closed.error,
        Some(LlmError::Protocol(
            "stream ended before the model finished".to_owned()
        ))
    );

    let cut = run(&model, ask("q")).await;
    assert!(
        matches!(cut.error, Some(LlmError::Protocol(_))),
        "got {:?}",
        cut.error
    );
    assert!(!cut.events.iter().any(|e| matches!(e, StreamEvent::Finished(_))));
}

#[tokio::test]
async fn a_finish_reason_without_done_is_a_complete_answer() {
    let upstream = upstream().await;
    upstream.push(
        Script::new()
            .chunk(content_chunk("ok"))
            .chunk(finish_chunk("stop"))
            .chunk(usage_chunk(1, 1)),
    );
    // No blank line after the last event either.
    upstream.push(
        Script::new()
            .chunk(content_chunk("ok"))
            .raw(format!("data: {}", finish_chunk("length"))),
    );
    let model = client(&upstream);

    let outcome = run(&model, ask("q")).await;
    assert_eq!(outcome.error, None);
    assert_eq!(
        outcome.events[1..],
        [usage(1, 1), StreamEvent::Finished(FinishReason::Stop)]
    );

    let unterminated = run(&model, ask("q")).await;
    assert_eq!(
        unterminated.last(),
        Some(&StreamEvent::Finished(FinishReason::Length))
    );
}

#[tokio::test]
async fn comments_empty_roles_and_events_after_done_are_harmless() {
    let upstream = upstream().await;
    upstream.push(
        Script::new()
            .comment()
            .chunk(choice_chunk(json!({ "role": "", "content": "fine" }), None))
            .comment()
            .chunk(finish_chunk("stop"))
            .done()
            .chunk(content_chunk("after the end")),
    );
    let outcome = run(&client(&upstream), ask("q")).await;
    assert_eq!(outcome.error, None);
    assert_eq!(outcome.text(), "fine");
}

#[tokio::test]
async fn malformed_data_is_a_protocol_error() {
    let upstream = upstream().await;
    upstream.push(
        Script::new()
            .chunk(content_chunk("a"))
            .raw("data: {\"choices\": [\n\n"),
    );
    let outcome = run(&client(&upstream), ask("q")).await;
    assert!(matches!(outcome.error, Some(LlmError::Protocol(m)) if m.contains("not valid JSON")));
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
    assert!(
        matches!(
            slow_headers.error,
            Some(LlmError::Timeout {
                phase: TimeoutPhase::FirstByte,
                ..
            })
        ),
        "got {:?}",
        slow_headers.error
    );
    let hung = run(&model, ask("q")).await;
    assert!(matches!(
        hung.error,
        Some(LlmError::Timeout {
            phase: TimeoutPhase::FirstByte,
            ..
        })
    ));
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
    assert!(
        matches!(
            idle.error,
            Some(LlmError::Timeout {
                phase: TimeoutPhase::Idle,
                ..
            })
        ),
        "got {:?}",
        idle.error
    );

    let alive = run(&model, ask("q")).await;
    assert_eq!(alive.error, None);
}

#[tokio::test]
async fn tools_options_and_unknown_extra_fields_reach_the_provider() {
    let upstream = upstream().await;
    upstream.push(text(["ok"]));
    let mut request = ask("q");
    request.tools = vec![ToolDefinition {
        name: "search".to_owned(),
        description: "Search the web".to_owned(),
        parameters: json!({ "type": "object", "properties": { "query": { "type": "string" } }, "required": ["query"] }),
    }];
    request.tool_choice = Some(ToolChoice::Auto);
    request.temperature = Some(0.2);
    request.parallel_tool_calls = Some(false);
    request.reasoning_effort = Some("low".to_owned());
    request.extra.insert("top_k".to_owned(), json!(40));
    request
        .extra
        .insert("provider".to_owned(), json!({ "order": ["a", "b"] }));
    request.extra.insert("temperature".to_owned(), json!(0.7));
    request.extra.insert("stream".to_owned(), json!(false));
    let outcome = run(&client(&upstream), request).await;
    assert_eq!(outcome.error, None);

    let sent = upstream.last_request().expect("one request");
    assert_eq!(
        sent["tools"],
        json!([{ "type": "function", "function": {
            "name": "search",
            "description": "Search the web",
            "parameters": { "type": "object", "properties": { "query": { "type": "string" } }, "required": ["query"] }
        } }])
    );
    assert_eq!(sent["tool_choice"], "auto");
    assert_eq!(sent["parallel_tool_calls"], false);
    assert_eq!(sent["reasoning_effort"], "low");
    assert_eq!(sent["top_k"], 40);
    assert_eq!(sent["provider"], json!({ "order": ["a", "b"] }));
    assert_eq!(sent["temperature"], 0.7, "extra fields are merged last");
    assert_eq!(sent["stream"], true, "streaming cannot be switched off");
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
    assert!(
        matches!(
            outcome.error,
            Some(LlmError::Timeout {
                phase: TimeoutPhase::Connect,
                ..
            })
        ),
        "got {:?}",
        outcome.error
    );
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
    assert!(
        matches!(
            outcome.error,
            Some(LlmError::Timeout {
                phase: TimeoutPhase::FirstByte,
                ..
            })
        ),
        "got {:?}",
        outcome.error
    );
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
