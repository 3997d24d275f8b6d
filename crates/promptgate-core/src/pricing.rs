//! What a model's tokens cost, from the deployment's price table (per million tokens, in whatever
//! currency the operator writes the table in). A model without a price has no cost: its tokens
//! still count, and reports say how many requests their cost leaves out.

use std::collections::HashMap;

/// One model's prices per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    /// Prompt tokens read from the provider's cache; the input price when the table has none.
    pub cached_input: Option<f64>,
}

/// Tokens as a turn spent them, for [`Price::cost`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spent {
    /// Every prompt token, the cached ones included.
    pub input: u64,
    /// Of `input`, those read from the cache.
    pub cached_input: u64,
    /// Every output token (reasoning included where the provider counts it there).
    pub output: u64,
}

impl Price {
    /// The cost of `spent`: uncached input at the input price, cache reads at the cached price,
    /// output at the output price. Cache writes are input tokens (Anthropic's surcharge on them is
    /// not in the table).
    pub fn cost(&self, spent: Spent) -> f64 {
        let cached = spent.cached_input.min(spent.input);
        let uncached = spent.input - cached;
        let cached_price = self.cached_input.unwrap_or(self.input);
        (uncached as f64 * self.input + cached as f64 * cached_price + spent.output as f64 * self.output)
            / 1_000_000.0
    }
}

/// Prices by model id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceTable(pub HashMap<String, Price>);

impl PriceTable {
    pub fn price(&self, model_id: &str) -> Option<Price> {
        self.0.get(model_id).copied()
    }

    /// The cost of `spent` on `model_id`; `None` when the model has no price.
    pub fn cost(&self, model_id: &str, spent: Spent) -> Option<f64> {
        self.price(model_id).map(|price| price.cost(spent))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_input_is_charged_at_its_own_price_and_unpriced_models_cost_nothing_known() {
        let mut table = PriceTable::default();
        table.0.insert(
            "gpt".to_owned(),
            Price {
                input: 2.0,
                output: 8.0,
                cached_input: Some(0.5),
            },
        );
        table.0.insert(
            "plain".to_owned(),
            Price {
                input: 2.0,
                output: 8.0,
                cached_input: None,
            },
        );
        let spent = Spent {
            input: 1_000_000,
            cached_input: 400_000,
            output: 500_000,
        };
        // 600k uncached at 2, 400k cached at 0.5, 500k out at 8.
        assert_eq!(table.cost("gpt", spent), Some(5.4));
        assert_eq!(table.cost("plain", spent), Some(6.0));
        assert_eq!(table.cost("other", spent), None);
    }
}
