//! Client tools: offered beside the server's, a call to one ends the turn, and the steps the
//! client never saw are kept so its next request continues the model's own history.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use promptgate_llm::{ChatMessage, ToolCall, ToolChoice, ToolDefinition, UserContent};
use promptgate_turn::client_tools::{
    ClientToolCall, ClientToolChoice, ClientTools, Handoff, HandoffKeeper, restore_handoffs,
};
use promptgate_turn::{TurnEvent, UiChunk, UiFinishReason};
use serde_json::json;

use crate::support::*;

/// Keeps hand-offs in memory, or refuses them all.
#[derive(Default)]
struct Kept {
    handoffs: Mutex<Vec<Handoff>>,
    refuse: bool,
}

impl HandoffKeeper for Kept {
    fn keep(&self, handoff: Handoff) -> BoxFuture<'static, bool> {
        if self.refuse {
            return Box::pin(async { false });
        }
        self.handoffs.lock().unwrap().push(handoff);
        Box::pin(async { true })
    }
}

fn read_file() -> ToolDefinition {
    ToolDefinition {
        name: "read_file".into(),
        description: "Reads a file on the client's machine.".into(),
        parameters: Arc::new(json!({"type": "object", "properties": {"path": {"type": "string"}}})),
    }
}

fn with_client_tools(model: Arc<ScriptedModel>, keeper: Option<Arc<Kept>>) -> promptgate_turn::TurnPlan {
    let mut plan = plan(model, lookup_tools());
    plan.client = ClientTools {
        tools: vec![read_file()],
        choice: ClientToolChoice::Auto,
        keeper: keeper.map(|kept| kept as Arc<dyn HandoffKeeper>),
    };
    plan
}

fn client_calls(events: &[TurnEvent]) -> Vec<ClientToolCall> {
    events
        .iter()
        .filter_map(|event| match event {
            TurnEvent::ClientToolCall(call) => Some(call.clone()),
            _ => None,
        })
        .collect()
}

fn offered(request: &promptgate_llm::ChatRequest) -> Vec<&str> {
    request.tools.iter().map(|tool| tool.name.as_str()).collect()
}

