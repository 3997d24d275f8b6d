//! How long the model reasoned, in the message metadata's vocabulary: `reasoningStartTimes` (Unix
//! milliseconds when a reasoning part opened) and `reasoningTime` (milliseconds it stayed open),
//! both keyed `reasoning-<n>` by the part's order in the answer, so a frontend can say "thought
//! for 4 s" under each reasoning part, also when it shows a stored thread.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};
use tokio::time::Instant;

#[derive(Default)]
pub(super) struct ReasoningTimes {
    opened: usize,
    open: Option<(String, Instant)>,
    starts: Map<String, Value>,
    times: Map<String, Value>,
}

impl ReasoningTimes {
    pub fn start(&mut self) {
        let key = format!("reasoning-{}", self.opened);
        self.opened += 1;
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| u64::try_from(since.as_millis()).unwrap_or(u64::MAX));
        self.starts.insert(key.clone(), wall.into());
        // The duration comes from the monotonic clock: a wall clock step must not make it negative.
        self.open = Some((key, Instant::now()));
    }

    pub fn end(&mut self) {
        if let Some((key, since)) = self.open.take() {
            let millis = u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX);
            // A part that opened and closed within the same millisecond has no duration to show.
            if millis > 0 {
                self.times.insert(key, millis.into());
            }
        }
    }

    /// Adds both maps to a metadata snapshot, when the answer has reasoned at all.
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
