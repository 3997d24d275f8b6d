//! Answers to tool approvals: checked against the calls the thread waits for (kept in the store,
//! so any instance, after any restart, checks the same), then turned into the [`Resume`] that
//! continues the waiting message. A thread with a call waiting takes no other send; Stop cancels
//! the wait and closes the message.

use promptgate_core::approval::{EXPIRED_TEXT, denied_text};
use promptgate_store::{MessageStatus, Role, SendChecks, SendContext, StoredApproval};
use promptgate_turn::engine::{ApprovalAnswer, PendingApproval, Resume};
use serde_json::Value;

use crate::{Service, ServiceError};

/// Most answers one request may carry (a step makes at most 32 calls).
pub const MAX_APPROVAL_REPLIES: usize = 32;
/// Longest reason a user may give.
pub const MAX_APPROVAL_REASON: usize = 2_000;
/// The reason a call's part keeps when its approval ran out.
const EXPIRED_REASON: &str = "the approval expired";
/// The reason a call's part keeps when Stop cancelled its approval.
const CANCELLED_REASON: &str = "stopped";

/// The user's answer to one waiting call.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalReply {
    pub approval_id: String,
    pub approved: bool,
    pub reason: Option<String>,
    /// The call the client says it answers (`useChat` sends the part's); checked when given.
    pub tool_call_id: Option<String>,
    /// The input the client says it approves; checked when given, so an approval cannot be moved
    /// to other arguments.
    pub input: Option<Value>,
}

impl Service {
    /// The calls the thread waits for (none for a thread that is not the user's).
    pub async fn waiting_approvals(
        &self,
        user_id: &str,
        thread_id: &str,
    ) -> Result<Vec<StoredApproval>, ServiceError> {
        let waiting = self.store.pending_approvals(user_id, thread_id).await?;
        self.waiting_in_known_thread(user_id, thread_id, waiting).await
    }

    /// What the thread waits for, as read for the user; an empty read is `UnknownThread` unless
    /// the thread is the user's, since it cannot tell a thread waiting for nothing from another
    /// user's.
    pub(crate) async fn waiting_in_known_thread<T>(
        &self,
        user_id: &str,
        thread_id: &str,
        waiting: Vec<T>,
    ) -> Result<Vec<T>, ServiceError> {
        if waiting.is_empty() {
            self.known_thread(user_id, thread_id).await?;
        }
        Ok(waiting)
    }

    /// `UnknownThread` unless the thread is the user's: what answering or listing another user's
    /// (or no) thread gets.
    pub(crate) async fn known_thread(&self, user_id: &str, thread_id: &str) -> Result<(), ServiceError> {
        match self.store.get_thread(user_id, thread_id).await? {
            Some(_) => Ok(()),
            None => Err(ServiceError::UnknownThread(thread_id.to_owned())),
        }
    }

    /// Refuses a new message while a call of the thread waits for its approval (one whose time
    /// ran out no longer holds the thread). `known` is what the send's load read about it, in the
    /// same statement as the thread; without it the store is asked.
    pub(crate) async fn refuse_while_waiting(
        &self,
        user_id: &str,
        thread_id: &str,
        known: Option<SendChecks>,
    ) -> Result<(), ServiceError> {
        let waiting = match known {
            Some(checks) => checks.approval_waiting,
            None => self
                .store
                .pending_approvals(user_id, thread_id)
                .await?
                .iter()
                .any(|approval| !approval.expired),
        };
        if waiting {
            return Err(ServiceError::ApprovalPending(thread_id.to_owned()));
        }
        Ok(())
    }

    /// The message the answers are for: the one whose calls wait, which must be one of them.
    pub(crate) async fn waiting_message(
        &self,
        user_id: &str,
        thread_id: &str,
        replies: &[ApprovalReply],
    ) -> Result<(String, Vec<StoredApproval>), ServiceError> {
        let waiting = self.waiting_approvals(user_id, thread_id).await?;
        let Some(first) = replies.first() else {
            return Err(ServiceError::InvalidMessage(
                "the request answers no approval".to_owned(),
            ));
        };
        let Some(known) = waiting.iter().find(|a| a.approval_id == first.approval_id) else {
            return Err(ServiceError::ApprovalRefused(format!(
                "approval {} is not waiting in this thread: it is unknown, was answered before, or was cancelled",
                short(&first.approval_id)
            )));
        };
        let message_id = known.message_id.clone();
        let of_message = waiting
            .into_iter()
            .filter(|a| a.message_id == message_id)
            .collect();
        Ok((message_id, of_message))
    }

