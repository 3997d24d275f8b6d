//! The end of a turn that handed off to the client: the steps the client will not see are kept
//! (see [`crate::client_tools`]) before the client is given its calls.

use crate::client_tools::{ClientToolCall, HandedCall, Handoff, handoff_key, minted_id};

use super::turn::Turn;

impl Turn {
    /// The client calls as the client receives them. When the turn added more to the model's
    /// history than the message that made them (server calls before or beside them), those steps
    /// are kept and the calls get minted ids; when they cannot be kept in time, the calls keep
    /// the model's ids, and the client's transcript will simply lack the hidden steps.
    pub(super) async fn hand_off(&mut self, calls: Vec<ClientToolCall>) -> Vec<ClientToolCall> {
        if calls.is_empty() {
            return calls;
        }
        let messages: Vec<_> = self
            .messages
            .iter()
            .enumerate()
            .skip(self.history_len)
            .filter(|(at, _)| Some(*at) != self.steer_at)
            .map(|(_, message)| message.clone())
            .collect();
        let hidden_steps = messages.len() > 1;
        let (Some(keeper), Some(key), true) = (
            self.plan.client.keeper.clone(),
            handoff_key(&self.plan.turn_id),
            hidden_steps,
        ) else {
            return calls;
        };
        let minted: Vec<ClientToolCall> = calls
            .iter()
            .enumerate()
            .map(|(n, call)| ClientToolCall {
                id: minted_id(&key, n),
                ..call.clone()
            })
            .collect();
        let handoff = Handoff {
            key,
            messages,
            calls: minted
                .iter()
                .zip(&calls)
                .map(|(client, model)| HandedCall {
                    client_id: client.id.clone(),
                    model_id: model.id.clone(),
                })
                .collect(),
        };
        let grace = self.plan.limits.save_grace;
        let kept = self
            .out
            .wait(tokio::time::timeout(grace, keeper.keep(handoff)))
            .await;
        match kept {
            Some(Ok(true)) => minted,
            _ => {
                tracing::warn!(
                    turn = %self.plan.turn_id,
                    "the hand-off's hidden steps were not kept; the client gets the model's ids"
                );
                calls
            }
        }
    }
}
