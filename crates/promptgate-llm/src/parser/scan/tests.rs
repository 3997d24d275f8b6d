//! The hand reader against serde: whatever it reads, serde reads the same way; whatever serde
//! refuses, it leaves to serde; and the shapes real providers send are read by hand.

use super::super::WireChunk;
use super::read_chunk;

/// The hand reader agrees with serde on `data`: same chunk, or no answer. Returns whether the
/// hand reader answered.
fn agrees(data: &str) -> bool {
    let by_serde = serde_json::from_str::<WireChunk>(data);
    match (read_chunk(data), by_serde) {
        (Some(by_hand), Ok(by_serde)) => {
            assert_eq!(by_hand, by_serde, "read differently: {data}");
            true
        }
        (Some(by_hand), Err(e)) => panic!("serde refuses ({e}) what was read by hand as {by_hand:?}: {data}"),
        (None, _) => false,
    }
}

/// What real servers send: each is read by hand.
const COMMON: &[&str] = &[
    // OpenAI's text chunk, and its first (role) and last (finish, then usage) chunks.
    r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1733443200,"model":"gpt-4o-mini","system_fingerprint":"fp_0","choices":[{"index":0,"delta":{"content":"w0 "},"logprobs":null,"finish_reason":null}]}"#,
    r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1733443200,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}"#,
    r#"{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
    r#"{"id":"c","choices":[],"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}"#,
    // Escapes of every kind, a surrogate pair, text outside ASCII as is.
    r#"{"choices":[{"index":0,"delta":{"content":"a\"b\\c\/d\be\ff\ng\rh\ti \u00e9 \ud83d\ude00 \u0000 ✓ 日本"}}]}"#,
    // Reasoning under both names.
    r#"{"choices":[{"index":0,"delta":{"reasoning_content":"plan \"x\"","content":null}}]}"#,
    r#"{"choices":[{"index":0,"delta":{"reasoning":"think","content":"t"},"finish_reason":null}]}"#,
    // Tool-call deltas: the call's start, argument fragments, parallel calls, no index.
    r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_abc","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}"#,
    r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": \"Par"}}]}}]}"#,
    r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"f","arguments":"{}"}},{"index":0,"function":{"arguments":"is\"}"}}]}}]}"#,
    r#"{"choices":[{"delta":{"tool_calls":[{"id":"x","function":{"name":"f","arguments":{"a":[1,2.5,{"b":null}]}}}]}}]}"#,
    r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":null,"function":{"name":null,"arguments":null}}]}}]}"#,
    // Usage beside content, with floats and nulls (read by serde as values), unknown fields.
    r#"{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"length"}],"usage":{"prompt_tokens":9,"completion_tokens":4.0,"total_tokens":null,"prompt_cache_hit_tokens":3,"x":{"y":[true,false,null,-1.5e3]}}}"#,
    // Other choices, white space everywhere, unknown fields of every type.
    " { \"choices\" : [ { \"index\" : 1 , \"delta\" : { \"content\" : \"other\" } } , {\"index\":0,\"delta\":{\"content\":\"mine\"},\"finish_reason\":\"stop\"} ] , \"n\" : -0.0e-0 , \"t\" : true , \"a\" : [ ] , \"o\" : { } } \r\n",
    r#"{"choices":null,"usage":null,"error":null}"#,
    r#"{"choices":[{"index":null,"delta":null,"finish_reason":null}]}"#,
    r#"{}"#,
    r#"{"unknown":"\ud800 lone surrogates are fine where nothing reads them"}"#,
];

/// Shapes the hand reader leaves to serde, which reads or refuses them.
const LEFT_TO_SERDE: &[&str] = &[
    r#"{"error":{"message":"overloaded","code":529}}"#,
    r#"{"choices":[{"index":0,"delta":{"content":[{"type":"thinking","thinking":"x"},{"type":"text","text":"y"}]}}]}"#,
    r#"{"cho\u0069ces":[{"index":0,"delta":{"content":"escaped key"}}]}"#,
    r#"{"choices":[{"index":0,"delta":{"content":"lone \ud800 surrogate"}}]}"#,
    r#"{"choices":[{"index":0,"delta":{"content":"lone \udc00 low"}}]}"#,
    r#"{"choices":[{"index":1.0,"delta":{"content":"a"}}]}"#,
    r#"{"choices":[{"index":-1,"delta":{"content":"a"}}]}"#,
    r#"{"choices":[{"index":01,"delta":{"content":"a"}}]}"#,
    r#"{"choices":[{"index":18446744073709551616,"delta":{"content":"a"}}]}"#,
    r#"{"choices":[],"choices":[]}"#,
    r#"{"choices":[{"index":0,"index":0}]}"#,
    r#"{"choices":[{"delta":{"content":"a","content":"b"}}]}"#,
    r#"{"choices":[{"delta":{"content":5}}]}"#,
    r#"{"choices":[{"delta":{"reasoning":5}}]}"#,
    r#"{"choices":[[0,{"content":"as a sequence"},null]]}"#,
    r#"{"choices":{"index":0}}"#,
    r#"{"choices":[{"finish_reason":{"type":"stop"}}]}"#,
    r#"[{"choices":[]}]"#,
    r#"{"choices":[]} trailing"#,
    r#"{"choices":[],}"#,
    r#"{"choices":[1,]}"#,
    "{\"choices\":[{\"delta\":{\"content\":\"raw\ncontrol\"}}]}",
    r#"{"choices":[{"delta":{"content":"bad \x escape"}}]}"#,
    r#"{"choices":[{"delta":{"content":"bad \u12G4 hex"}}]}"#,
    r#"{"x":01}"#,
    r#"{"x":1.}"#,
    r#"{"x":.5}"#,
    r#"{"x":1e}"#,
    r#"{"x":-}"#,
    r#"{"x":tru}"#,
    r#"{"x":nul}"#,
    r#"{"x":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}"#,
    r#"{"choices":[{"delta":{"content":"a"}}"#,
    r#""#,
];

#[test]
fn what_providers_send_is_read_by_hand_as_serde_reads_it() {
    for data in COMMON {
        assert!(agrees(data), "left to serde: {data}");
    }
}

#[test]
fn what_the_hand_reader_does_not_take_on_is_left_to_serde() {
    for data in LEFT_TO_SERDE {
        assert!(!agrees(data), "read by hand: {data}");
    }
}

/// Every prefix of every input, and every input with one byte replaced by one that matters to
/// JSON's grammar: whatever the hand reader makes of it, serde makes the same, or it says nothing.
#[test]
fn cut_and_mutated_inputs_never_read_differently() {
    const REPLACEMENTS: &[u8] = b"\"\\,:{}[]0-1.eu n\x01";
    let mut by_hand = 0;
    for data in COMMON.iter().chain(LEFT_TO_SERDE) {
        let bytes = data.as_bytes();
        for cut in 0..bytes.len() {
            if let Ok(prefix) = std::str::from_utf8(&bytes[..cut]) {
                agrees(prefix);
            }
        }
        for at in 0..bytes.len() {
            for &replacement in REPLACEMENTS {
                let mut mutated = bytes.to_vec();
                mutated[at] = replacement;
                if let Ok(mutated) = String::from_utf8(mutated) {
                    by_hand += usize::from(agrees(&mutated));
                }
            }
        }
    }
    // The mutations are not all refused: many still are chunks the hand reader reads.
    assert!(by_hand > 1000, "only {by_hand} mutated inputs were read by hand");
}
