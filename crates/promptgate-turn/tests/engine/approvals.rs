//! Tool approval: a call of an `ask` tool ends the turn with an approval request once the step's
//! other calls finished; the answer continues the same message, running or refusing the call.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use promptgate_core::approval::{ApprovalPolicy, CANNOT_ASK_TEXT, DENIED_BY_POLICY_TEXT};
use promptgate_llm::ChatMessage;
use promptgate_turn::{ApprovalAnswer, Resume, RunnableTool, UiChunk, UiFinishReason};
use serde_json::{Value, json};

use crate::support::*;

fn gated(name: &str, executor: Arc<Echo>, approval: ApprovalPolicy) -> RunnableTool {
    RunnableTool {
        approval,
        ..tool(spec(name, None, false), executor)
    }
}

/// A turn whose `delete` asks and whose `lookup` runs, for a client that can answer.
fn asking_plan(model: Arc<ScriptedModel>, delete: Arc<Echo>, lookup: Arc<Echo>) -> promptgate_turn::TurnPlan {
    let mut plan = plan(
        model,
        vec![
            gated("delete", delete, ApprovalPolicy::Ask),
            gated("lookup", lookup, ApprovalPolicy::Allow),
        ],
    );
    plan.can_ask_approval = true;
    plan
}

fn part<'a>(parts: &'a [Value], call: &str) -> &'a Value {
    parts
        .iter()
        .find(|part| part["toolCallId"] == call)
        .unwrap_or_else(|| panic!("no part for {call} in {parts:#?}"))
}

async fn paused_turn(delete: Arc<Echo>, lookup: Arc<Echo>) -> Finished {
    let model = ScriptedModel::new(vec![tool_calls(&[
        ("c1", "delete", r#"{"path":"a.txt"}"#),
        ("c2", "lookup", r#"{"q":"x"}"#),
    ])]);
    run(asking_plan(model, delete, lookup)).await
}

#[tokio::test(start_paused = true)]
async fn an_asking_call_ends_the_turn_after_the_steps_other_calls_finished() {
    let (delete, lookup) = (Arc::new(Echo::default()), Arc::new(Echo::default()));
    let done = paused_turn(delete.clone(), lookup.clone()).await;

    assert_eq!(
        delete.calls.load(Ordering::SeqCst),
        0,
        "nothing is deleted before the user says so"
    );
    assert_eq!(lookup.calls.load(Ordering::SeqCst), 1);
    let kinds = types(&done.chunks);
    let request = kinds.iter().position(|k| k == "tool-approval-request").unwrap();
    let input = done
        .chunks
        .iter()
        .position(|c| matches!(c, UiChunk::ToolInputAvailable { tool_call_id, .. } if tool_call_id == "c1"))
        .unwrap();
    let other = done
        .chunks
        .iter()
        .position(|c| matches!(c, UiChunk::ToolOutputAvailable { tool_call_id, .. } if tool_call_id == "c2"))
        .unwrap();
    let finish = kinds.iter().position(|k| k == "finish").unwrap();
    assert!(input < request && other < finish && request < finish, "{kinds:?}");
    assert_eq!(kinds[finish - 1], "finish-step");
    assert_eq!(done.outcome.finish_reason, Some(UiFinishReason::ToolCalls));

    let pending = &done.outcome.pending_approvals;
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].tool_call_id, "c1");
    assert_eq!(pending[0].tool_name, "delete");
    assert_eq!(pending[0].input, json!({"path": "a.txt"}));
    let stored = part(&done.outcome.parts, "c1");
    assert_eq!(stored["state"], "approval-requested");
    assert_eq!(stored["approval"]["id"], json!(pending[0].approval_id));
    assert_eq!(part(&done.outcome.parts, "c2")["state"], "output-available");
}

async fn continued(approved: bool, reason: Option<&str>) -> (Finished, Arc<Echo>, Arc<ScriptedModel>) {
    let (delete, lookup) = (Arc::new(Echo::default()), Arc::new(Echo::default()));
    let first = paused_turn(delete.clone(), lookup.clone()).await;
    let model = ScriptedModel::new(vec![answer(&["Done."])]);
    let mut plan = asking_plan(model.clone(), delete.clone(), lookup);
    plan.turn_id = "turn2".into();
    plan.resume = Some(Resume {
        parts: first.outcome.parts.clone(),
        metadata: first.outcome.metadata.clone(),
        answers: vec![ApprovalAnswer {
            pending: first.outcome.pending_approvals[0].clone(),
            approved,
            reason: reason.map(str::to_owned),
            refusal: format!("REFUSED: {}", reason.unwrap_or("-")),
        }],
    });
    (run_continued(plan).await, delete, model)
}

