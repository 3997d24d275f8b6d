//! The thinking blocks of recent answers that made tool calls. With thinking on, Anthropic wants
//! the assistant message that made a tool call sent back with its thinking blocks, signature and
//! all; the engine's history has no place for them, so the provider keeps them itself, keyed by
//! the id of the answer's first tool call, for as long as a tool loop needs them.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use super::events::KeptThinking;

/// Enough for the tool loops of many concurrent turns; the oldest entry goes first.
const CAPACITY: usize = 1024;

#[derive(Debug, Default)]
pub(crate) struct ThinkingMemory {
    entries: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    by_tool_id: HashMap<String, Arc<Vec<Value>>>,
    order: VecDeque<String>,
}

impl ThinkingMemory {
    pub fn remember(&self, kept: KeptThinking) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries
            .by_tool_id
            .insert(kept.first_tool_id.clone(), Arc::new(kept.blocks))
            .is_none()
        {
            entries.order.push_back(kept.first_tool_id);
        }
        while entries.order.len() > CAPACITY {
            if let Some(oldest) = entries.order.pop_front() {
                entries.by_tool_id.remove(&oldest);
            }
        }
    }

    pub fn recall(&self, first_tool_id: &str) -> Option<Arc<Vec<Value>>> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.by_tool_id.get(first_tool_id).cloned()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_oldest_thinking_is_forgotten_first() {
        let memory = ThinkingMemory::default();
        for n in 0..=CAPACITY {
            memory.remember(KeptThinking {
                first_tool_id: format!("toolu_{n}"),
                blocks: vec![json!({"type": "thinking", "thinking": n.to_string(), "signature": "s"})],
            });
        }
        assert!(memory.recall("toolu_0").is_none());
        assert_eq!(
            memory.recall(&format!("toolu_{CAPACITY}")).unwrap()[0]["thinking"],
            json!(CAPACITY.to_string())
        );
    }
}