    /// Checks the replies against the message's waiting calls, takes those calls out of the
    /// store (once: a replay or a second device finds them gone) and takes the waiting message
    /// off the conversation's end, where the turn continues it.
    pub(crate) async fn take_approvals(
        &self,
        user_id: &str,
        thread_id: &str,
        ctx: &mut SendContext,
        waiting: Vec<StoredApproval>,
        replies: &[ApprovalReply],
    ) -> Result<Resume, ServiceError> {
        let answers = match_replies(&waiting, replies)?;
        let message_id = waiting.first().map(|a| a.message_id.clone()).unwrap_or_default();
        let ends_with_it = ctx
            .tail
            .messages
            .last()
            .is_some_and(|m| m.id == message_id && m.role == Role::Assistant);
        if !ends_with_it {
            return Err(ServiceError::ApprovalRefused(
                "the message that asked is no longer the thread's last".to_owned(),
            ));
        }
        let ids: Vec<String> = waiting.iter().map(|a| a.approval_id.clone()).collect();
        if !self.store.use_approvals(user_id, thread_id, &ids).await? {
            return Err(ServiceError::ApprovalRefused(
                "the approval was answered meanwhile (another device or request)".to_owned(),
            ));
        }
        let message = ctx
            .tail
            .messages
            .pop()
            .ok_or_else(|| ServiceError::ApprovalRefused("the message that asked is gone".to_owned()))?;
        // Read by this send only (nothing holds a thread's newest messages): no copy is made.
        let message = std::sync::Arc::unwrap_or_clone(message);
        Ok(Resume {
            parts: message.parts.as_array().cloned().unwrap_or_default(),
            metadata: message.metadata,
            answers,
        })
    }

    /// Stop on a thread that waits for approvals: the wait ends, each call reads as denied, and
    /// the message is closed as stopped. True when something was waiting.
    pub(crate) async fn cancel_waiting(&self, user_id: &str, thread_id: &str) -> Result<bool, ServiceError> {
        let cancelled = self.store.cancel_approvals(user_id, thread_id).await?;
        let Some(first) = cancelled.first() else {
            return Ok(false);
        };
        let messages = self.store.list_messages(user_id, thread_id).await?;
        if let Some(message) = messages.iter().find(|m| m.id == first.message_id) {
            let mut parts = message.parts.clone();
            if let Some(parts) = parts.as_array_mut() {
                for approval in &cancelled {
                    deny_part(parts, &approval.tool_call_id, CANCELLED_REASON);
                }
            }
            self.store
                .update_message(
                    user_id,
                    &message.id,
                    &parts,
                    &message.metadata,
                    Some(MessageStatus::Stopped),
                )
                .await?;
        }
        tracing::info!(
            thread = thread_id,
            approvals = cancelled.len(),
            "stop cancelled waiting approvals"
        );
        Ok(true)
    }
}

/// Each waiting call with its reply: every one needs exactly one, bound to its call and input.
fn match_replies(
    waiting: &[StoredApproval],
    replies: &[ApprovalReply],
) -> Result<Vec<ApprovalAnswer>, ServiceError> {
    let refused = |text: String| Err(ServiceError::ApprovalRefused(text));
    if let Some(stray) = replies
        .iter()
        .find(|reply| !waiting.iter().any(|a| a.approval_id == reply.approval_id))
    {
        return refused(format!(
            "approval {} is not waiting with the others of this message",
            short(&stray.approval_id)
        ));
    }
    let mut answers = Vec::with_capacity(waiting.len());
    for approval in waiting {
        let mut matching = replies.iter().filter(|r| r.approval_id == approval.approval_id);
        let (Some(reply), None) = (matching.next(), matching.next()) else {
            return refused(format!(
                "approval {} needs exactly one answer: every call waiting in the message is answered together",
                approval.approval_id
            ));
        };
        let input: Value = serde_json::from_str(&approval.input).unwrap_or(Value::Null);
        if reply
            .tool_call_id
            .as_ref()
            .is_some_and(|id| *id != approval.tool_call_id)
            || reply.input.as_ref().is_some_and(|given| *given != input)
        {
            return refused(format!(
                "approval {} was asked for another call or other input than this answer names",
                approval.approval_id
            ));
        }
        let (approved, reason, refusal) = if approval.expired {
            (false, Some(EXPIRED_REASON.to_owned()), EXPIRED_TEXT.to_owned())
        } else {
            let reason = reply.reason.clone().filter(|r| !r.trim().is_empty());
            let refusal = denied_text(reason.as_deref());
            (reply.approved, reason, refusal)
        };
        answers.push(ApprovalAnswer {
            pending: PendingApproval {
                approval_id: approval.approval_id.clone(),
                tool_call_id: approval.tool_call_id.clone(),
                tool_name: approval.tool_name.clone(),
                input,
            },
            approved,
            reason,
            refusal,
        });
    }
    Ok(answers)
}

/// Marks a stored call part denied, as a `tool-output-denied` would have.
fn deny_part(parts: &mut [Value], tool_call_id: &str, reason: &str) {
    if let Some(Value::Object(part)) = parts
        .iter_mut()
        .find(|part| part.get("toolCallId").and_then(Value::as_str) == Some(tool_call_id))
    {
        part.insert("state".into(), "output-denied".into());
        let mut approval = part
            .get("approval")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        approval.insert("approved".into(), false.into());
        approval.insert("reason".into(), reason.into());
        part.insert("approval".into(), Value::Object(approval));
    }
}

/// An id as an error message repeats it: never longer than a line.
fn short(id: &str) -> String {
    match id.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &id[..cut]),
        None => id.to_owned(),
    }
}