#[tokio::test(start_paused = true)]
async fn a_client_tool_call_ends_the_turn_and_reaches_the_client_under_the_models_id() {
    let model = ScriptedModel::new(vec![tool_calls(&[("up_1", "read_file", r#"{"path":"a.txt"}"#)])]);
    let kept = Arc::new(Kept::default());
    let done = run(with_client_tools(model.clone(), Some(kept.clone()))).await;

    assert_eq!(
        model.requests().len(),
        1,
        "the client runs the tool, not the turn"
    );
    assert_eq!(offered(&model.requests()[0]), ["lookup", "read_file"]);
    assert_eq!(
        client_calls(&done.events),
        [ClientToolCall {
            id: "up_1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a.txt"}"#.into()
        }]
    );
    assert!(
        kept.handoffs.lock().unwrap().is_empty(),
        "nothing hidden, nothing kept"
    );
    assert!(
        !types(&done.chunks).iter().any(|t| t.starts_with("tool-")),
        "the UI stream never shows a client's call: {:?}",
        types(&done.chunks)
    );
    assert_eq!(
        done.chunks.last(),
        Some(&UiChunk::Finish {
            finish_reason: Some(UiFinishReason::ToolCalls),
            message_metadata: None
        })
    );
    let last_calls = done
        .events
        .iter()
        .rposition(|e| matches!(e, TurnEvent::ClientToolCall(_)));
    let finish = done
        .events
        .iter()
        .rposition(|e| matches!(e, TurnEvent::Chunk(UiChunk::Finish { .. })));
    assert!(last_calls < finish, "the calls come before the finish");
}

#[tokio::test(start_paused = true)]
async fn server_steps_before_a_hand_off_are_kept_and_put_back_on_the_next_request() {
    let model = ScriptedModel::new(vec![
        tool_calls(&[("up_1", "lookup", r#"{"q":"where"}"#)]),
        // The same step calls the server's tool and the client's.
        tool_calls(&[
            ("up_2", "read_file", r#"{"path":"a.txt"}"#),
            ("up_3", "lookup", "{}"),
        ]),
    ]);
    let kept = Arc::new(Kept::default());
    let done = run(with_client_tools(model.clone(), Some(kept.clone()))).await;

    let calls = client_calls(&done.events);
    assert_eq!(calls.len(), 1);
    assert!(
        calls[0].id.starts_with("pg_turn1_"),
        "a minted id: {}",
        calls[0].id
    );
    let handoff = kept.handoffs.lock().unwrap()[0].clone();
    let step_two = ChatMessage::Assistant {
        content: None,
        tool_calls: vec![
            ToolCall::new("up_2", "read_file", r#"{"path":"a.txt"}"#),
            ToolCall::new("up_3", "lookup", "{}"),
        ],
    };
    assert_eq!(handoff.messages.len(), 4, "{:#?}", handoff.messages);
    assert_eq!(handoff.messages[2], step_two);
    assert!(matches!(&handoff.messages[3], ChatMessage::Tool { tool_call_id, .. } if tool_call_id == "up_3"));

    // The client's next request: what it saw, then its result under the id it was given.
    let client = vec![
        ChatMessage::User {
            content: UserContent::Text("question".into()),
        },
        ChatMessage::Assistant {
            content: None,
            tool_calls: vec![ToolCall::new(&calls[0].id, "read_file", &calls[0].arguments)],
        },
        ChatMessage::Tool {
            tool_call_id: calls[0].id.clone(),
            content: "contents of a.txt".into(),
        },
    ];
    let history = restore_handoffs(client, &[handoff]);
    let next = ScriptedModel::new(vec![answer(&["Done."])]);
    let mut plan = with_client_tools(next.clone(), None);
    plan.history = history;
    run(plan).await;

    let first_turn = &model.requests()[1].messages;
    let seen_next = &next.requests()[0].messages;
    // Past the system prompt (a step after tools adds the citation reminder to it).
    assert_eq!(
        &seen_next[1..first_turn.len()],
        &first_turn[1..],
        "the model reads the history it wrote"
    );
    assert_eq!(seen_next[first_turn.len()], step_two);
    assert!(
        matches!(&seen_next[first_turn.len() + 2], ChatMessage::Tool { tool_call_id, content } if tool_call_id == "up_2" && content == "contents of a.txt"),
        "{seen_next:#?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_hand_off_that_cannot_be_kept_gives_the_models_ids() {
    let model = ScriptedModel::new(vec![
        tool_calls(&[("up_1", "lookup", "{}")]),
        tool_calls(&[("up_2", "read_file", "{}")]),
    ]);
    let refusing = Arc::new(Kept {
        refuse: true,
        ..Kept::default()
    });
    let done = run(with_client_tools(model, Some(refusing))).await;
    assert_eq!(client_calls(&done.events)[0].id, "up_2");
}

#[tokio::test(start_paused = true)]
async fn a_client_call_with_broken_arguments_goes_back_to_the_model() {
    let model = ScriptedModel::new(vec![
        tool_calls(&[("up_1", "read_file", r#"{"path":"#)]),
        tool_calls(&[("up_2", "read_file", r#"{"path":"a.txt"}"#)]),
    ]);
    let done = run(with_client_tools(model.clone(), Some(Arc::new(Kept::default())))).await;
    let told = tool_messages(&model.requests()[1]);
    assert_eq!(told.len(), 1);
    assert!(told[0].1.contains("not valid JSON"), "{told:?}");
    assert_eq!(client_calls(&done.events)[0].arguments, r#"{"path":"a.txt"}"#);
}

#[tokio::test(start_paused = true)]
async fn a_named_choice_forces_that_tool_on_the_first_step_only() {
    let model = ScriptedModel::new(vec![tool_calls(&[("up_1", "read_file", "{}")])]);
    let mut plan = with_client_tools(model.clone(), None);
    plan.client.choice = ClientToolChoice::Named("read_file".into());
    run(plan).await;
    let first = &model.requests()[0];
    assert_eq!(offered(first), ["read_file"]);
    assert_eq!(first.tool_choice, Some(ToolChoice::Required));

    let model = ScriptedModel::new(vec![tool_calls(&[("up_1", "lookup", "{}")]), answer(&["ok"])]);
    let mut plan = with_client_tools(model.clone(), None);
    plan.client.choice = ClientToolChoice::Required;
    run(plan).await;
    let requests = model.requests();
    assert_eq!(requests[0].tool_choice, Some(ToolChoice::Required));
    assert_eq!(requests[1].tool_choice, None, "later steps may answer");
    assert_eq!(offered(&requests[1]), ["lookup", "read_file"]);
}
