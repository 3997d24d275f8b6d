//! The per-chunk cost the gateway adds while relaying a model's stream: a typical answer of 200
//! text chunks with usage, and a step with two parallel tool calls in small fragments.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use promptgate_llm::{ChunkParser, ParserOptions};
use serde_json::json;

fn chunk(delta: serde_json::Value, finish: Option<&str>) -> String {
    json!({
        "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1_764_662_400, "model": "m",
        "choices": [{ "index": 0, "delta": delta, "logprobs": null, "finish_reason": finish }]
    })
    .to_string()
}

fn text_answer() -> Vec<String> {
    let mut payloads = vec![chunk(json!({ "role": "assistant", "content": "" }), None)];
    payloads.extend((0..200).map(|i| chunk(json!({ "content": format!("word{i} ") }), None)));
    payloads.push(chunk(json!({}), Some("stop")));
    payloads.push(
        json!({ "choices": [], "usage": { "prompt_tokens": 900, "completion_tokens": 200, "total_tokens": 1100 } })
            .to_string(),
    );
    payloads.push("[DONE]".to_owned());
    payloads
}

fn tool_step() -> Vec<String> {
    let mut payloads = Vec::new();
    for (index, (id, name)) in [("call_a", "search"), ("call_b", "getTasks")].iter().enumerate() {
        payloads.push(chunk(
            json!({ "tool_calls": [{ "index": index, "id": id, "type": "function",
                     "function": { "name": name, "arguments": "" } }] }),
            None,
        ));
    }
    for piece in ["{\"que", "ry\":\"rust ", "async ", "runtimes\"}"] {
        for index in 0..2 {
            payloads.push(chunk(
                json!({ "tool_calls": [{ "index": index, "function": { "arguments": piece } }] }),
                None,
            ));
        }
    }
    payloads.push(chunk(json!({}), Some("tool_calls")));
    payloads.push("[DONE]".to_owned());
    payloads
}

fn parse_all(payloads: &[String], options: ParserOptions) -> usize {
    let mut parser = ChunkParser::new(options);
    let mut events = 0;
    for payload in payloads {
        events += parser.push(payload).map(|e| e.len()).unwrap_or(0);
    }
    events + parser.finish().map(|e| e.len()).unwrap_or(0)
}

fn bench_parser(c: &mut Criterion) {
    let text = text_answer();
    let tools = tool_step();
    let think = ParserOptions {
        think_tags: true,
        start_with_reasoning: false,
    };
    c.bench_function("parse a 200-chunk text answer", |b| {
        b.iter(|| parse_all(black_box(&text), ParserOptions::default()))
    });
    c.bench_function("parse a 200-chunk text answer with think tags on", |b| {
        b.iter(|| parse_all(black_box(&text), think))
    });
    c.bench_function("parse a step with two fragmented tool calls", |b| {
        b.iter(|| parse_all(black_box(&tools), ParserOptions::default()))
    });
}

criterion_group!(benches, bench_parser);
criterion_main!(benches);
