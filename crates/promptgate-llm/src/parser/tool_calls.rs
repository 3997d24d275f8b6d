//! Groups streamed tool-call fragments into calls. Providers disagree on how they mark which call a
//! fragment belongs to, so the grouping takes the best evidence available: the wire `index`, then
//! the call id, then the fragment's position in its chunk.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde_json::Value;

use crate::{LlmError, StreamEvent};

/// More calls than any model makes in one step; beyond it the stream is treated as broken.
const MAX_TOOL_CALLS: usize = 128;

#[derive(Debug, Default, Deserialize, PartialEq)]
pub(super) struct WireToolCall {
    #[serde(default)]
    pub(super) index: Option<u64>,
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) function: Option<WireFunction>,
}

#[derive(Debug, Default, Deserialize, PartialEq)]
pub(super) struct WireFunction {
    #[serde(default)]
    pub(super) name: Option<String>,
    /// Normally a string; a few servers send the arguments as a JSON object.
    #[serde(default)]
    pub(super) arguments: Option<Value>,
}

#[derive(Debug, Default)]
struct Slot {
    id: Option<String>,
    name: Option<String>,
    started: bool,
    /// Argument text that arrived before the call's name was known.
    pending_args: String,
}

#[derive(Debug, Default)]
pub(super) struct ToolCallSlots {
    slots: Vec<Slot>,
    /// Wire index → slot.
    by_wire_index: Vec<(u64, usize)>,
    /// Position within a chunk → slot, for fragments that carry no index.
    by_position: Vec<usize>,
}

impl ToolCallSlots {
    pub(super) fn any_started(&self) -> bool {
        self.slots.iter().any(|s| s.started)
    }

    pub(super) fn push(
        &mut self,
        fragments: Vec<WireToolCall>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), LlmError> {
        for (position, fragment) in fragments.into_iter().enumerate() {
            let (name, arguments) = match fragment.function {
                Some(f) => (f.name, f.arguments),
                None => (None, None),
            };
            let id = fragment.id.filter(|s| !s.is_empty());
            let name = name.filter(|s| !s.is_empty());
            let slot = self.slot_for(fragment.index, position, id.as_deref(), name.is_some())?;
            self.apply(slot, id, name, arguments_text(arguments), out);
        }
        Ok(())
    }

    /// Calls whose name never arrived were never announced, so they cannot run; an operator
    /// should still hear that the provider sent them.
    pub(super) fn warn_about_unnamed(&self) {
        let unnamed = self.slots.iter().filter(|s| !s.started).count();
        if unnamed > 0 {
            tracing::warn!(
                unnamed,
                "the model sent tool-call fragments without a function name"
            );
        }
    }

    fn slot_for(
        &mut self,
        wire_index: Option<u64>,
        position: usize,
        id: Option<&str>,
        has_name: bool,
    ) -> Result<usize, LlmError> {
        let slot = match wire_index {
            Some(wire) => {
                let known = self
                    .by_wire_index
                    .iter()
                    .find(|(w, _)| *w == wire)
                    .map(|(_, s)| *s);
                match known {
                    // Some servers reuse index 0 for every parallel call; a new id means a new call.
                    Some(s) if !self.conflicting_id(s, id) => s,
                    _ => {
                        let s = self.new_slot()?;
                        self.by_wire_index.retain(|(w, _)| *w != wire);
                        self.by_wire_index.push((wire, s));
                        s
                    }
                }
            }
            None => {
                let at_position = self.by_position.get(position).copied();
                if let Some(id) = id {
                    match self.slots.iter().position(|s| s.id.as_deref() == Some(id)) {
                        Some(s) => s,
                        None => match at_position {
                            Some(s) if self.slots[s].id.is_none() && !self.slots[s].started => s,
                            _ => self.new_slot()?,
                        },
                    }
                } else if has_name {
                    match at_position {
                        Some(s) if self.slots[s].name.is_none() => s,
                        _ => self.new_slot()?,
                    }
                } else {
                    match at_position.or(self.slots.len().checked_sub(1)) {
                        Some(s) => s,
                        None => self.new_slot()?,
                    }
                }
            }
        };
        if wire_index.is_none() {
            if self.by_position.len() <= position {
                self.by_position.resize(position + 1, slot);
            }
            self.by_position[position] = slot;
        }
        Ok(slot)
    }

    fn conflicting_id(&self, slot: usize, id: Option<&str>) -> bool {
        matches!((self.slots[slot].id.as_deref(), id), (Some(known), Some(new)) if known != new)
    }

    fn new_slot(&mut self) -> Result<usize, LlmError> {
        if self.slots.len() >= MAX_TOOL_CALLS {
            return Err(LlmError::Protocol(format!(
                "the model made more than {MAX_TOOL_CALLS} tool calls in one step"
            )));
        }
        self.slots.push(Slot::default());
        Ok(self.slots.len() - 1)
    }

    fn apply(
        &mut self,
        index: usize,
        id: Option<String>,
        name: Option<String>,
        arguments: Option<String>,
        out: &mut Vec<StreamEvent>,
    ) {
        let slot = &mut self.slots[index];
        if slot.id.is_none() {
            slot.id = id;
        }
        if slot.name.is_none() {
            slot.name = name;
        }
        if let Some(fragment) = arguments.filter(|a| !a.is_empty()) {
            if slot.started {
                out.push(StreamEvent::ToolCallArgumentsDelta { index, fragment });
            } else {
                slot.pending_args.push_str(&fragment);
            }
        }
        if !slot.started
            && let Some(name) = &slot.name
        {
            slot.started = true;
            let id = slot.id.get_or_insert_with(generated_call_id).clone();
            out.push(StreamEvent::ToolCallStarted {
                index,
                id,
                name: name.clone(),
            });
            if !slot.pending_args.is_empty() {
                let fragment = std::mem::take(&mut slot.pending_args);
                out.push(StreamEvent::ToolCallArgumentsDelta { index, fragment });
            }
        }
    }
}

fn arguments_text(arguments: Option<Value>) -> Option<String> {
    match arguments? {
        Value::Null => None,
        Value::String(s) => Some(s),
        other => Some(other.to_string()),
    }
}

/// An id for a call the provider sent without one. Ids must not repeat within a conversation's
/// history, which outlives this process, hence the clock in it.
fn generated_call_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    format!("call_{millis:x}{n:04x}")
}
