//! Failover across providers: a model whose provider refuses (429, then 500 from the first
//! fallback's) is answered by the next fallback, within the same turn: the tool results of the steps
//! before stay, the answer names the model that answered, and the ledger counts that model. A
//! provider that keeps failing is skipped until its cool-down has passed.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::time::Duration;

use promptgate_core::settings::Model;
use promptgate_llm::scripted::{Script, ScriptedUpstream, Step, text, tool_calls};
use promptgate_service::deployment::{BreakerSettings, RetryPolicy};
use promptgate_service::records::{UsageGrouping, UsageQuery};
use promptgate_service::{SendRequest, Service};
use promptgate_store::testing::TestDb;
use serde_json::json;

use crate::common::{self, USER, finish, message, provider, service_with};

fn model(id: &str, fallbacks: &[&str]) -> Model {
    Model {
        id: id.to_owned(),
        name: id.to_owned(),
        provider: id.to_owned(),
        fallbacks: fallbacks.iter().map(|f| (*f).to_owned()).collect(),
        ..common::model()
    }
}

/// A refusal with `status`, after the wait a 429 asks for.
fn refusal(status: u16, retry_after: Option<&str>) -> Script {
    let mut script = Script::new();
    if let Some(secs) = retry_after {
        script = script.step(Step::Header("retry-after".to_owned(), secs.to_owned()));
    }
    let body = json!({"error": {"message": "not now", "type": "server_error"}});
    script.step(Step::Status(status, body.to_string()))
}

struct Three {
    first: ScriptedUpstream,
    second: ScriptedUpstream,
    third: ScriptedUpstream,
    service: Service,
}

/// Models `first` (falling back to `second`, then `third`), each on a provider of its own.
async fn three(db: &TestDb, retries: u32, breaker_failures: u32, cool_down: Duration) -> Three {
    let first = ScriptedUpstream::start().await.unwrap();
    let second = ScriptedUpstream::start().await.unwrap();
    let third = ScriptedUpstream::start().await.unwrap();
    let service = service_with(
        db.store().clone(),
        vec![
            provider("first", &first),
            provider("second", &second),
            provider("third", &third),
        ],
        vec![
            model("first", &["second", "third"]),
            model("second", &[]),
            model("third", &[]),
        ],
        |config| {
            config.failover.policy = RetryPolicy {
                retries,
                backoff: Duration::from_millis(10),
                max_wait: Duration::from_secs(2),
            };
            config.failover.breaker = BreakerSettings {
                failures_to_open: breaker_failures,
                cool_down,
            };
        },
    )
    .await;
    Three {
        first,
        second,
        third,
        service,
    }
}

fn send(thread: &str, text: &str) -> SendRequest {
    let mut request = message(thread, None, text);
    request.model = Some("first".to_owned());
    request
}

async fn a_429_then_a_500_fail_over_to_the_model_that_answers_keeping_the_turn(db: TestDb) {
    let Three {
        first,
        second,
        third,
        service,
    } = three(&db, 1, 100, Duration::from_secs(3600)).await;
    // Step one: the first model calls a tool. Step two: it is rate limited twice (the second
    // time after the second it asked for), the second model fails twice, the third answers.
    let card = json!({"title": "Tide", "html": "<p>06:40</p>"}).to_string();
    first.push(tool_calls(&[("c1", "render_html", &[card.as_str()])]));
    first.push(refusal(429, Some("1")));
    first.push(refusal(429, Some("1")));
    second.push(refusal(500, None));
    second.push(refusal(500, None));
    third.push(text(["High ", "at ", "noon."]));

    let handle = service.send(send("f", "Draw the tide")).await.unwrap();
    assert_eq!(finish(handle).await, "High at noon.");
    assert_eq!((first.calls(), second.calls(), third.calls()), (3, 2, 1));
    let asked = third.last_request().unwrap();
    assert_eq!(asked["model"], "upstream-model");
    let tool_result = asked["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("the tool step's result reached the third model: {asked}"));
    assert_eq!(tool_result["tool_call_id"], "c1");

    let page = service.messages(USER, "f", false, None, 10).await.unwrap();
    let answer = page.items.last().unwrap();
    assert_eq!(answer.metadata["answeredBy"], "third", "{}", answer.metadata);
    assert_eq!(answer.metadata["modelId"], "first");
    let ledger = service
        .usage_report(&UsageQuery {
            user: Some(USER.to_owned()),
            from_ms: 0,
            to_ms: i64::MAX,
            group_by: UsageGrouping::Model,
            then_by: None,
        })
        .await
        .unwrap();
    let rows: Vec<_> = ledger
        .iter()
        .map(|g| (g.group.as_str(), g.requests, g.tokens.input))
        .collect();
    assert_eq!(
        rows,
        vec![("third", 1, 20)],
        "the row names the model that answered"
    );
}

async fn a_provider_that_keeps_failing_is_skipped_until_its_cool_down(db: TestDb) {
    let Three {
        first,
        second,
        third,
        service,
    } = three(&db, 0, 2, COOL_DOWN).await;
    for (thread, answer) in [("a", "One."), ("b", "Two.")] {
        first.push(refusal(503, None));
        second.push(refusal(502, None));
        third.push(text([answer]));
        assert_eq!(
            finish(service.send(send(thread, "Hi")).await.unwrap()).await,
            answer
        );
    }
    assert_eq!((first.calls(), second.calls(), third.calls()), (2, 2, 2));
    // Two failures in a row opened both breakers: the third send goes straight to the third model.
    third.push(text(["Three."]));
    assert_eq!(
        finish(service.send(send("c", "Hi")).await.unwrap()).await,
        "Three."
    );
    assert_eq!((first.calls(), second.calls(), third.calls()), (2, 2, 3));

    // Past the cool-down one request probes the first provider; it answers, which closes it.
    tokio::time::sleep(COOL_DOWN + Duration::from_millis(50)).await;
    first.push(text(["Back."]));
    assert_eq!(
        finish(service.send(send("d", "Hi")).await.unwrap()).await,
        "Back."
    );
    first.push(text(["Still here."]));
    assert_eq!(
        finish(service.send(send("e", "Hi")).await.unwrap()).await,
        "Still here."
    );
    assert_eq!((first.calls(), second.calls(), third.calls()), (4, 2, 3));
    let page = service.messages(USER, "e", false, None, 10).await.unwrap();
    assert!(page.items.last().unwrap().metadata.get("answeredBy").is_none());
}

/// Short, so the test can wait it out; a breaker's closing is walked through with time passed in
/// by `promptgate_core::breaker`'s own test.
const COOL_DOWN: Duration = Duration::from_millis(300);

promptgate_store::on_both_backends!(
    a_429_then_a_500_fail_over_to_the_model_that_answers_keeping_the_turn,
    a_provider_that_keeps_failing_is_skipped_until_its_cool_down,
);
