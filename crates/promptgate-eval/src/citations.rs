//! The citation measures of an eval: how many of an answer's citations the cited page supports
//! (precision), how many named no source and were removed (dangling), and how many cite a page the
//! turn only saw as a search snippet. They come from the counts the engine stores with the answer.

use promptgate_core::citations::check::CitationCounts;
use serde::Serialize;

/// The three rates of one answer or of a whole run; `None` where nothing was counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CitationRates {
    /// Supported citations over all kept citations.
    pub precision: Option<f64>,
    /// Removed citations over all citations written (kept and removed).
    pub dangling_rate: Option<f64>,
    /// Snippet-only citations over all kept citations.
    pub snippet_only_rate: Option<f64>,
}

impl CitationRates {
    pub fn of(counts: &CitationCounts) -> Self {
        let share = |part: u32, whole: u32| (whole > 0).then(|| f64::from(part) / f64::from(whole));
        Self {
            precision: share(counts.supported, counts.total),
            dangling_rate: share(counts.dangling, counts.total + counts.dangling),
            snippet_only_rate: share(counts.snippet_only, counts.total),
        }
    }
}

/// The counts of several answers together.
pub fn sum<'a>(counts: impl IntoIterator<Item = &'a CitationCounts>) -> CitationCounts {
    counts.into_iter().fold(CitationCounts::default(), |mut all, c| {
        all.total += c.total;
        all.supported += c.supported;
        all.weak += c.weak;
        all.unsupported += c.unsupported;
        all.snippet_only += c.snippet_only;
        all.dangling += c.dangling;
        all
    })
}

/// A rate as the table prints it: a percentage, or `-` when there was nothing to count.
pub fn percent(rate: Option<f64>) -> String {
    rate.map_or_else(|| "-".to_owned(), |r| format!("{:.0}%", r * 100.0))
}