#[tokio::test(start_paused = true)]
async fn an_approved_call_runs_and_the_same_message_goes_on() {
    let (done, delete, model) = continued(true, None).await;

    assert_eq!(delete.calls.load(Ordering::SeqCst), 1);
    let kinds = types(&done.chunks);
    assert_eq!(
        &kinds[..3],
        ["start", "tool-output-available", "start-step"],
        "{kinds:?}"
    );
    assert!(matches!(&done.chunks[0], UiChunk::Start { message_id: Some(id), .. } if id == "msg1"));
    // The model reads both calls of the paused step with their results, then answers.
    let request = &model.requests()[0];
    let calls = request
        .messages
        .iter()
        .find_map(|m| match m {
            ChatMessage::Assistant { tool_calls, .. } if !tool_calls.is_empty() => Some(tool_calls.clone()),
            _ => None,
        })
        .unwrap();
    let mut names: Vec<String> = calls.iter().map(|c| c.function.name.clone()).collect();
    names.sort();
    assert_eq!(names, ["delete", "lookup"]);
    let results = tool_messages(request);
    assert!(
        results
            .iter()
            .any(|(id, text)| id == "c1" && text.contains("a.txt")),
        "{results:?}"
    );
    assert!(results.iter().any(|(id, _)| id == "c2"));
    // One message: the first stream's parts, the call's output, the answer.
    let parts = &done.outcome.parts;
    assert_eq!(part(parts, "c1")["state"], "output-available");
    assert_eq!(part(parts, "c1")["approval"]["approved"], true);
    assert_eq!(part(parts, "c2")["state"], "output-available");
    assert_eq!(parts.last().unwrap()["text"], "Done.");
    assert!(done.outcome.pending_approvals.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_denied_call_is_not_run_and_the_model_reads_why() {
    let (done, delete, model) = continued(false, Some("not that file")).await;

    assert_eq!(delete.calls.load(Ordering::SeqCst), 0);
    assert!(done.chunks.contains(&UiChunk::ToolOutputDenied {
        tool_call_id: "c1".into()
    }));
    let results = tool_messages(&model.requests()[0]);
    assert!(
        results
            .iter()
            .any(|(id, text)| id == "c1" && text == "REFUSED: not that file"),
        "{results:?}"
    );
    let c1 = part(&done.outcome.parts, "c1");
    assert_eq!(c1["state"], "output-denied");
    assert_eq!(c1["approval"]["reason"], "not that file");
}

#[tokio::test(start_paused = true)]
async fn a_client_that_cannot_ask_and_a_denying_policy_refuse_the_call() {
    for (policy, can_ask, refusal) in [
        (ApprovalPolicy::Ask, false, CANNOT_ASK_TEXT),
        (ApprovalPolicy::Deny, true, DENIED_BY_POLICY_TEXT),
    ] {
        let delete = Arc::new(Echo::default());
        let model = ScriptedModel::new(vec![
            tool_calls(&[("c1", "delete", r#"{"path":"a.txt"}"#)]),
            answer(&["I could not."]),
        ]);
        let mut plan = plan(model.clone(), vec![gated("delete", delete.clone(), policy)]);
        plan.can_ask_approval = can_ask;
        let done = run(plan).await;
        assert_eq!(delete.calls.load(Ordering::SeqCst), 0);
        assert!(done.outcome.pending_approvals.is_empty());
        assert!(!types(&done.chunks).contains(&"tool-approval-request".to_owned()));
        let results = tool_messages(&model.requests()[1]);
        assert_eq!(results, [("c1".to_owned(), refusal.to_owned())]);
    }
}

#[test]
fn a_stored_call_that_was_never_answered_reads_as_not_run() {
    let stored = vec![json!({"role": "assistant", "parts": [
        {"type": "step-start"},
        {"type": "tool-delete", "toolCallId": "c1", "state": "approval-requested",
         "input": {"path": "a.txt"}, "approval": {"id": "ap1"}},
        {"type": "tool-delete", "toolCallId": "c2", "state": "output-denied",
         "input": {"path": "b.txt"}, "approval": {"id": "ap2", "approved": false, "reason": "no"}}
    ]})];
    let history = promptgate_turn::to_model_messages(&stored, Default::default());
    let results = tool_results(&history);
    assert_eq!(results.len(), 2, "{history:?}");
    assert!(results[0].1.contains("did not approve it in time"), "{results:?}");
    assert_eq!(results[1].1, "The user denied this tool call: no");
}
