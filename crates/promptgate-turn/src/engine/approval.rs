//! Calls that wait for the user: a call of an `ask` tool ends the turn with a
//! `tool-approval-request` (the step's other calls finish first), and a later turn continues the
//! same message with the user's answers, running or refusing each call before the model goes on.

use promptgate_core::approval::{ApprovalPolicy, CANNOT_ASK_TEXT, DENIED_BY_POLICY_TEXT};
use serde_json::{Value, json};

use super::plan::{ApprovalAnswer, PendingApproval, Resume};
use super::step::StreamedCall;
use super::tools::start_call;
use super::turn::{STOPPED_TEXT, Turn};
use crate::history::{HistoryOptions, to_model_messages};
use crate::ui::UiChunk;

/// What the policy makes of a call whose name and arguments were fine.
pub(super) enum Gated {
    Run(Value),
    /// Refused; the model reads this.
    Refused(String),
    /// Waits for the user; its approval request has been sent.
    Waiting(PendingApproval),
}

impl Turn {
    /// Applies the tool's approval policy to a checked call; its `tool-input-available` is out.
    pub(super) async fn gate_call(&mut self, call: &StreamedCall, tool: usize, input: Value) -> Gated {
        match self.plan.tools[tool].approval {
            ApprovalPolicy::Allow => Gated::Run(input),
            ApprovalPolicy::Deny => Gated::Refused(DENIED_BY_POLICY_TEXT.to_owned()),
            ApprovalPolicy::Ask if !self.plan.can_ask_approval => Gated::Refused(CANNOT_ASK_TEXT.to_owned()),
            ApprovalPolicy::Ask => {
                let pending = PendingApproval {
                    approval_id: format!("approval-{}-{}", self.plan.turn_id, call.id),
                    tool_call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    input,
                };
                self.out
                    .emit(UiChunk::ToolApprovalRequest {
                        approval_id: pending.approval_id.clone(),
                        tool_call_id: pending.tool_call_id.clone(),
                    })
                    .await;
                Gated::Waiting(pending)
            }
        }
    }

    /// Finishes the calls the continued message waited for, then puts the message as the model
    /// saw it (with those calls' results) into the conversation.
    pub(super) async fn resume(&mut self, resume: Resume) {
        let mut parts = resume.parts;
        for answer in &resume.answers {
            self.out.record_approval(
                &answer.pending.tool_call_id,
                answer.approved,
                answer.reason.as_deref(),
            );
            let result = self.answer_call(answer).await;
            settle_part(&mut parts, &answer.pending.tool_call_id, result);
        }
        self.emit_new_sources().await;
        let message = json!({"role": "assistant", "parts": parts});
        self.messages
            .extend(to_model_messages(&[message], HistoryOptions::default()));
        self.made_tool_calls = true;
        self.after_tool_step = true;
        self.out.checkpoint();
    }

    /// Runs an approved call (or refuses one that is not), streaming its outcome; returns what the
    /// model reads: `Ok` a result, `Err` an error or refusal.
    async fn answer_call(&mut self, answer: &ApprovalAnswer) -> Result<String, String> {
        let call = &answer.pending;
        let dynamic = self.dynamic_flag(&call.tool_name);
        if !answer.approved {
            self.out
                .emit(UiChunk::ToolOutputDenied {
                    tool_call_id: call.tool_call_id.clone(),
                })
                .await;
            return Err(answer.refusal.clone());
        }
        let Some(tool) = self
            .plan
            .tools
            .iter()
            .position(|tool| tool.spec.name == call.tool_name)
        else {
            let error = format!(
                "the tool `{}` is no longer available, so the approved call was not run",
                call.tool_name
            );
            self.emit_tool_error(&call.tool_call_id, error.clone(), dynamic)
                .await;
            return Err(error);
        };
        let prepared = &self.plan.tools[tool];
        let running = start_call(
            prepared,
            call.input.clone(),
            self.plan.hooks.as_ref(),
            &self.plan.tool_cache,
            self.plan.limits.tool_timeout,
        );
        let result = match self.out.wait(running).await {
            None => {
                self.emit_tool_error(&call.tool_call_id, STOPPED_TEXT.to_owned(), dynamic)
                    .await;
                return Err(STOPPED_TEXT.to_owned());
            }
            Some(result) => result,
        };
        match result {
            Ok(output) => {
                let text = self.plan.hooks.model_text(&self.plan.tools[tool].spec, &output);
                self.out
                    .emit(UiChunk::ToolOutputAvailable {
                        tool_call_id: call.tool_call_id.clone(),
                        output: output.output,
                        dynamic,
                    })
                    .await;
                Ok(text)
            }
            Err(err) => {
                let text = err.to_string();
                self.emit_tool_error(&call.tool_call_id, text.clone(), dynamic)
                    .await;
                Err(text)
            }
        }
    }
}

/// Gives the stored part of an answered call the result the model reads, so the message converts
/// into the conversation like any finished step.
fn settle_part(parts: &mut [Value], tool_call_id: &str, result: Result<String, String>) {
    let Some(Value::Object(part)) = parts
        .iter_mut()
        .find(|part| part.get("toolCallId").and_then(Value::as_str) == Some(tool_call_id))
    else {
        return;
    };
    match result {
        Ok(text) => {
            part.insert("state".into(), "output-available".into());
            part.insert("output".into(), Value::String(text));
        }
        Err(text) => {
            part.insert("state".into(), "output-error".into());
            part.insert("errorText".into(), Value::String(text));
        }
    }
}
