//! Client hand-offs kept in the store: the steps of a facade turn its client never saw, written
//! when the turn hands off to the client and put back when the client's next request carries the
//! calls (see `promptgate_turn::client_tools`). In the store, so the next request may reach any
//! instance.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use promptgate_llm::ChatMessage;
use promptgate_store::{HandoffLimits, Store};
use promptgate_turn::client_tools::{Handoff, HandoffKeeper, handoff_keys, restore_handoffs};

use super::ServiceError;

/// How long a client may take to answer its tool calls and still have the hidden steps put back,
/// and how many hand-offs one user keeps.
pub const HANDOFF_LIMITS: HandoffLimits = HandoffLimits {
    ttl: Duration::from_secs(24 * 60 * 60),
    per_user: 1_000,
};
/// The largest hand-off kept (its JSON); a larger one is not kept, and the client's transcript
/// goes on without its hidden steps.
const MAX_HANDOFF_BYTES: usize = 4 << 20;

/// Keeps one user's hand-offs.
pub(crate) struct StoredHandoffs {
    pub store: Store,
    pub user_id: String,
}

impl HandoffKeeper for StoredHandoffs {
    fn keep(&self, handoff: Handoff) -> Pin<Box<dyn Future<Output = bool> + Send>> {
        let store = self.store.clone();
        let user_id = self.user_id.clone();
        Box::pin(async move {
            let body = match serde_json::to_string(&handoff) {
                Ok(body) if body.len() <= MAX_HANDOFF_BYTES => body,
                Ok(body) => {
                    tracing::warn!(bytes = body.len(), "a hand-off is too large to keep");
                    return false;
                }
                Err(err) => {
                    tracing::error!(error = %err, "a hand-off could not be written as JSON");
                    return false;
                }
            };
            match store
                .keep_handoff(&user_id, &handoff.key, &body, HANDOFF_LIMITS)
                .await
            {
                Ok(()) => true,
                Err(err) => {
                    tracing::warn!(error = %err, "a hand-off could not be kept");
                    false
                }
            }
        })
    }
}

/// The client's conversation with the hidden steps of its earlier hand-offs back in place.
pub(crate) async fn restore(
    store: &Store,
    user_id: &str,
    messages: Vec<ChatMessage>,
) -> Result<Vec<ChatMessage>, ServiceError> {
    let keys = handoff_keys(&messages);
    if keys.is_empty() {
        return Ok(messages);
    }
    let kept = store.handoffs(user_id, &keys).await?;
    let handoffs: Vec<Handoff> = kept
        .iter()
        .filter_map(|(key, body)| match serde_json::from_str::<Handoff>(body) {
            Ok(handoff) if &handoff.key == key => Some(handoff),
            Ok(_) | Err(_) => {
                tracing::warn!(
                    key,
                    "a kept hand-off could not be read; the client's transcript stays as sent"
                );
                None
            }
        })
        .collect();
    Ok(restore_handoffs(messages, &handoffs))
}
