//! Writing the summary that stands in for a thread's older part: the summary so far and the newest
//! of the messages it must take in (as many as the summariser's own window holds), as a transcript
//! for the summariser model, which answers with the new summary.

use std::collections::HashMap;

use promptgate_core::prompt::{SUMMARISER_INSTRUCTIONS, summariser_task};
use promptgate_llm::tokens::Tokenizer;
use promptgate_llm::{ChatMessage, ChatRequest, UserContent};
use promptgate_store::{Message, ThreadTail};
use promptgate_turn::history::HistoryOptions;

use super::read::model_messages;
use super::{Summariser, window_of};
use crate::Service;

/// Longest tool input and result quoted in a transcript, in characters.
const QUOTED_CALL_CHARS: usize = 300;
const QUOTED_RESULT_CHARS: usize = 600;
/// Tokens left free in the summariser's window besides the summary itself.
const SUMMARISER_MARGIN: usize = 1_024;
/// Messages whose bodies are read at once when the transcript needs more.
const BODY_PAGE: usize = 256;

/// A new summary, and how many of the messages it was given it saw (the newest ones).
pub(super) struct Written {
    pub text: String,
    pub seen: usize,
}

/// Asks the summariser for the summary of `older` (positions in `tail`, oldest first) after
/// `previous`. Messages below `bodies_from` were read without their bodies and are read again as
/// far as the transcript needs them. The error is a reason for the log.
pub(super) async fn summarise(
    service: &Service,
    summariser: &Summariser,
    (user, thread): (&str, &str),
    tail: &ThreadTail,
    older: &[usize],
    bodies_from: i64,
    previous: Option<&str>,
) -> Result<Written, String> {
    let settings = &service.config.context;
    let counter = service
        .token_counters
        .counter(Tokenizer::for_model(&summariser.model.upstream_model));
    let summary_max = usize::try_from(settings.summary_max_tokens).unwrap_or(usize::MAX);
    let input_room = window_of(settings, &summariser.model)
        .saturating_sub(summary_max)
        .saturating_sub(counter.text(SUMMARISER_INSTRUCTIONS))
        .saturating_sub(previous.map_or(0, |p| counter.text(p)))
        .saturating_sub(SUMMARISER_MARGIN);
    let mut bodies: HashMap<i64, Message> = HashMap::new();
    let mut lowest_read = bodies_from;
    let mut entries: Vec<String> = Vec::new();
    let mut used = 0usize;
    for &at in older.iter().rev() {
        let head = &tail.messages[at];
        if head.seq < lowest_read && !bodies.contains_key(&head.seq) {
            let page = service
                .store
                .thread_messages_before(user, thread, lowest_read, BODY_PAGE, true)
                .await
                .map_err(|e| format!("reading the messages to summarise failed: {e}"))?;
            lowest_read = page.first().map_or(0, |m| m.seq);
            bodies.extend(page.into_iter().map(|m| (m.seq, m)));
        }
        let message = bodies.get(&head.seq).unwrap_or(head);
        let entry = transcript_entry(message);
        let tokens = counter.text(&entry) + 2;
        if used + tokens > input_room {
            break;
        }
        used += tokens;
        entries.push(entry);
    }
    if entries.is_empty() {
        return Err("not even the newest message to summarise fits the summariser's window".to_owned());
    }
    let seen = entries.len();
    entries.reverse();
    let max_words = u64::try_from(summary_max * 3 / 4).unwrap_or(u64::MAX);
    let task = summariser_task(
        previous,
        (older.len() - seen) as u64,
        &entries.join("\n\n"),
        max_words,
    );
    let request = ChatRequest {
        model: summariser.model.upstream_model.clone(),
        messages: vec![
            ChatMessage::System {
                content: SUMMARISER_INSTRUCTIONS.to_owned(),
            },
            ChatMessage::User {
                content: UserContent::Text(task),
            },
        ],
        temperature: Some(0.2),
        ..ChatRequest::default()
    };
    let answer = tokio::time::timeout(settings.summary_timeout, ask(summariser, request))
        .await
        .map_err(|_| {
            format!(
                "the summariser did not answer within {} s",
                settings.summary_timeout.as_secs()
            )
        })??;
    let text = cut_to(answer.trim(), summary_max, &counter);
    if text.is_empty() {
        return Err("the summariser answered nothing".to_owned());
    }
    Ok(Written { text, seen })
}

/// The summariser's answer text.
async fn ask(summariser: &Summariser, request: ChatRequest) -> Result<String, String> {
    promptgate_llm::answer_text(summariser.client.as_ref(), request)
        .await
        .map_err(|e| format!("the summariser failed: {e}"))
}

/// A summary no longer than `max` tokens: an overlong answer is cut at a line end.
fn cut_to(text: &str, max: usize, counter: &promptgate_llm::tokens::TokenCounter) -> String {
    if counter.text(text) <= max {
        return text.to_owned();
    }
    let mut end = (max * 3).min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = &text[..end];
    cut.rfind('\n').map_or(cut, |at| &cut[..at]).trim_end().to_owned()
}

/// One stored message as the summariser reads it: who said what, with tool calls and their
/// results quoted briefly.
fn transcript_entry(message: &Message) -> String {
    let mut lines = Vec::new();
    for model in model_messages(
        message,
        HistoryOptions {
            images: false,
            ..HistoryOptions::default()
        },
    ) {
        match model {
            ChatMessage::User { content } => lines.push(format!("User: {}", user_text(&content))),
            ChatMessage::Assistant { content, tool_calls } => {
                if let Some(text) = content.filter(|t| !t.trim().is_empty()) {
                    lines.push(format!("Assistant: {text}"));
                }
                for call in tool_calls {
                    lines.push(format!(
                        "Assistant called {}({})",
                        call.function.name,
                        quoted(&call.function.arguments, QUOTED_CALL_CHARS)
                    ));
                }
            }
            ChatMessage::Tool { content, .. } => {
                lines.push(format!("Tool result: {}", quoted(&content, QUOTED_RESULT_CHARS)));
            }
            ChatMessage::System { content } => lines.push(format!("System: {content}")),
        }
    }
    lines.join("\n")
}

/// The summariser reads text only; an image is marked where it stood.
fn user_text(content: &UserContent) -> String {
    content.joined_text("\n", Some("[image]"))
}

fn quoted(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}
