//! The `[context]` section: how a send fits a thread to its model's context window, and which model
//! (if any) summarises a thread's older part.

use std::time::Duration;

use promptgate_service::deployment::{
    ContextSettings, DEFAULT_ANSWER_RESERVE_TOKENS, DEFAULT_HELD_HISTORY_MIB, DEFAULT_KEPT_AFTER_COMPACTION,
    DEFAULT_SUMMARY_MAX_TOKENS, DEFAULT_SUMMARY_TIMEOUT, DEFAULT_WINDOW_TOKENS,
};
use serde::Deserialize;

use crate::config::ConfigError;

/// The most memory `held_history_mib` may name (64 GiB): a typo, not a plan, beyond it.
const MAX_HELD_HISTORY_MIB: u64 = 1 << 16;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ContextConfig {
    /// The window of a model whose definition has no `context_window`, in tokens.
    pub default_window_tokens: u64,
    /// Tokens kept free for the answer and the turn's tool steps (at most a quarter of a window).
    pub answer_reserve_tokens: u64,
    /// After a compaction, the recent turns kept as they are fill at most this share of the room
    /// left for the conversation, in percent; the rest is summarised or left out.
    pub kept_after_compaction_percent: u8,
    /// The id of a configured model that summarises a thread's older part; unset, that part is left
    /// out with a note the model sees.
    pub summariser: Option<String>,
    /// The longest summary, in tokens.
    pub summary_max_tokens: u64,
    /// How long a compacting send waits for the summariser before it leaves the older part out.
    pub summary_timeout_secs: u64,
    /// Memory for the older part of long threads kept between sends, in MiB, per instance; 0 keeps
    /// nothing (every send reads it from the database).
    pub held_history_mib: u64,
}

impl Default for ContextConfig {
    fn default() -> Self {
        Self {
            default_window_tokens: DEFAULT_WINDOW_TOKENS,
            answer_reserve_tokens: DEFAULT_ANSWER_RESERVE_TOKENS,
            kept_after_compaction_percent: DEFAULT_KEPT_AFTER_COMPACTION,
            summariser: None,
            summary_max_tokens: DEFAULT_SUMMARY_MAX_TOKENS,
            summary_timeout_secs: DEFAULT_SUMMARY_TIMEOUT.as_secs(),
            held_history_mib: DEFAULT_HELD_HISTORY_MIB,
        }
    }
}

impl ContextConfig {
    /// Refuses values that would make every long thread fail, and a summariser that is not one of
    /// the configured models.
    pub fn validate(&self, model_ids: &[&str]) -> Result<(), ConfigError> {
        let positive = [
            ("context.default_window_tokens", self.default_window_tokens),
            ("context.summary_max_tokens", self.summary_max_tokens),
            ("context.summary_timeout_secs", self.summary_timeout_secs),
        ];
        if let Some((key, _)) = positive.iter().find(|(_, value)| *value == 0) {
            return Err(ConfigError::Invalid(format!("{key} must be positive")));
        }
        if self.held_history_mib > MAX_HELD_HISTORY_MIB {
            return Err(ConfigError::Invalid(format!(
                "context.held_history_mib must be at most {MAX_HELD_HISTORY_MIB}"
            )));
        }
        if !(1..=90).contains(&self.kept_after_compaction_percent) {
            return Err(ConfigError::Invalid(
                "context.kept_after_compaction_percent must be between 1 and 90".into(),
            ));
        }
        if let Some(id) = &self.summariser
            && !model_ids.contains(&id.as_str())
        {
            return Err(ConfigError::Invalid(format!(
                "context.summariser names {id:?}, which is not the id of a [[models]] entry"
            )));
        }
        Ok(())
    }

    pub fn settings(&self) -> ContextSettings {
        ContextSettings {
            default_window: self.default_window_tokens,
            answer_reserve: self.answer_reserve_tokens,
            kept_after_compaction: self.kept_after_compaction_percent,
            summariser: self.summariser.clone(),
            summary_max_tokens: self.summary_max_tokens,
            summary_timeout: Duration::from_secs(self.summary_timeout_secs),
            held_history_bytes: usize::try_from(self.held_history_mib << 20).unwrap_or(usize::MAX),
        }
    }
}
