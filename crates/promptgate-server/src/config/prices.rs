//! `[[prices]]`: what the deployment's models cost per million tokens, for the usage ledger. A
//! model without an entry counts its tokens with cost unknown. Only the operator sets prices: a
//! user's own models are never priced, whatever provider they use.

use promptgate_service::deployment::{Price, PriceTable};
use serde::Deserialize;

use super::ConfigError;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceEntry {
    /// The id of a `[[models]]` entry.
    pub model: String,
    /// Per million prompt tokens not read from the cache.
    pub input: f64,
    /// Per million output tokens (reasoning included).
    pub output: f64,
    /// Per million prompt tokens read from the cache; the input price when left out.
    #[serde(default)]
    pub cached_input: Option<f64>,
}

/// The table the service prices turns with; an error names an entry that cannot be right.
pub fn table(entries: &[PriceEntry], model_ids: &[&str]) -> Result<PriceTable, ConfigError> {
    let mut table = PriceTable::default();
    for entry in entries {
        if !model_ids.contains(&entry.model.as_str()) {
            return Err(ConfigError::Invalid(format!(
                "[[prices]] names model {}, which is not a configured model",
                entry.model
            )));
        }
        let prices = [Some(entry.input), Some(entry.output), entry.cached_input];
        if prices.into_iter().flatten().any(|p| !p.is_finite() || p < 0.0) {
            return Err(ConfigError::Invalid(format!(
                "[[prices]] of model {}: prices must be zero or more",
                entry.model
            )));
        }
        let price = Price {
            input: entry.input,
            output: entry.output,
            cached_input: entry.cached_input,
        };
        if table.0.insert(entry.model.clone(), price).is_some() {
            return Err(ConfigError::Invalid(format!(
                "[[prices]] prices model {} twice",
                entry.model
            )));
        }
    }
    Ok(table)
}
