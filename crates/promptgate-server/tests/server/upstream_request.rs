//! What users and callers can put into the upstream request, which goes out on the operator's key:
//! only the open request fields (sampling and format), and the ones the operator allows for a
//! provider; and images only inline, since a link would be fetched by the provider from wherever it
//! points.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{Gateway, error_code, scripted_config, use_chat_body};
use promptgate_llm::scripted::{ScriptedUpstream, text};
use promptgate_server::config::AuthMode;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// A single-user gateway on a scripted upstream whose provider lets users set `allowed` as well.
async fn gateway(allowed: &[&str]) -> (Gateway, ScriptedUpstream) {
    common::init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let mut config = scripted_config(AuthMode::SingleUser, &upstream.base_url());
    let provider = config
        .providers
        .iter_mut()
        .find(|p| p.name == "scripted")
        .unwrap();
    provider.allow_request_fields = allowed.iter().map(|f| (*f).to_owned()).collect();
    let model = config.models.iter_mut().find(|m| m.id == "scripted").unwrap();
    model.supports_images = true;
    (Gateway::start(common::Backend::Sqlite, config).await, upstream)
}

fn user_model(options: Value) -> Value {
    json!({"id": "mine", "provider": "scripted", "upstream_model": "small-model", "tool_usage": 0,
           "profile": {"provider_options": options}})
}

async fn complete(gw: &Gateway, extra: Value) -> (StatusCode, Value) {
    let mut body = json!({"model": "scripted", "messages": [{"role": "user", "content": "Hi"}]});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    gw.post("/v1/chat/completions", body).await
}

