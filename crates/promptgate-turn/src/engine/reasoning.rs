//! How long the model reasoned and each tool ran, in the message metadata's vocabulary:
//! `reasoningStartTimes` (Unix milliseconds when a reasoning part opened or a tool started) and
//! `reasoningTime` (milliseconds it lasted). Reasoning parts are keyed `reasoning-<n>` by their
//! order in the answer, tool runs by their tool call id, so a frontend can say "thought for 4 s"
//! or "searched for 2 s" under each part, also when it shows a stored thread.

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};
use tokio::time::Instant;

#[derive(Default)]
pub(super) struct ReasoningTimes {
    opened: usize,
    open_reasoning: Option<(String, Instant)>,
    running_tools: HashMap<String, Instant>,
    starts: Map<String, Value>,
    times: Map<String, Value>,
}

impl ReasoningTimes {
    /// A reasoning part opened.
    pub fn start(&mut self) {
        let key = format!("reasoning-{}", self.opened);
        self.opened += 1;
        let since = self.started(&key);
        self.open_reasoning = Some((key, since));
    }

    /// The open reasoning part closed.
    pub fn end(&mut self) {
        if let Some((key, since)) = self.open_reasoning.take() {
            self.ended(key, since);
        }
    }

    /// A tool call started running.
    pub fn start_tool(&mut self, call_id: &str) {
        let since = self.started(call_id);
        self.running_tools.insert(call_id.to_owned(), since);
    }

    /// A tool call has its result.
    pub fn end_tool(&mut self, call_id: &str) {
        if let Some(since) = self.running_tools.remove(call_id) {
            self.ended(call_id.to_owned(), since);
        }
    }

    #[expect(
        clippy::disallowed_methods,
        reason = "a reasoning part's start is a wall-clock stamp for the UI; its duration uses the monotonic clock"
    )]
    fn started(&mut self, key: &str) -> Instant {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| u64::try_from(since.as_millis()).unwrap_or(u64::MAX));
        self.starts.insert(key.to_owned(), wall.into());
        // The duration comes from the monotonic clock: a wall clock step must not make it negative.
        Instant::now()
    }

    fn ended(&mut self, key: String, since: Instant) {
        let millis = u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX);
        // Something that began and ended within the same millisecond has no duration to show.
        if millis > 0 {
            self.times.insert(key, millis.into());
        }
    }

    /// Adds both maps to a metadata snapshot, when the answer has reasoned or run a tool.
    pub fn add_to(&self, metadata: &mut Map<String, Value>) {
        if !self.starts.is_empty() {
            metadata.insert("reasoningStartTimes".into(), Value::Object(self.starts.clone()));
        }
        if !self.times.is_empty() {
            metadata.insert("reasoningTime".into(), Value::Object(self.times.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn each_reasoning_part_gets_its_own_key_and_an_answer_without_reasoning_adds_nothing() {
        let mut times = ReasoningTimes::default();
        let mut metadata = Map::new();
        times.add_to(&mut metadata);
        assert!(metadata.is_empty());

        times.start();
        tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
        times.end();
        times.start();
        times.add_to(&mut metadata);
        let starts = metadata["reasoningStartTimes"].as_object().unwrap();
        assert_eq!(starts.keys().collect::<Vec<_>>(), ["reasoning-0", "reasoning-1"]);
        assert!(starts["reasoning-0"].as_u64().unwrap() > 1_700_000_000_000);
        let durations = metadata["reasoningTime"].as_object().unwrap();
        assert_eq!(durations["reasoning-0"], 1200);
        assert!(!durations.contains_key("reasoning-1"), "still open");
    }
}
