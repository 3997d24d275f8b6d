//! Threads longer than their model's context window, end to end over real stores and a scripted
//! upstream on loopback: they keep answering (the older part summarised or left out with a note),
//! the summary is written once and reused, sends that do not compact send the same prefix (and, to
//! Anthropic, the same cache breakpoints), a tool call never reaches the model without its result,
//! an edit far back rebuilds the right conversation, a thread's older part held between sends shows
//! the model what the store holds, and a prompt the provider still finds too long ends with
//! `context_too_long`.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{Backend, Gateway, init, use_chat_body};
use promptgate_llm::scripted::{Script, ScriptedUpstream, Step, text};
use promptgate_server::config::{AuthMode, Config, EMBEDDED_DEFAULT};
use promptgate_server::state::LOCAL_USER_ID;
use promptgate_store::{NewMessage, Role};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// Bytes of filler in each stored message: about 300 tokens by the estimate (three bytes a token).
const FILLER: usize = 900;

/// A gateway whose `small` model (20,000-token window, no tools) and `summ` model (the summariser,
/// when `summariser` is set) answer from `upstream`.
fn config(upstream: &ScriptedUpstream, summariser: bool, extra_models: &str) -> Config {
    let base_url = upstream.base_url();
    let summariser_line = if summariser { "summariser = \"summ\"\n" } else { "" };
    let text = format!(
        "{EMBEDDED_DEFAULT}\n[context]\nanswer_reserve_tokens = 1000\n{summariser_line}\n\
         [[providers]]\nname = \"scripted\"\nkind = \"openai\"\nbase_url = \"{base_url}\"\n\
         first_byte_timeout_secs = 5\nidle_timeout_secs = 5\n\n\
         [[models]]\nid = \"small\"\nprovider = \"scripted\"\nupstream_model = \"small-upstream\"\n\
         context_window = 20000\ntool_usage = 0\n\n\
         [[models]]\nid = \"summ\"\nprovider = \"scripted\"\nupstream_model = \"summariser-upstream\"\n\
         context_window = 200000\ntool_usage = 0\n{extra_models}"
    );
    let mut config = Config::parse(&text).unwrap();
    config.auth.mode = AuthMode::SingleUser;
    config
}

fn filler(tag: &str) -> String {
    let mut text = format!("{tag} ");
    while text.len() < FILLER {
        text.push_str("lorem ipsum dolor sit amet ");
    }
    text
}

/// Stores `turns` question-and-answer pairs in a new thread `thread`, as earlier sends would have.
async fn fill(gw: &Gateway, thread: &str, turns: usize) {
    fill_as(gw, thread, turns, "").await;
}

/// Like [`fill`], each message's text (not its id) led by `lead`.
async fn fill_as(gw: &Gateway, thread: &str, turns: usize, lead: &str) {
    let (status, _) = gw.post("/v1/threads", json!({"id": thread})).await;
    assert_eq!(status, StatusCode::CREATED);
    store_turns(gw, thread, 1..=turns, lead).await;
}

/// Stores the question-and-answer pairs `turns` (their numbers) at the end of `thread`.
async fn store_turns(gw: &Gateway, thread: &str, turns: std::ops::RangeInclusive<usize>, lead: &str) {
    for n in turns {
        for (role, id) in [
            (Role::User, format!("question-{n}")),
            (Role::Assistant, format!("answer-{n}")),
        ] {
            let message = NewMessage {
                parts: json!([{"type": "text", "text": filler(&format!("{lead}{id}"))}]),
                id: Some(id),
                thread_id: thread.to_owned(),
                role,
                metadata: json!({}),
                status: (role == Role::Assistant).then_some(promptgate_store::MessageStatus::Complete),
            };
            gw.store.append_message(LOCAL_USER_ID, &message).await.unwrap();
        }
    }
}

/// The requests the upstream got for model `upstream_model`.
fn requests_for(upstream: &ScriptedUpstream, upstream_model: &str) -> Vec<Value> {
    upstream
        .requests()
        .into_iter()
        .filter(|r| r["model"] == upstream_model)
        .collect()
}

fn system_of(request: &Value) -> &str {
    assert_eq!(request["messages"][0]["role"], "system");
    request["messages"][0]["content"].as_str().unwrap()
}

