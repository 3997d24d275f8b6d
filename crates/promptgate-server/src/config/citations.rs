//! The `[citations]` section: the optional model that takes a second look at the citations the
//! deterministic check did not find supported.

use std::time::Duration;

use promptgate_service::deployment::{
    CitationReviewSettings, DEFAULT_CITATION_REVIEW_MAX, DEFAULT_CITATION_REVIEW_TIMEOUT,
};
use serde::Deserialize;

use crate::config::ConfigError;

/// Citations of one text part the reviewing model may be asked about, at the most.
const MAX_REVIEWED_CITATIONS: usize = 200;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CitationsConfig {
    /// The id of a configured model that reviews uncertain citations; unset, none is reviewed.
    pub review_model: Option<String>,
    /// How long a text part's end waits for the review before the check's classes stand.
    pub review_timeout_secs: u64,
    /// Citations of one text part put to the model.
    pub review_max_citations: usize,
}

impl Default for CitationsConfig {
    fn default() -> Self {
        Self {
            review_model: None,
            review_timeout_secs: DEFAULT_CITATION_REVIEW_TIMEOUT.as_secs(),
            review_max_citations: DEFAULT_CITATION_REVIEW_MAX,
        }
    }
}

impl CitationsConfig {
    /// Refuses a review model that is not one of the configured models, and bounds of zero.
    pub fn validate(&self, model_ids: &[&str]) -> Result<(), ConfigError> {
        if let Some(id) = &self.review_model
            && !model_ids.contains(&id.as_str())
        {
            return Err(ConfigError::Invalid(format!(
                "citations.review_model names {id:?}, which is not the id of a [[models]] entry"
            )));
        }
        if self.review_timeout_secs == 0 {
            return Err(ConfigError::Invalid(
                "citations.review_timeout_secs must be positive".into(),
            ));
        }
        if !(1..=MAX_REVIEWED_CITATIONS).contains(&self.review_max_citations) {
            return Err(ConfigError::Invalid(format!(
                "citations.review_max_citations must be between 1 and {MAX_REVIEWED_CITATIONS}"
            )));
        }
        Ok(())
    }

    pub fn settings(&self) -> CitationReviewSettings {
        CitationReviewSettings {
            model: self.review_model.clone(),
            timeout: Duration::from_secs(self.review_timeout_secs),
            max_citations: self.review_max_citations,
        }
    }
}
