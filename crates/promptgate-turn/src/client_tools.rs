//! Client tools: tools a facade's client defines and runs itself (an agent's function tools).
//!
//! The model is offered the server's tools and the client's together. Server tools run in the
//! turn as always; a step that calls a client tool ends the turn: the client receives the call
//! ([`TurnEvent::ClientToolCall`](crate::ui::TurnEvent)), runs it, and sends the conversation
//! back with the result, which starts the next turn.
//!
//! # The steps the client never saw
//!
//! What the client sends back is its own transcript: the assistant's text and its client calls,
//! then its results. When the turn ran server tools before the hand-off (or beside the client
//! call, in the same step), the model saw more than that. Those steps are kept on the server, as
//! a [`Handoff`] under a key, and the client calls reach the client under ids minted from that
//! key (`pg_<key>_<n>`). When a later request carries an assistant message whose calls are
//! exactly those ids, [`restore_handoffs`] puts the kept steps back in its place and gives the
//! client's results the ids the model used. So the model reads the same history it wrote,
//! whichever facade carried it, and the client is shown nothing of the server's tools.
//!
//! A hand-off without hidden steps keeps nothing: the client's transcript is already what the
//! model saw, under the model's own ids. A kept hand-off that is gone (expired, or the client
//! changed the calls) leaves the client's transcript as it is, which is still a valid history.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use promptgate_llm::{ChatMessage, ToolDefinition};
use serde::{Deserialize, Serialize};

/// Prefix of the ids minted for client calls whose steps are kept.
const MINTED_PREFIX: &str = "pg_";
/// Longest key a minted id carries: OpenAI refuses tool-call ids longer than 40 characters, and
/// a minted id reaches an upstream as it is when its hand-off is gone.
const MAX_KEY_LEN: usize = 32;

/// The client's tools for one turn and how the model may use them.
#[derive(Clone, Default)]
pub struct ClientTools {
    pub tools: Vec<ToolDefinition>,
    pub choice: ClientToolChoice,
    /// Where the steps the client does not see are kept at a hand-off; `None` keeps nothing.
    pub keeper: Option<Arc<dyn HandoffKeeper>>,
}

impl std::fmt::Debug for ClientTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTools")
            .field("tools", &self.tools.len())
            .field("choice", &self.choice)
            .field("keeps_handoffs", &self.keeper.is_some())
            .finish()
    }
}

impl ClientTools {
    pub fn is_client_tool(&self, name: &str) -> bool {
        self.tools.iter().any(|tool| tool.name == name)
    }
}

/// What the client asks of the turn's first step (later steps are always free to answer).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ClientToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// The first step must call a tool.
    Required,
    /// The first step must call this client tool; it is the only tool offered there.
    Named(String),
}

/// A call of a client tool, as the client receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as JSON text; always a JSON object.
    pub arguments: String,
}

/// One client call of a kept hand-off: the id the client was given and the one the model made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandedCall {
    pub client_id: String,
    pub model_id: String,
}

/// What the model saw in a turn that handed off to the client with hidden steps: every message
/// it added after the client's conversation, ending with the assistant message that made the
/// client calls and the results of the server calls made beside them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Handoff {
    pub key: String,
    pub messages: Vec<ChatMessage>,
    pub calls: Vec<HandedCall>,
}

/// Keeps hand-offs for the client's next request, which may reach any instance.
pub trait HandoffKeeper: Send + Sync {
    /// Resolves to true once the hand-off is kept; the turn waits for that (at most the save
    /// grace) before the client is given the minted ids.
    fn keep(&self, handoff: Handoff) -> Pin<Box<dyn Future<Output = bool> + Send>>;
}

/// The key a turn's hand-off is kept under: its id without the `turn_` prefix, so the ids minted
/// from it stay short. `None` when the turn id cannot make a short, plain key.
pub fn handoff_key(turn_id: &str) -> Option<String> {
    let key = turn_id.strip_prefix("turn_").unwrap_or(turn_id);
    let plain = !key.is_empty() && key.len() <= MAX_KEY_LEN && key.bytes().all(|b| b.is_ascii_alphanumeric());
    plain.then(|| key.to_owned())
}

/// The id the client sees for the `n`-th client call of a kept hand-off.
pub fn minted_id(key: &str, n: usize) -> String {
    format!("{MINTED_PREFIX}{key}_{n}")
}

/// The key of a minted id, or `None` for any other id.
fn key_of(id: &str) -> Option<&str> {
    let (key, n) = id.strip_prefix(MINTED_PREFIX)?.rsplit_once('_')?;
    (n.parse::<u8>().is_ok() && handoff_key(key).is_some()).then_some(key)
}

/// The keys of the kept hand-offs a conversation points to, each once, in order.
pub fn handoff_keys(messages: &[ChatMessage]) -> Vec<String> {
    // A set beside the list: a client may send tens of thousands of calls in one request.
    let mut seen = std::collections::HashSet::new();
    let mut keys: Vec<String> = Vec::new();
    for message in messages {
        let ChatMessage::Assistant { tool_calls, .. } = message else {
            continue;
        };
        for key in tool_calls.iter().filter_map(|call| key_of(&call.id)) {
            if seen.insert(key) {
                keys.push(key.to_owned());
            }
        }
    }
    keys
}

