//! MCP elicitation through the gateway, against the Python SDK's server (`py_elicit_peer.py`): a
//! tool asks the user mid-call, the question reaches the stream as a `data-elicitation` part and
//! the thread's list, the call waits, and the answer (given with the API call, on any instance)
//! goes back to the server, whose result the model reads. Declined, expired, stopped, clients
//! that cannot show it.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use crate::common;

use common::{Backend, Gateway, Sse, error_code, scripted_config_with, tool_message, use_chat_body};
use promptgate_llm::scripted::ScriptedUpstream;
use promptgate_mcp::testing::{PeerProcess, python_elicit_peer};
use promptgate_server::config::AuthMode;
use reqwest::StatusCode;
use serde_json::{Value, json};

const THREAD: &str = "el";
const BOOK: &str = "bookings_book_table";

struct Setup {
    gw: Gateway,
    upstream: ScriptedUpstream,
    _peer: PeerProcess,
}

/// A gateway with the peer registered as "Bookings" and the model scripted to book a table ([`book`]),
/// or `None` when the peer cannot run here.
async fn setup(backend: Backend, extra_toml: &str) -> Option<Setup> {
    let python = common::py_peer_python("the MCP elicitation scenario")?;
    common::init();
    let (peer, url) = python_elicit_peer(&python).await;
    let (gw, upstream) = common::single_user_gateway_with(backend, extra_toml).await;
    register(&gw, &url).await;
    book(&upstream);
    Some(Setup {
        gw,
        upstream,
        _peer: peer,
    })
}

async fn register(gw: &Gateway, url: &str) {
    gw.register_mcp_server("Bookings", url).await;
}