/// The system prompt without its line of the current date and time.
fn without_date_line(system: &str) -> String {
    system
        .lines()
        .filter(|line| !line.starts_with("Current date/time: "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The conversation of a request (its messages after the system prompt).
fn conversation(request: &Value) -> &[Value] {
    &request["messages"].as_array().unwrap()[1..]
}

/// The text a message of a request opens with (its tag).
fn tag_of(message: &Value) -> String {
    let text = match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    };
    text.split_whitespace().next().unwrap_or_default().to_owned()
}

/// Every request after the first sends its system prompt byte for byte and its messages as the
/// start of its own: nothing before the new turns moved.
fn prefix_holds(sent: &[Value]) {
    let (first, later) = sent.split_first().unwrap();
    assert!(!later.is_empty());
    for request in later {
        assert_eq!(
            without_date_line(system_of(request)),
            without_date_line(system_of(first)),
            "the system prompt is byte-identical but for its clock, which two sends may read a minute apart"
        );
        let before = conversation(first);
        assert_eq!(
            &conversation(request)[..before.len()],
            before,
            "the first request is a prefix of this one"
        );
    }
}

/// Edits the filled thread `long`'s third question, answered by `model`; the model sees the thread up
/// to the edit (what followed the question goes). Returns the request it got.
async fn edit_the_third_question(gw: &Gateway, upstream: &ScriptedUpstream, model: &str) -> Value {
    let edit = json!({
        "id": "long", "trigger": "submit-message", "model": model, "messageId": "question-3",
        "messages": [{"id": "question-3", "role": "user", "parts": [{"type": "text", "text": "edited-3 instead"}]}]
    });
    let sse = gw.stream("/v1/chat", edit).await;
    assert!(sse.done, "{:?}", sse.events);
    let request = requests_for(upstream, &format!("{model}-upstream"))
        .pop()
        .unwrap();
    let tags: Vec<String> = conversation(&request).iter().map(tag_of).collect();
    assert_eq!(
        tags,
        ["question-1", "answer-1", "question-2", "answer-2", "edited-3"]
    );
    request
}

/// What the thread's store record says stands in for its older part, if anything does yet.
async fn older_part_record(gw: &Gateway, thread: &str) -> Option<promptgate_store::ThreadContext> {
    gw.store.thread_context(LOCAL_USER_ID, thread).await.unwrap()
}

async fn send(gw: &Gateway, thread: &str, words: &str) -> common::Sse {
    let sse = gw.stream("/v1/chat", use_chat_body(thread, words, "small")).await;
    assert_eq!(sse.status, StatusCode::OK);
    assert!(sse.done, "{:?}", sse.events);
    sse
}

async fn a_thread_past_the_window_keeps_answering_without_a_summariser(backend: Backend) {
    init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    upstream.replay_by_default(text(["Still here."]));
    let gw = Gateway::start(backend, config(&upstream, false, "")).await;
    fill(&gw, "long", 40).await;

    let first = send(&gw, "long", "What was the first question?").await;
    assert_eq!(first.text(), "Still here.");
    let sent = requests_for(&upstream, "small-upstream");
    let opening = &sent[0];
    let system = system_of(opening);
    assert!(system.contains("# Earlier in this conversation"), "{system}");
    assert!(system.contains("no longer fit your context window"), "{system}");
    let seen = conversation(opening);
    assert!(
        seen.len() < 81,
        "the whole thread went up: {} messages",
        seen.len()
    );
    assert_eq!(
        tag_of(&seen[0]),
        format!("question-{}", 40 - (seen.len() - 1) / 2 + 1),
        "it opens with a whole turn"
    );
    assert_eq!(tag_of(seen.last().unwrap()), "What");
    // The note counts what is left out, and the record of it is stored with the thread.
    let record = older_part_record(&gw, "long").await.unwrap();
    let left_out = 80 - (seen.len() as i64 - 1);
    assert_eq!(record.covered, left_out);
    assert_eq!(record.summary, None);
    assert!(system.contains(&format!(
        "The first {left_out} messages of this conversation are not shown"
    )));
    // The answer says what the model saw; the thread itself is untouched.
    let stored = gw.stored_messages("long", 82).await;
    let stored = stored.as_array().unwrap();
    assert_eq!(stored.len(), 82);
    assert_eq!(stored[0]["id"], "question-1");
    let context = &stored[81]["metadata"]["context"];
    assert_eq!(context["droppedMessages"], left_out);
    assert_eq!(context["sentMessages"], seen.len());
    assert_eq!(context["compacted"], true);
    assert_eq!(context["windowTokens"], 20000);

    // The next sends add to the kept part without moving anything before it.
    send(&gw, "long", "And the second?").await;
    send(&gw, "long", "And the third?").await;
    prefix_holds(&requests_for(&upstream, "small-upstream"));
    let (_, preview) = gw.get("/v1/threads/long/prompt?model=small").await;
    assert_eq!(preview["context"]["dropped_messages"], left_out);
    assert_eq!(preview["context"]["summary"], Value::Null);
    assert_eq!(preview["context"]["tokenizer"], "estimate");
}

common::on_both_backends!(a_thread_past_the_window_keeps_answering_without_a_summariser);

async fn the_summary_is_written_once_and_reused(backend: Backend) {
    init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    // The compacting send asks the summariser first, then the model.
    upstream.push(text(["The user asked forty questions about lorem ipsum."]));
    upstream.replay_by_default(text(["Noted."]));
    let gw = Gateway::start(backend, config(&upstream, true, "")).await;
    fill(&gw, "long", 40).await;

    send(&gw, "long", "Summarise our talk.").await;
    let summaries = requests_for(&upstream, "summariser-upstream");
    assert_eq!(summaries.len(), 1);
    let task = summaries[0]["messages"][1]["content"].as_str().unwrap();
    assert!(
        task.contains("User: question-1 lorem"),
        "the oldest turn is summarised: {task}"
    );
    assert!(!task.contains("Summarise our talk."), "the new question is not");
    let opening = requests_for(&upstream, "small-upstream")[0].clone();
    let system = system_of(&opening).to_owned();
    assert!(
        system.contains("<summary>\nThe user asked forty questions about lorem ipsum.\n</summary>"),
        "{system}"
    );
    let record = older_part_record(&gw, "long").await.unwrap();
    assert_eq!(
        record.summary.as_deref(),
        Some("The user asked forty questions about lorem ipsum.")
    );
    assert_eq!(
        record.summarised, record.covered,
        "every covered message was summarised"
    );

    for question in ["One more?", "And another?", "Last one?"] {
        send(&gw, "long", question).await;
    }
    assert_eq!(
        requests_for(&upstream, "summariser-upstream").len(),
        1,
        "the summary is reused, not rewritten"
    );
    prefix_holds(&requests_for(&upstream, "small-upstream"));
    let (_, preview) = gw.get("/v1/threads/long/prompt?model=small").await;
    assert_eq!(
        preview["context"]["summary"],
        "The user asked forty questions about lorem ipsum."
    );
    assert_eq!(preview["context"]["summarised_messages"], record.covered);
    assert_eq!(preview["context"]["dropped_messages"], 0);
    assert!(preview["system"].as_str().unwrap().contains("<summary>"));
}

common::on_both_backends!(the_summary_is_written_once_and_reused);

#[tokio::test]
async fn a_summariser_that_fails_leaves_the_older_part_out_and_the_send_answers() {
    init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    upstream.push(Script::status(500, "summariser down"));
    upstream.replay_by_default(text(["Answered anyway."]));
    let gw = Gateway::start(Backend::Sqlite, config(&upstream, true, "")).await;
    fill(&gw, "long", 40).await;
    let sse = send(&gw, "long", "Still there?").await;
    assert_eq!(sse.text(), "Answered anyway.");
    let system = system_of(&requests_for(&upstream, "small-upstream")[0]).to_owned();
    assert!(system.contains("no longer fit your context window"), "{system}");
}

/// Anthropic caches a prompt prefix only where a block carries a breakpoint; a send that does not
/// compact must send the same system blocks and, up to the newest question, the same messages.
#[tokio::test]
async fn cache_breakpoints_and_the_prefix_hold_across_sends_that_do_not_compact() {
    init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    upstream.push(text(["Forty questions were asked."]));
    for _ in 0..3 {
        upstream.push(promptgate_llm::scripted::anthropic::text(["Sure."]));
    }
    let claude = format!(
        "\n[[providers]]\nname = \"claude\"\nkind = \"anthropic\"\nbase_url = \"{}\"\n\
         first_byte_timeout_secs = 5\nidle_timeout_secs = 5\n\n\
         [[models]]\nid = \"claude\"\nprovider = \"claude\"\nupstream_model = \"claude-test\"\n\
         context_window = 20000\ntool_usage = 0\n",
        upstream.base_url()
    );
    let gw = Gateway::start(Backend::Sqlite, config(&upstream, true, &claude)).await;
    fill(&gw, "long", 40).await;
    for question in ["First?", "Second?", "Third?"] {
        let sse = gw
            .stream("/v1/chat", use_chat_body("long", question, "claude"))
            .await;
        assert!(sse.done && sse.text() == "Sure.", "{:?}", sse.events);
    }
    assert_eq!(requests_for(&upstream, "summariser-upstream").len(), 1);
    let sent = requests_for(&upstream, "claude-test");
    assert_eq!(sent.len(), 3);
    let system = &sent[0]["system"];
    let blocks = system.as_array().unwrap();
    assert_eq!(blocks.len(), 1, "{system}");
    assert!(
        blocks[0]["text"].as_str().unwrap().ends_with("</summary>"),
        "the summary closes the cached system prompt"
    );
    assert!(blocks[0].get("cache_control").is_some());
    let strip = |messages: &[Value]| -> Vec<Value> {
        messages
            .iter()
            .map(|m| {
                let mut m = m.clone();
                for block in m["content"].as_array_mut().unwrap() {
                    block.as_object_mut().unwrap().remove("cache_control");
                }
                m
            })
            .collect()
    };
    for pair in sent.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        assert_eq!(after["system"], *system, "the same system blocks and breakpoint");
        let before_messages = before["messages"].as_array().unwrap();
        let after_messages = after["messages"].as_array().unwrap();
        // Everything before the earlier request's newest question (which carried the clock) is
        // sent again byte for byte.
        let prefix = before_messages.len() - 1;
        assert_eq!(
            strip(&after_messages[..prefix]),
            strip(&before_messages[..prefix])
        );
        // Each request closes what the previous ones wrote with a breakpoint before its question.
        let newest = after_messages.len() - 1;
        let marked: Vec<usize> = after_messages
            .iter()
            .enumerate()
            .filter(|(_, m)| {
                m["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|b| b.get("cache_control").is_some())
            })
            .map(|(at, _)| at)
            .collect();
        assert_eq!(marked, vec![newest - 1]);
    }
}

#[tokio::test]
async fn a_tool_call_never_reaches_the_model_without_its_result() {
    init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    upstream.replay_by_default(text(["Done."]));
    let gw = Gateway::start(Backend::Sqlite, config(&upstream, false, "")).await;
    gw.post("/v1/threads", json!({"id": "tools"})).await;
    for n in 1..=30 {
        let question = NewMessage {
            id: Some(format!("q{n}")),
            thread_id: "tools".to_owned(),
            role: Role::User,
            parts: json!([{"type": "text", "text": format!("question-{n} look it up")}]),
            metadata: json!({}),
            status: None,
        };
        gw.store.append_message(LOCAL_USER_ID, &question).await.unwrap();
        // Each answer makes two calls with large results, then answers.
        let answer = NewMessage {
            id: Some(format!("a{n}")),
            thread_id: "tools".to_owned(),
            role: Role::Assistant,
            parts: json!([
                {"type": "step-start"},
                {"type": "tool-search", "toolCallId": format!("call-{n}-a"), "state": "output-available",
                 "input": {"query": format!("q{n}")}, "output": filler("result")},
                {"type": "tool-search", "toolCallId": format!("call-{n}-b"), "state": "output-available",
                 "input": {"query": format!("q{n} again")}, "output": filler("result")},
                {"type": "step-start"},
                {"type": "text", "text": format!("answer-{n}")}
            ]),
            metadata: json!({}),
            status: Some(promptgate_store::MessageStatus::Complete),
        };
        gw.store.append_message(LOCAL_USER_ID, &answer).await.unwrap();
    }
    send(&gw, "tools", "One more?").await;
    let request = &requests_for(&upstream, "small-upstream")[0];
    let seen = conversation(request);
    assert!(seen.len() < 30 * 5 + 1, "the thread was fitted");
    assert_eq!(seen[0]["role"], "user", "the kept part opens with a question");
    let calls: Vec<&str> = seen
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    let results: Vec<&str> = seen
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert!(!calls.is_empty());
    assert_eq!(
        calls, results,
        "every call with its result, every result after its call"
    );
}

#[tokio::test]
async fn an_edit_far_back_rebuilds_the_conversation_and_voids_the_summary() {
    init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    upstream.push(text(["An older summary."]));
    upstream.replay_by_default(text(["Ok."]));
    let gw = Gateway::start(Backend::Sqlite, config(&upstream, true, "")).await;
    fill(&gw, "long", 40).await;
    send(&gw, "long", "Compact first.").await;
    assert!(older_part_record(&gw, "long").await.is_some());

    // An edit of the third question: it takes that question's place and what followed it goes,
    // the summary of the older part with it.
    let request = edit_the_third_question(&gw, &upstream, "small").await;
    assert!(!system_of(&request).contains("# Earlier in this conversation"));
    let (_, listed) = gw.get("/v1/threads/long/messages").await;
    let ids: Vec<&str> = common::strings_at(&listed, "id");
    assert_eq!(
        ids[..5],
        ["question-1", "answer-1", "question-2", "answer-2", "question-3"]
    );
    assert_eq!(ids.len(), 6, "the listing shows the thread as it now reads");
}

/// A model whose window takes a whole 120-message thread, so its sends read past their first page.
const WIDE: &str = "\n[[models]]\nid = \"wide\"\nprovider = \"scripted\"\nupstream_model = \"wide-upstream\"\n\
                    context_window = 200000\ntool_usage = 0\n";

/// Sends `words` with the wide model and returns the tags of the conversation the model got.
async fn wide_send(gw: &Gateway, upstream: &ScriptedUpstream, thread: &str, words: &str) -> Vec<String> {
    let sse = gw.stream("/v1/chat", use_chat_body(thread, words, "wide")).await;
    assert!(sse.done, "{:?}", sse.events);
    let request = requests_for(upstream, "wide-upstream").pop().unwrap();
    conversation(&request).iter().map(tag_of).collect()
}

/// The tags of `turns` filled question-and-answer pairs.
fn filled_tags(turns: usize, lead: &str) -> Vec<String> {
    (1..=turns)
        .flat_map(|n| [format!("{lead}question-{n}"), format!("{lead}answer-{n}")])
        .collect()
}

/// The metric of sends that joined what their instance held.
const JOINED: &str = "promptgate_held_history_total{outcome=\"joined\"}";

/// Two instances of one gateway answering "Ok." and a 60-turn thread `long`, sent `ask-1` on the
/// first instance (which then holds its older part); returns the tags that send showed the model.
async fn held_thread(backend: Backend) -> (ScriptedUpstream, Gateway, Gateway, Vec<String>) {
    init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    upstream.replay_by_default(text(["Ok."]));
    let first = Gateway::start(backend, config(&upstream, false, WIDE)).await;
    let second = first.another_instance(config(&upstream, false, WIDE)).await;
    fill(&first, "long", 60).await;
    let mut expected = filled_tags(60, "");
    expected.push("ask-1".to_owned());
    assert_eq!(wide_send(&first, &upstream, "long", "ask-1 now").await, expected);
    (upstream, first, second, expected)
}

async fn the_older_part_held_between_sends_shows_what_the_store_holds(backend: Backend) {
    let (upstream, first, second, mut expected) = held_thread(backend).await;
    assert_eq!(first.metric(JOINED).await, 0.0, "nothing was held before");

    // The next send on the same instance reads only what was stored since.
    expected.extend(["Ok.".to_owned(), "ask-2".to_owned()]);
    assert_eq!(wide_send(&first, &upstream, "long", "ask-2 now").await, expected);
    assert_eq!(first.metric(JOINED).await, 1.0);

    // Another instance answers in between; what it stored comes in its place.
    wide_send(&second, &upstream, "long", "elsewhere-1 there").await;
    wide_send(&second, &upstream, "long", "elsewhere-2 there").await;
    for tag in ["Ok.", "elsewhere-1", "Ok.", "elsewhere-2", "Ok.", "ask-3"] {
        expected.push(tag.to_owned());
    }
    assert_eq!(wide_send(&first, &upstream, "long", "ask-3 now").await, expected);

    // An edit far back, on the instance that holds the thread, shows the thread as it now reads.
    edit_the_third_question(&first, &upstream, "wide").await;

    // The thread deleted and made again under its id, with messages of the same ids and other
    // words: nothing of the one held is sent.
    let (status, _) = second.delete("/v1/threads/long").await;
    assert!(status.is_success(), "{status}");
    fill_as(&second, "long", 60, "renewed-").await;
    let mut renewed = filled_tags(60, "renewed-");
    renewed.push("ask-4".to_owned());
    assert_eq!(wide_send(&first, &upstream, "long", "ask-4 now").await, renewed);
}

common::on_both_backends!(the_older_part_held_between_sends_shows_what_the_store_holds);

/// A send on a thread whose older part this instance holds reads only the messages from the held
/// part's end on; what it holds ends below the newest question, so whatever answers that question
/// again still finds it, and a thread that moved on by more than a page is read as before.
async fn a_held_thread_is_read_from_its_held_end_and_its_newest_question_stays_answerable(backend: Backend) {
    let (upstream, first, second, mut expected) = held_thread(backend).await;

    // The preview reads the thread with the answer at its end; the regenerate after it answers
    // the newest question again.
    let (status, _) = first.get("/v1/threads/long/prompt?model=wide").await;
    assert!(status.is_success(), "{status}");
    let stored = first.stored_messages("long", 122).await;
    let stored = stored.as_array().unwrap();
    let (question, answer) = (&stored[120], &stored[121]);
    assert_eq!(answer["role"], "assistant");
    let regenerate = json!({
        "id": "long", "trigger": "regenerate-message", "model": "wide",
        "messages": [question], "messageId": answer["id"],
    });
    let sse = first.stream("/v1/chat", regenerate).await;
    assert!(sse.done, "{:?}", sse.events);
    let request = requests_for(&upstream, "wide-upstream").pop().unwrap();
    let tags: Vec<String> = conversation(&request).iter().map(tag_of).collect();
    assert_eq!(
        tags, expected,
        "the regenerate shows the model the question, not the answer it replaces"
    );
    assert_eq!(
        first.metric(JOINED).await,
        2.0,
        "the preview and the regenerate joined what was held"
    );

    // Another instance stores more than a page: the held end is not among the newest messages,
    // so the page is read and what lies between it and the held part is read after it.
    store_turns(&second, "long", 61..=100, "more-").await;
    expected.push("Ok.".to_owned());
    expected.extend((61..=100).flat_map(|n| [format!("more-question-{n}"), format!("more-answer-{n}")]));
    expected.push("ask-2".to_owned());
    assert_eq!(wide_send(&first, &upstream, "long", "ask-2 now").await, expected);
    assert_eq!(first.metric(JOINED).await, 3.0);
}

common::on_both_backends!(a_held_thread_is_read_from_its_held_end_and_its_newest_question_stays_answerable);

#[tokio::test]
async fn a_prompt_the_provider_finds_too_long_ends_with_context_too_long() {
    init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let too_long = json!({"error": {"message": "This model's maximum context length is 20000 tokens.",
        "type": "invalid_request_error", "code": "context_length_exceeded"}});
    for _ in 0..3 {
        upstream.push(Script::new().step(Step::Status(400, too_long.to_string())));
    }
    let gw = Gateway::start(Backend::Sqlite, config(&upstream, false, "")).await;

    let sse = gw.stream("/v1/chat", use_chat_body("t", "Hello", "small")).await;
    let error = sse.of_type("error")[0]["errorText"].as_str().unwrap().to_owned();
    assert!(
        error.contains("context_too_long") && !error.contains("HTTP 400"),
        "{error}"
    );
    let stored = gw.stored_messages("t", 2).await;
    assert_eq!(stored[1]["metadata"]["errorCode"], "context_too_long");
    assert_eq!(stored[1]["metadata"]["status"], "error");

    // The OpenAI facade: a whole response is a 400 with the code, a stream ends with it.
    let body = json!({"model": "small", "messages": [{"role": "user", "content": "Hello"}]});
    let (status, whole) = gw.post("/v1/chat/completions", body.clone()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(common::error_code(&whole), "context_too_long");
    let mut streamed = body;
    streamed["stream"] = json!(true);
    let text = common::text_of(gw.http.post(gw.url("/v1/chat/completions")).json(&streamed)).await;
    assert!(text.contains(r#""code":"context_too_long""#), "{text}");
}

#[tokio::test]
async fn a_harness_thread_past_the_window_keeps_answering() {
    init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    upstream.replay_by_default(text(["Harness answer."]));
    let harness = "\n[[models]]\nid = \"agent\"\nprovider = \"scripted\"\nupstream_model = \"agent-upstream\"\n\
                   context_window = 20000\ntool_usage = 0\nengine = \"harness\"\n";
    let gw = Gateway::start(Backend::Sqlite, config(&upstream, false, harness)).await;
    fill(&gw, "long", 40).await;
    for question in ["First?", "Second?"] {
        let sse = gw
            .stream("/v1/chat", use_chat_body("long", question, "agent"))
            .await;
        assert_eq!(sse.text(), "Harness answer.");
    }
    let sent = requests_for(&upstream, "agent-upstream");
    let first = &sent[0];
    assert!(system_of(first).contains("# Earlier in this conversation"));
    assert!(conversation(first).len() < 81);
    // The kept transcript continues on the next send, after the same prefix.
    let before = conversation(first);
    assert_eq!(&conversation(&sent[1])[..before.len()], before);
}