/// The conversation with each kept hand-off's steps back in place of the client's assistant
/// message that carries its calls, and the client's results under the model's ids. Messages whose
/// hand-off is unknown, or whose calls differ from the kept ones, stay as they are.
pub fn restore_handoffs(messages: Vec<ChatMessage>, handoffs: &[Handoff]) -> Vec<ChatMessage> {
    if handoffs.is_empty() {
        return messages;
    }
    let mut restored = Vec::with_capacity(messages.len());
    // The calls of the hand-off restored last, until the next assistant message: the client's
    // results that follow it get the model's ids back.
    let mut renamed: &[HandedCall] = &[];
    for message in messages {
        match message {
            ChatMessage::Assistant { .. } => {
                renamed = &[];
                match handoff_of(&message, handoffs) {
                    Some(handoff) => {
                        restored.extend(handoff.messages.iter().cloned());
                        renamed = &handoff.calls;
                    }
                    None => restored.push(message),
                }
            }
            ChatMessage::Tool {
                tool_call_id,
                content,
            } => {
                let tool_call_id = renamed
                    .iter()
                    .find(|call| call.client_id == tool_call_id)
                    .map_or(tool_call_id, |call| call.model_id.clone());
                restored.push(ChatMessage::Tool {
                    tool_call_id,
                    content,
                });
            }
            other => restored.push(other),
        }
    }
    restored
}

/// The kept hand-off whose client calls are exactly this message's calls.
fn handoff_of<'a>(message: &ChatMessage, handoffs: &'a [Handoff]) -> Option<&'a Handoff> {
    let ChatMessage::Assistant { tool_calls, .. } = message else {
        return None;
    };
    let key = key_of(&tool_calls.first()?.id)?;
    let handoff = handoffs.iter().find(|handoff| handoff.key == key)?;
    let same_calls = tool_calls.len() == handoff.calls.len()
        && tool_calls
            .iter()
            .all(|call| handoff.calls.iter().any(|kept| kept.client_id == call.id));
    same_calls.then_some(handoff)
}

#[cfg(test)]
mod tests {
    use super::*;
    use promptgate_llm::{ToolCall, UserContent};

    fn user(text: &str) -> ChatMessage {
        ChatMessage::User {
            content: UserContent::Text(text.into()),
        }
    }

    fn assistant(text: Option<&str>, calls: &[(&str, &str)]) -> ChatMessage {
        ChatMessage::Assistant {
            content: text.map(str::to_owned),
            tool_calls: calls
                .iter()
                .map(|(id, name)| ToolCall::new(*id, *name, "{}"))
                .collect(),
        }
    }

    fn result(id: &str, content: &str) -> ChatMessage {
        ChatMessage::Tool {
            tool_call_id: id.into(),
            content: content.into(),
        }
    }

    fn kept() -> Handoff {
        Handoff {
            key: "abc123".into(),
            messages: vec![
                assistant(Some("Searching."), &[("up_1", "web_search")]),
                result("up_1", "found"),
                assistant(Some("Reading it."), &[("up_2", "read_file")]),
            ],
            calls: vec![HandedCall {
                client_id: minted_id("abc123", 0),
                model_id: "up_2".into(),
            }],
        }
    }

    #[test]
    fn minted_ids_stay_short_and_carry_their_key() {
        let key = handoff_key("turn_0193b1c2d3e4f5a6b7c8d9e0f1a2b3c4").unwrap();
        let id = minted_id(&key, 31);
        assert!(id.len() <= 40, "{id}");
        assert_eq!(key_of(&id), Some(key.as_str()));
        assert_eq!(key_of("call_abc"), None);
        assert_eq!(key_of("pg_abc_x"), None);
        assert_eq!(handoff_key("turn_has-dash"), None);
    }

    #[test]
    fn the_kept_steps_replace_the_clients_message_and_its_results_get_the_models_ids() {
        let client = vec![
            user("Read the answer file."),
            assistant(
                Some("Searching.\n\nReading it."),
                &[(&minted_id("abc123", 0), "read_file")],
            ),
            result(&minted_id("abc123", 0), "42"),
        ];
        assert_eq!(handoff_keys(&client), ["abc123"]);
        let restored = restore_handoffs(client, &[kept()]);
        assert_eq!(
            restored,
            vec![
                user("Read the answer file."),
                assistant(Some("Searching."), &[("up_1", "web_search")]),
                result("up_1", "found"),
                assistant(Some("Reading it."), &[("up_2", "read_file")]),
                result("up_2", "42"),
            ]
        );
    }

    #[test]
    fn a_message_whose_calls_differ_or_whose_handoff_is_gone_stays_as_sent() {
        let changed = vec![
            user("q"),
            assistant(
                None,
                &[
                    (&minted_id("abc123", 0), "read_file"),
                    (&minted_id("abc123", 1), "x"),
                ],
            ),
            result(&minted_id("abc123", 0), "42"),
        ];
        assert_eq!(restore_handoffs(changed.clone(), &[kept()]), changed);
        let unknown = vec![
            user("q"),
            assistant(None, &[(&minted_id("zzz", 0), "read_file")]),
            result(&minted_id("zzz", 0), "42"),
        ];
        assert_eq!(restore_handoffs(unknown.clone(), &[kept()]), unknown);
    }
}
