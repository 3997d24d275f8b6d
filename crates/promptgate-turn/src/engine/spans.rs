//! The turn's trace spans, named and attributed as the OpenTelemetry GenAI semantic conventions
//! (v1.41.0) say: the agent invocation (`invoke_agent promptgate`), each model call
//! (`chat {model}`) and each tool call (`execute_tool {name}`).
//!
//! The agent and model-call spans are made with the OpenTelemetry tracer directly (see
//! [`crate::trace`] for why), their attributes set in one call when the span is made and one when
//! it ends; they exist only while spans are exported. The tool spans are `tracing` spans on the
//! `promptgate::otel` target, which the log output leaves out: when the exporter is off their
//! callsite is disabled, so a turn pays a check per tool call and nothing more. They are given the
//! agent span as their parent explicitly, and the spans made under them (web, MCP, store) find them
//! as `tracing` parents. Message content and tool arguments are recorded only when the operator
//! asks (see `span_content`).

use opentelemetry::trace::{SpanBuilder, SpanKind, Status, TraceContextExt};
use opentelemetry::{Context, KeyValue};
use promptgate_core::tools::ToolSpec;
use promptgate_llm::{FinishReason, LlmError, Usage};
use tracing::Span;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::plan::{TurnOutcome, TurnPlan};
use crate::trace;

/// The agent's name in `gen_ai.agent.name`.
const AGENT_NAME: &str = "promptgate";

/// An exported span made with the tracer, as the context the work under it runs in; empty when
/// nothing is exported. The span ends when the last clone is dropped.
#[derive(Debug, Clone, Default)]
pub(super) struct TraceSpan(Option<Context>);

impl TraceSpan {
    /// The context to attach for the work under the span.
    pub(super) fn context(&self) -> Option<&Context> {
        self.0.as_ref()
    }

    /// Lends the context to the work under the span, leaving this empty (see `Turn::chat_span`).
    pub(super) fn take(&mut self) -> Option<Context> {
        self.0.take()
    }

    /// Gives the lent context back.
    pub(super) fn put_back(&mut self, context: Option<Context>) {
        self.0 = context;
    }

    /// Sets one attribute, when the span is exported.
    pub(super) fn set(&self, attribute: impl FnOnce() -> KeyValue) {
        if let Some(context) = &self.0 {
            context.span().set_attribute(attribute());
        }
    }
}

/// The span of a whole turn, under the span current where the turn is prepared (the request's).
pub(super) fn agent(plan: &TurnPlan) -> TraceSpan {
    TraceSpan(trace::start_here(|| {
        // Room for what `record_outcome` adds: the totals, the status, the finish reason, an error.
        SpanBuilder::from_name("invoke_agent promptgate").with_attributes(trace::with_room(
            [
                KeyValue::new("gen_ai.operation.name", "invoke_agent"),
                KeyValue::new("gen_ai.provider.name", plan.model.provider_name()),
                KeyValue::new("gen_ai.agent.name", AGENT_NAME),
                KeyValue::new("gen_ai.request.model", plan.upstream_model.clone()),
                KeyValue::new("promptgate.model.id", plan.model_id.clone()),
                KeyValue::new("promptgate.turn.id", plan.turn_id.clone()),
            ],
            5,
        ))
    }))
}

/// Totals and the end of a turn, on its span.
pub(super) fn record_outcome(span: &TraceSpan, outcome: &TurnOutcome) {
    let Some(context) = span.context() else {
        return;
    };
    let mut attributes = vec![
        KeyValue::new(
            "gen_ai.usage.input_tokens",
            count(outcome.usage_total.prompt_tokens),
        ),
        KeyValue::new(
            "gen_ai.usage.output_tokens",
            count(outcome.usage_total.completion_tokens),
        ),
        KeyValue::new("promptgate.turn.status", outcome.status.as_str()),
    ];
    if let Some(reason) = outcome.finish_reason {
        attributes.push(KeyValue::new("gen_ai.response.finish_reasons", reason.as_str()));
    }
    set_at_end(
        context,
        attributes,
        outcome.error.is_some().then_some("turn_error"),
    );
}

/// The span of one model call (a client span: the request goes to the upstream), under the turn's.
pub(super) fn chat(agent: &TraceSpan, plan: &TurnPlan) -> TraceSpan {
    let Some(agent) = agent.context() else {
        return TraceSpan::default();
    };
    TraceSpan(trace::start(agent, || {
        SpanBuilder::from_name(format!("chat {}", plan.upstream_model))
            .with_kind(SpanKind::Client)
            // Room for what `record_chat` adds: five token counts, the finish reason, an error.
            .with_attributes(trace::with_room(
                [
                    KeyValue::new("gen_ai.operation.name", "chat"),
                    KeyValue::new("gen_ai.provider.name", plan.model.provider_name()),
                    KeyValue::new("gen_ai.request.model", plan.upstream_model.clone()),
                    KeyValue::new(
                        "gen_ai.request.stream",
                        !(plan.policy.whole_answers && plan.model.answers_whole()),
                    ),
                ],
                7,
            ))
    }))
}