#[tokio::test]
async fn a_users_model_cannot_set_what_the_server_decides() {
    let (gw, upstream) = gateway(&[]).await;
    let (status, body) = gw
        .post(
            "/v1/models",
            user_model(
                json!({"model": "large-model", "messages": [], "tools": [], "n": 8,
                              "max_tokens": 200000, "temperature": 0.3}),
            ),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(error_code(&body), "field_not_allowed");
    let message = body["error"]["message"].as_str().unwrap();
    let refused = message.split(';').next().unwrap();
    for field in ["model", "messages", "tools", "n", "max_tokens"] {
        assert!(refused.contains(&format!(" {field}")), "{message}");
    }
    assert!(!refused.contains("temperature"), "{message}");

    let (status, body) = gw
        .post("/v1/models", user_model(json!({"temperature": 0.3, "seed": 7})))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    upstream.push(text(["Hello."]));
    let sse = gw
        .stream("/v1/chat", use_chat_body("options", "Hi", "mine"))
        .await;
    assert_eq!(sse.text(), "Hello.");
    let sent = upstream.last_request().unwrap();
    assert_eq!(
        (sent["seed"].clone(), sent["model"].clone()),
        (json!(7), json!("small-model"))
    );
}

/// A model stored before the rule (or before the operator closed a field) sends without the field.
#[tokio::test]
async fn a_stored_model_with_a_closed_field_is_sent_without_it() {
    let (gw, upstream) = gateway(&[]).await;
    let (_, created) = gw.post("/v1/models", user_model(json!({"seed": 3}))).await;
    let mut model: promptgate_core::settings::Model = serde_json::from_value(created).unwrap();
    model.id = "old".to_owned();
    let options = json!({"seed": 3, "model": "large-model", "n": 4})
        .as_object()
        .unwrap()
        .clone();
    model.profile.provider_options = Some(options);
    gw.store.create_model("local", &model).await.unwrap();

    upstream.push(text(["Hello."]));
    let sse = gw
        .stream("/v1/chat", use_chat_body("old-model", "Hi", "old"))
        .await;
    assert_eq!(sse.text(), "Hello.");
    let sent = upstream.last_request().unwrap();
    assert_eq!(sent["model"], "small-model");
    assert_eq!(sent["seed"], 3);
    assert!(sent.get("n").is_none(), "{sent}");
}

#[tokio::test]
async fn a_facade_caller_cannot_rewrite_the_request_on_the_operators_key() {
    let (gw, upstream) = gateway(&[]).await;
    for field in [
        json!({"store": true}),
        json!({"service_tier": "priority"}),
        json!({"reasoning_effort": "high"}),
        json!({"messages_extra": 1}),
    ] {
        let (status, body) = complete(&gw, field.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{field}: {body}");
        assert_eq!(error_code(&body), "field_not_allowed");
    }
    assert_eq!(upstream.calls(), 0, "nothing went upstream");

    upstream.push(text(["Fine."]));
    let (status, body) = complete(&gw, json!({"top_p": 0.5, "seed": 1})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let sent = upstream.last_request().unwrap();
    assert_eq!(
        (sent["top_p"].clone(), sent["seed"].clone()),
        (json!(0.5), json!(1))
    );
}

#[tokio::test]
async fn a_value_no_provider_reads_is_the_callers_mistake_not_an_upstream_error() {
    let (gw, upstream) = gateway(&[]).await;
    for (field, names) in [
        (
            json!({"temperature": 3}),
            "temperature: must be a number from 0 to 2",
        ),
        (
            json!({"stop": [1, 2]}),
            "stop: must be a string or a list of strings",
        ),
        (json!({"logit_bias": {"50256": 500}}), "logit_bias:"),
        (json!({"top_logprobs": 99, "logprobs": true}), "top_logprobs:"),
    ] {
        let (status, body) = complete(&gw, field.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{field}: {body}");
        assert_eq!(error_code(&body), "invalid_body");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(names), "{field}: {message}");
    }
    let (status, body) = gw.post("/v1/models", user_model(json!({"top_p": 2}))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("top_p:"),
        "{body}"
    );
    assert_eq!(upstream.calls(), 0, "nothing went upstream");
}

#[tokio::test]
async fn the_operator_opens_a_field_for_one_provider() {
    let (gw, upstream) = gateway(&["service_tier"]).await;
    upstream.push(text(["Short."]));
    let (status, body) = complete(&gw, json!({"service_tier": "flex"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(upstream.last_request().unwrap()["service_tier"], "flex");
    let (status, body) = gw
        .post("/v1/models", user_model(json!({"service_tier": "flex"})))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, _) = complete(&gw, json!({"store": true})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "only the field opened");
}

const METADATA_IMAGE: &str = "http://169.254.169.254/latest/meta-data/iam/security-credentials/";

#[tokio::test]
async fn an_image_link_is_refused_by_the_facade_and_never_passed_on_by_a_send() {
    let (gw, upstream) = gateway(&[]).await;
    let (status, body) = gw
        .post(
            "/v1/chat/completions",
            json!({"model": "scripted", "messages": [{"role": "user", "content": [
                {"type": "text", "text": "What is in this image?"},
                {"type": "image_url", "image_url": {"url": METADATA_IMAGE}}
            ]}]}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        common::error_message(&body).contains("an image must be sent inline as a `data:` URL"),
        "{body}"
    );
    assert_eq!(upstream.calls(), 0);

    upstream.push(text(["I cannot see it."]));
    let body = json!({
        "id": "image-link", "trigger": "submit-message", "model": "scripted",
        "messages": [{"id": "m1", "role": "user", "parts": [
            {"type": "text", "text": "What is in this image?"},
            {"type": "file", "mediaType": "image/png", "filename": "creds.png", "url": METADATA_IMAGE},
            {"type": "file", "mediaType": "image/png", "filename": "dot.png", "url": "data:image/png;base64,iVBORw0KGgo="}
        ]}]
    });
    let sse = gw.stream("/v1/chat", body).await;
    assert_eq!(sse.text(), "I cannot see it.");
    let sent = upstream.last_request().unwrap().to_string();
    assert!(
        !sent.contains("169.254.169.254/latest"),
        "the link reached the provider: {sent}"
    );
    assert!(sent.contains("it is an image given by a link"), "{sent}");
    assert!(
        sent.contains("data:image/png;base64,iVBORw0KGgo="),
        "inline images still go"
    );
}

#[tokio::test]
async fn every_facade_asks_the_provider_for_a_whole_answer_when_its_client_does_not_stream() {
    let (gw, upstream) = gateway(&[]).await;
    upstream.set_recording(true);
    upstream.replay_by_default(text(["Written ", "whole."]));
    let user = json!([{"role": "user", "content": "Hi"}]);
    let facades = [
        (
            "/v1/chat/completions",
            json!({"model": "scripted", "messages": user}),
        ),
        (
            "/v1/responses",
            json!({"model": "scripted", "input": "Hi", "store": false}),
        ),
        (
            "/v1/messages",
            json!({"model": "scripted", "max_tokens": 100, "messages": user}),
        ),
    ];
    for (path, body) in facades {
        for stream in [false, true] {
            let mut body = body.clone();
            body["stream"] = json!(stream);
            let res = gw
                .http
                .post(gw.url(path))
                .header("anthropic-version", "2023-06-01")
                .json(&body)
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), StatusCode::OK, "{path}, stream {stream}");
            let answer = res.text().await.unwrap();
            let sent = upstream.last_request().unwrap();
            assert_eq!(sent["stream"], json!(stream), "{path}: {sent}");
            if stream {
                assert!(answer.contains("whole."), "{path}: {answer}");
                assert_eq!(sent["stream_options"]["include_usage"], json!(true), "{path}");
            } else {
                assert!(answer.contains("Written whole."), "{path}: {answer}");
                assert!(sent.get("stream_options").is_none(), "{path}: {sent}");
            }
        }
    }
}

#[tokio::test]
async fn a_provider_that_only_streams_is_never_asked_for_a_whole_answer() {
    common::init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    upstream.set_recording(true);
    upstream.push(text(["Streamed ", "anyway."]));
    let mut config = scripted_config(AuthMode::SingleUser, &upstream.base_url());
    for provider in &mut config.providers {
        provider.whole_answers = Some(false);
    }
    let gw = Gateway::start(common::Backend::Sqlite, config).await;
    let (status, body) = complete(&gw, json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["choices"][0]["message"]["content"], "Streamed anyway.");
    let sent = upstream.last_request().unwrap();
    assert_eq!(sent["stream"], json!(true), "{sent}");
    assert_eq!(sent["stream_options"]["include_usage"], json!(true));
}
