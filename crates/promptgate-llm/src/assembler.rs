//! Collects the tool-call events of one model step into complete calls.

use std::collections::BTreeMap;

use crate::{StreamEvent, ToolCall};

/// Feed it every event of a step; [`ToolCallAssembler::finish`] gives the calls in index order.
#[derive(Debug, Default, Clone)]
pub struct ToolCallAssembler {
    calls: BTreeMap<usize, ToolCall>,
}

impl ToolCallAssembler {
    pub fn new() -> Self {
        Self::default()
    }

    /// Events other than tool-call events are ignored, so the whole stream can be fed.
    pub fn push(&mut self, event: &StreamEvent) {
        match event {
            StreamEvent::ToolCallStarted { index, id, name } => {
                self.calls
                    .entry(*index)
                    .or_insert_with(|| ToolCall::new(id, name, String::new()));
            }
            StreamEvent::ToolCallArgumentsDelta { index, fragment } => {
                if let Some(call) = self.calls.get_mut(index) {
                    call.function.arguments.push_str(fragment);
                }
            }
            _ => {}
        }
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// The completed calls. A call streamed without arguments gets `{}`, since providers reject
    /// an empty arguments string when the call is sent back to them in the history.
    pub fn finish(self) -> Vec<ToolCall> {
        self.calls
            .into_values()
            .map(|mut call| {
                if call.function.arguments.trim().is_empty() {
                    call.function.arguments = "{}".to_owned();
                }
                call
            })
            .collect()
    }
}
