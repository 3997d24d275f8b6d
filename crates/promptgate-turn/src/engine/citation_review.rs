//! The second look at a text part's citations, when the turn has a reviewing model: the claims the
//! check did not find supported go to the model in one request, and its verdicts replace the
//! check's classes. A review that fails, runs out of time or is stopped leaves the check's classes
//! as they were; the part's end waits for it at most the configured time.

use promptgate_core::citations::check::Citation;
use promptgate_core::citations::review::{
    REVIEW_INSTRUCTIONS, apply_verdicts, candidates, parse_verdicts, review_task,
};
use promptgate_llm::{ChatMessage, ChatRequest, UserContent, answer_text};
use tokio_util::sync::CancellationToken;

use super::plan::CitationReview;

/// Tokens a verdict list may take: a few per item and the JSON around them.
const VERDICT_TOKENS_PER_ITEM: u64 = 8;
const VERDICT_TOKENS_BASE: u64 = 64;

/// Puts the uncertain citations of `text` (one text part) to the reviewing model.
pub(super) async fn review_citations(
    review: &CitationReview,
    text: &str,
    citations: &mut [Citation],
    cancel: &CancellationToken,
) {
    let asked = candidates(citations, review.max_citations);
    if asked.is_empty() {
        return;
    }
    let request = ChatRequest {
        model: review.upstream_model.clone(),
        messages: vec![
            ChatMessage::System {
                content: REVIEW_INSTRUCTIONS.to_owned(),
            },
            ChatMessage::User {
                content: UserContent::Text(review_task(text, citations, &asked)),
            },
        ],
        temperature: Some(0.0),
        max_output_tokens: Some(VERDICT_TOKENS_BASE + VERDICT_TOKENS_PER_ITEM * asked.len() as u64),
        ..ChatRequest::default()
    };
    let answer = tokio::select! {
        answer = tokio::time::timeout(review.timeout, answer_text(review.model.as_ref(), request)) => answer,
        () = cancel.cancelled() => return,
    };
    let verdicts = match answer {
        Ok(Ok(answer)) => parse_verdicts(&answer, asked.len()),
        Ok(Err(err)) => {
            tracing::warn!(error = %err, "the citation review failed; the check's classes stand");
            return;
        }
        Err(_) => {
            tracing::warn!(
                timeout_secs = review.timeout.as_secs(),
                "the citation review did not answer in time; the check's classes stand"
            );
            return;
        }
    };
    match verdicts {
        Some(verdicts) => apply_verdicts(citations, &asked, &verdicts),
        None => {
            tracing::warn!("the citation review's answer had no usable verdicts; the check's classes stand")
        }
    }
}