/// The model books a table, then answers "Done." once it read the result.
fn book(upstream: &ScriptedUpstream) {
    common::one_call(upstream, "call_1", BOOK, r#"{"restaurant":"Luigi"}"#, "Done.");
}

/// Waits until the thread lists a waiting question, and returns it.
async fn question(gw: &Gateway) -> Value {
    for _ in 0..200 {
        let (status, waiting) = gw.get(&format!("/v1/threads/{THREAD}/elicitations")).await;
        if status == StatusCode::OK && waiting.as_array().is_some_and(|w| !w.is_empty()) {
            return waiting[0].clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no elicitation was listed");
}

async fn answer(gw: &Gateway, id: &Value, body: Value) -> (StatusCode, Value) {
    gw.post(
        &format!("/v1/threads/{THREAD}/elicitations/{}", id.as_str().unwrap()),
        body,
    )
    .await
}

/// The thread lists no waiting question.
async fn assert_nothing_waits(gw: &Gateway) {
    let (_, waiting) = gw.get(&format!("/v1/threads/{THREAD}/elicitations")).await;
    assert_eq!(waiting, json!([]));
}

fn send(gw: &Gateway) -> impl std::future::Future<Output = Sse> + '_ {
    gw.chat(THREAD, "book me a table")
}

/// The `data` of the stream's elicitation parts, in order.
fn parts(sse: &Sse) -> Vec<&Value> {
    sse.of_type("data-elicitation")
        .into_iter()
        .map(|part| &part["data"])
        .collect()
}

fn result_the_model_read(upstream: &ScriptedUpstream) -> String {
    tool_message(&upstream.requests()[1], "call_1")
}

#[tokio::test]
async fn an_accepted_form_reaches_the_server_and_its_result_the_model() {
    let Some(Setup { gw, upstream, _peer }) = setup(Backend::Sqlite, "").await else {
        return;
    };
    let user = async {
        let asked = question(&gw).await;
        assert_eq!(asked["mode"], "form");
        assert_eq!(asked["server"], "Bookings");
        assert_eq!(asked["toolCallId"], "call_1");
        assert_eq!(asked["state"], "waiting");
        assert_eq!(asked["message"], "Booking details for Luigi");
        let fields = asked["requestedSchema"]["properties"].as_object().unwrap();
        assert_eq!(fields["guests"]["type"], "integer");
        assert_eq!(fields["vegetarian"]["type"], "boolean");
        assert_eq!(fields["seating"]["enum"], json!(["inside", "terrace"]));
        let id = &asked["elicitationId"];
        // An answer that does not fit the form is refused, and the question still waits.
        let (status, body) = answer(
            &gw,
            id,
            json!({"action": "accept", "content": {"name": "Ada", "guests": "four"}}),
        )
        .await;
        assert_eq!(
            (status, error_code(&body)),
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_body")
        );
        assert!(
            body["error"]["message"].as_str().unwrap().contains("guests"),
            "{body}"
        );
        let content = json!({"name": "Ada", "guests": 4, "vegetarian": true, "seating": "terrace"});
        let (status, body) = answer(&gw, id, json!({"action": "accept", "content": content})).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["state"], "accepted");
        // Answered once: a second answer finds it settled.
        let (status, body) = answer(&gw, id, json!({"action": "decline"})).await;
        assert_eq!((status, error_code(&body)), (StatusCode::CONFLICT, "conflict"));
        id.clone()
    };
    let (sse, id) = tokio::join!(send(&gw), user);
    assert_eq!(sse.text(), "Done.");
    let shown = parts(&sse);
    assert_eq!(shown.first().unwrap()["state"], "waiting");
    assert_eq!(shown.last().unwrap()["state"], "accepted");
    assert!(shown.iter().all(|part| part["elicitationId"] == id));
    let result = result_the_model_read(&upstream);
    assert!(
        result.contains("accept: booked Luigi for Ada, 4 guests, vegetarian=True, seating=terrace"),
        "{result}"
    );
    // The stored answer keeps the part in its last state; nothing waits any more.
    let stored = gw.stored_messages(THREAD, 2).await;
    let kept: Vec<&Value> = common::where_eq(&stored[1]["parts"], "type", "data-elicitation");
    assert_eq!(kept.len(), 1, "{stored}");
    assert_eq!(kept[0]["data"]["state"], "accepted");
    assert_nothing_waits(&gw).await;
}

#[tokio::test]
async fn a_declined_form_reaches_the_server() {
    let Some(Setup { gw, upstream, _peer }) = setup(Backend::Sqlite, "").await else {
        return;
    };
    let user = async {
        let asked = question(&gw).await;
        let (status, body) = answer(&gw, &asked["elicitationId"], json!({"action": "decline"})).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    };
    let (sse, ()) = tokio::join!(send(&gw), user);
    assert_eq!(parts(&sse).last().unwrap()["state"], "declined");
    let result = result_the_model_read(&upstream);
    assert!(result.contains("decline: nothing booked"), "{result}");
}

#[tokio::test]
async fn an_unanswered_question_expires_and_the_server_is_told_cancel() {
    let toml = "[mcp]\nelicitation_timeout_secs = 1\n";
    let Some(Setup { gw, upstream, _peer }) = setup(Backend::Sqlite, toml).await else {
        return;
    };
    let sse = send(&gw).await;
    assert_eq!(sse.text(), "Done.");
    let shown = parts(&sse);
    assert_eq!(shown.last().unwrap()["state"], "expired");
    let result = result_the_model_read(&upstream);
    assert!(result.contains("cancel: nothing booked"), "{result}");
    let (status, body) = answer(&gw, &shown[0]["elicitationId"], json!({"action": "decline"})).await;
    assert_eq!((status, error_code(&body)), (StatusCode::CONFLICT, "conflict"));
    assert!(
        body["error"]["message"].as_str().unwrap().contains("expired"),
        "{body}"
    );
}

#[tokio::test]
async fn stop_ends_the_wait() {
    let Some(Setup { gw, upstream, _peer }) = setup(Backend::Sqlite, "").await else {
        return;
    };
    let user = async {
        let asked = question(&gw).await;
        let (status, body) = gw.post(&format!("/v1/chat/{THREAD}/stop"), json!({})).await;
        assert_eq!((status, &body["stopped"]), (StatusCode::OK, &json!(true)));
        asked
    };
    let (sse, asked) = tokio::join!(send(&gw), user);
    assert!(sse.done, "{:?}", sse.types());
    let stored = gw.stored_messages(THREAD, 2).await;
    assert_eq!(stored[1]["status"], "stopped");
    assert_eq!(upstream.requests().len(), 1, "the model was not asked again");
    let (status, _) = answer(&gw, &asked["elicitationId"], json!({"action": "decline"})).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_nothing_waits(&gw).await;
}

#[tokio::test]
async fn clients_that_cannot_show_it_decline_at_once() {
    let Some(Setup { gw, upstream, _peer }) = setup(Backend::Sqlite, "").await else {
        return;
    };
    let sse = gw
        .stream_as(
            "v5",
            "/v1/chat",
            use_chat_body(THREAD, "book me a table", "scripted"),
        )
        .await;
    assert!(sse.of_type("data-elicitation").is_empty(), "{:?}", sse.types());
    let result = result_the_model_read(&upstream);
    assert!(result.contains("decline: nothing booked"), "{result}");

    // The OpenAI-compatible facade cannot show it either.
    book(&upstream);
    let (status, body) = gw.complete("book").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let result = tool_message(&upstream.requests()[3], "call_1");
    assert!(result.contains("decline: nothing booked"), "{result}");
}

#[tokio::test]
async fn the_answer_given_on_another_instance_reaches_the_waiting_call() {
    let Some(Setup { gw, upstream, _peer }) = setup(Backend::Postgres, "").await else {
        return;
    };
    let b = gw
        .another_instance(scripted_config_with(
            AuthMode::SingleUser,
            &upstream.base_url(),
            "",
        ))
        .await;
    let user = async {
        // The other instance lists the question and takes the answer; answering on both at once,
        // exactly one answer counts.
        let asked = question(&b).await;
        let id = &asked["elicitationId"];
        let content = json!({"name": "Bo", "guests": 2});
        let (one, other) = tokio::join!(
            answer(&b, id, json!({"action": "accept", "content": content})),
            answer(&gw, id, json!({"action": "decline"})),
        );
        let statuses = [one.0, other.0];
        assert!(statuses.contains(&StatusCode::OK), "{one:?} {other:?}");
        assert!(statuses.contains(&StatusCode::CONFLICT), "{one:?} {other:?}");
        one.0 == StatusCode::OK
    };
    let (sse, accepted) = tokio::join!(send(&gw), user);
    assert_eq!(sse.text(), "Done.");
    let result = result_the_model_read(&upstream);
    let expected = if accepted {
        "accept: booked Luigi for Bo, 2 guests"
    } else {
        "decline: nothing booked"
    };
    assert!(result.contains(expected), "{result}");
}