/// What one model call produced, on its span: the finish reason and the token counts, or why it failed.
pub(super) fn record_chat(
    span: &TraceSpan,
    usage: Option<&Usage>,
    finish: Option<&FinishReason>,
    failure: Option<&LlmError>,
) {
    let Some(context) = span.context() else {
        return;
    };
    let mut attributes = Vec::new();
    if let Some(usage) = usage {
        let counts = [
            ("gen_ai.usage.input_tokens", Some(usage.prompt_tokens)),
            ("gen_ai.usage.output_tokens", Some(usage.completion_tokens)),
            ("gen_ai.usage.cache_read.input_tokens", usage.cached_tokens),
            (
                "gen_ai.usage.cache_creation.input_tokens",
                usage.cache_write_tokens,
            ),
            ("gen_ai.usage.reasoning.output_tokens", usage.reasoning_tokens),
        ];
        for (key, tokens) in counts {
            if let Some(tokens) = tokens {
                attributes.push(KeyValue::new(key, count(tokens)));
            }
        }
    }
    if let Some(finish) = finish {
        let reason = match finish {
            FinishReason::Other(other) => KeyValue::new("gen_ai.response.finish_reasons", other.clone()),
            known => KeyValue::new("gen_ai.response.finish_reasons", known_finish_reason(known)),
        };
        attributes.push(reason);
    }
    set_at_end(context, attributes, failure.map(llm_error_type));
}

/// Sets `attributes` on the OpenTelemetry span of `context`, and marks it failed with
/// `error_type` when there is one.
fn set_at_end(context: &Context, mut attributes: Vec<KeyValue>, error_type: Option<&'static str>) {
    let otel_span = context.span();
    if let Some(error_type) = error_type {
        attributes.push(KeyValue::new("error.type", error_type));
        otel_span.set_status(Status::error(""));
    }
    otel_span.set_attributes(attributes);
}

/// The span of one tool call. `gen_ai.tool.type` is the conventions' coarse kind (an MCP tool is an
/// `extension`, anything else a `function`); `promptgate.tool.origin` says where it runs. Under the
/// turn's span.
pub(super) fn tool(agent: &TraceSpan, spec: &ToolSpec, call_id: &str) -> Span {
    let origin = promptgate_core::tools::origin(spec);
    let span = tracing::info_span!(
        target: "promptgate::otel",
        "execute_tool",
        otel.name = format!("execute_tool {}", spec.name),
        "gen_ai.operation.name" = "execute_tool",
        "gen_ai.tool.name" = spec.name.as_str(),
        "gen_ai.tool.call.id" = call_id,
        "gen_ai.tool.type" = if spec.mcp.is_some() { "extension" } else { "function" },
        "promptgate.tool.origin" = origin,
        "promptgate.mcp.server" = spec.mcp.as_ref().map(|mcp| mcp.name.as_str()),
        "gen_ai.tool.call.arguments" = Empty,
        "gen_ai.tool.call.result" = Empty,
        "error.type" = Empty,
        otel.status_code = Empty,
    );
    if let Some(agent) = agent.context() {
        // Before anything starts the span on the exporter's side, which would fix its parent.
        let _ = span.set_parent(agent.clone());
    }
    span
}

/// A failed tool call, on its span.
pub(super) fn record_tool_error(span: &Span, error: &promptgate_core::tools::ToolError) {
    use promptgate_core::tools::ToolError;
    let kind = match error {
        ToolError::InvalidArguments(_) => "invalid_arguments",
        ToolError::Failed(_) => "tool_error",
        ToolError::Unauthorized(_) => "unauthorized",
        ToolError::TimedOut(_) => "timeout",
        ToolError::Cancelled => "cancelled",
    };
    span.record("error.type", kind);
    span.record("otel.status_code", "error");
}

pub(super) fn finish_reason(reason: &FinishReason) -> &str {
    match reason {
        FinishReason::Other(other) => other.as_str(),
        known => known_finish_reason(known),
    }
}

/// The conventions' name of a finish reason the API knows, static so the span borrows it (an
/// `Other` reason is its own text: empty here).
fn known_finish_reason(reason: &FinishReason) -> &'static str {
    match reason {
        FinishReason::Stop => "stop",
        FinishReason::Length => "length",
        FinishReason::ToolCalls => "tool_calls",
        FinishReason::ContentFilter => "content_filter",
        FinishReason::Other(_) => "",
    }
}

fn llm_error_type(error: &LlmError) -> &'static str {
    match error {
        LlmError::Connect(_) => "connect",
        LlmError::Status { .. } => "http_status",
        LlmError::ContextTooLong(_) => "context_too_long",
        LlmError::Timeout { .. } => "timeout",
        LlmError::Cancelled => "cancelled",
        LlmError::Protocol(_) => "protocol",
    }
}

/// A token count as a signed integer: the exporter sends unsigned values as strings, and the
/// conventions ask for ints.
fn count(tokens: u64) -> i64 {
    i64::try_from(tokens).unwrap_or(i64::MAX)
}
