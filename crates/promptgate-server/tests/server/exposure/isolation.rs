//! Every operation of openapi.yaml, called as another user with the owner's ids, with no token and
//! with a bad token: never the owner's data, never a change to it.

use std::collections::BTreeMap;

use promptgate_llm::scripted::{ScriptedUpstream, text};
use promptgate_server::config::AuthMode;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::common::{Backend, Gateway, error_code, init, scripted_config, use_chat_body};

/// Written into everything Bob owns; Alice must never see it.
const MARK: &str = "zq-bob-private";

struct Bob {
    token: String,
    ids: BTreeMap<&'static str, String>,
}

async fn bob_with_data(gw: &Gateway) -> Bob {
    let user = gw.store.create_user("bob").await.unwrap();
    let token = gw.store.issue_token(&user.id).await.unwrap();
    let call = |method: Method, path: &str, body: Value| {
        let token = token.clone();
        let path = path.to_owned();
        async move {
            let (status, value) = gw.call(method, &path, Some(body), Some(&token)).await;
            assert!(status.is_success(), "bob's {path}: {status} {value}");
            value
        }
    };
    call(Method::PUT, "/v1/settings", json!({"preferred_name": MARK})).await;
    let project = call(
        Method::POST,
        "/v1/projects",
        json!({"name": MARK, "instructions": MARK}),
    )
    .await;
    let skill = call(
        Method::POST,
        "/v1/skills",
        json!({"slug": "bobskill", "name": MARK, "instructions": MARK}),
    )
    .await;
    let mcp = call(
        Method::POST,
        "/v1/mcp-servers",
        json!({"name": MARK, "url": "https://mcp.example.com/mcp", "bearer_token": MARK,
               "headers": {"x-key": MARK}}),
    )
    .await;
    let model = call(
        Method::POST,
        "/v1/models",
        json!({"id": "bob-model", "name": MARK, "provider": "scripted"}),
    )
    .await;
    let thread_id = "bob-thread";
    let sent = gw
        .response(
            Method::POST,
            "/v1/chat",
            Some(&use_chat_body(thread_id, MARK, "scripted")),
            Some(&token),
        )
        .await;
    assert_eq!(sent.status(), 200);
    let _ = sent.text().await;
    call(
        Method::PUT,
        &format!("/v1/threads/{thread_id}"),
        json!({"title": MARK}),
    )
    .await;
    // A kept Responses API response: its instructions, input and metadata are all Bob's.
    let response = call(
        Method::POST,
        "/v1/responses",
        json!({"model": "scripted", "input": MARK, "instructions": MARK, "metadata": {"k": MARK}}),
    )
    .await;
    let artifact = gw
        .store
        .create_artifact(&user.id, Some(thread_id), MARK, &format!("<p>{MARK}</p>"))
        .await
        .unwrap();
    let key = call(Method::POST, "/v1/keys", json!({"name": MARK})).await;
    let id = |v: &Value| v["id"].as_str().unwrap().to_owned();
    let ids = BTreeMap::from([
        ("project", id(&project)),
        ("skill", id(&skill)),
        ("mcp", id(&mcp)),
        ("model", id(&model)),
        ("thread", thread_id.to_owned()),
        ("artifact", artifact.id),
        ("response", id(&response)),
        ("key", id(&key)),
        ("user", user.id.clone()),
    ]);
    Bob { token, ids }
}

/// Everything Bob can read about his own data, to compare before and after.
async fn snapshot(gw: &Gateway, bob: &Bob) -> Vec<(String, Value)> {
    let thread = &bob.ids["thread"];
    let mut paths = vec![
        "/v1/settings".to_owned(),
        "/v1/projects".to_owned(),
        "/v1/skills".to_owned(),
        "/v1/mcp-servers".to_owned(),
        "/v1/models".to_owned(),
        "/v1/threads".to_owned(),
        format!("/v1/threads/{thread}/messages"),
        format!("/v1/artifacts/{}", bob.ids["artifact"]),
        format!("/v1/responses/{}", bob.ids["response"]),
        format!("/v1/responses/{}/input_items", bob.ids["response"]),
    ];
    paths.sort();
    let mut out = Vec::new();
    for path in paths {
        let (status, value) = gw.call(Method::GET, &path, None, Some(&bob.token)).await;
        assert_eq!(status, StatusCode::OK, "{path}: {value}");
        out.push((path, value));
    }
    out
}

/// Bob's id for a path template's parameter, by the resource the path names.
fn concrete(template: &str, bob: &Bob) -> String {
    let resource = match template.split('/').nth(2) {
        Some("projects") => "project",
        Some("skills") => "skill",
        Some("mcp-servers") => "mcp",
        Some("models") => "model",
        Some("threads" | "chat") => "thread",
        Some("artifacts") => "artifact",
        Some("responses") => "response",
        Some("integrations") => return template.replace("{provider}", "google"),
        Some("keys") => "key",
        Some("admin") if template.starts_with("/v1/admin/keys") => "key",
        Some("admin") => "user",
        _ => "",
    };
    if !template.contains('{') {
        return template.to_owned();
    }
    let id = bob
        .ids
        .get(resource)
        .unwrap_or_else(|| panic!("{template} is new: give the isolation test an owned id for it"));
    let open = template.find('{').unwrap();
    let close = template.find('}').unwrap();
    format!("{}{id}{}", &template[..open], &template[close + 1..])
        // A thread's elicitation: the thread is what is owned.
        .replace("{elicitation_id}", "elicit_x")
}

/// A body that passes validation, so a refusal comes from ownership and not from the shape.
fn body_for(method: &Method, template: &str, bob: &Bob) -> Value {
    let thread = &bob.ids["thread"];
    match (method.as_str(), template) {
        ("PUT", "/v1/settings") => json!({"preferred_name": "alice"}),
        ("PUT", "/v1/integrations/{provider}") => json!({"enabled": false}),
        ("POST", "/v1/models") | ("PUT", "/v1/models/{id}") => {
            json!({"id": bob.ids["model"], "name": "alice", "provider": "scripted"})
        }
        ("POST", "/v1/projects") | ("PUT", "/v1/projects/{id}") => json!({"name": "alice"}),
        ("POST", "/v1/skills") | ("PUT", "/v1/skills/{id}") => {
            json!({"slug": "bobskill", "name": "alice", "instructions": "alice"})
        }
        ("POST", "/v1/mcp-servers") | ("PUT", "/v1/mcp-servers/{id}") => {
            json!({"name": "alice", "url": "https://mcp.example.com/alice"})
        }
        ("POST", "/v1/threads") => json!({"id": thread, "project_id": bob.ids["project"]}),
        ("PUT", "/v1/threads/{id}") => json!({"title": "alice"}),
        ("POST", "/v1/threads/{id}/messages") => json!({
            "message": {"id": "alice-m", "role": "user", "parts": [{"type": "text", "text": "hi"}]},
            "model": "scripted"
        }),
        ("POST", "/v1/chat") => use_chat_body(thread, "hi", "scripted"),
        ("POST", "/v1/threads/{id}/approvals") => {
            json!({"answers": [{"approval_id": "a", "approved": true}]})
        }
        ("POST", "/v1/threads/{id}/elicitations/{elicitation_id}") => json!({"action": "decline"}),
        ("POST", "/v1/chat/completions" | "/v1/messages" | "/v1/messages/count_tokens") => {
            json!({"model": "scripted", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]})
        }
        // Continuing Bob's response is refused, and nothing of it reaches the model.
        ("POST", "/v1/responses") => json!({
            "model": "scripted", "input": "hi", "previous_response_id": bob.ids["response"]
        }),
        _ => json!({}),
    }
}

struct Operation {
    method: Method,
    template: String,
    has_body: bool,
}

fn operations() -> Vec<Operation> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../openapi.yaml")).unwrap();
    let doc: Value = yaml_serde::from_str(&text).unwrap();
    let mut out = Vec::new();
    for (template, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let Ok(method) = method.to_ascii_uppercase().parse::<Method>() else {
                continue;
            };
            out.push(Operation {
                method,
                template: template.clone(),
                has_body: op.get("requestBody").is_some(),
            });
        }
    }
    assert!(out.len() > 30, "openapi.yaml lists only {} operations", out.len());
    out
}

async fn call_as(gw: &Gateway, op: &Operation, bob: &Bob, token: Option<&str>) -> (StatusCode, String) {
    let mut path = concrete(&op.template, bob);
    if op.template == "/v1/threads" && op.method == Method::GET {
        path.push_str(&format!("?project_id={}", bob.ids["project"]));
    }
    if names_bobs_project(op) {
        path.push_str(&format!("?project_id={}", bob.ids["project"]));
    }
    let mut req = gw.http.request(op.method.clone(), gw.url(&path));
    if op.has_body {
        req = req.json(&body_for(&op.method, &op.template, bob));
    }
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    let res = req.send().await.unwrap();
    let status = res.status();
    (status, res.text().await.unwrap_or_default())
}

/// Operations that take a project id in the query and answer for that project alone: another
/// user's is unknown to them.
fn names_bobs_project(op: &Operation) -> bool {
    op.template == "/v1/prompt" && op.method == Method::GET
}

/// Reached by the provider's redirect, without a token: it answers only to a pending `state`.
/// Operations that take no token: the OAuth callback (it carries its own state), an artifact's
/// signed view link (it carries its own signature) and the gateway's client metadata document (the
/// same for everyone, and served only with a public https base, which this gateway has not).
fn is_public(op: &Operation) -> bool {
    op.template.ends_with("/callback")
        || op.template.ends_with("/view")
        || op.template.ends_with("/oauth/client.json")
}

/// An environment with only the key that seals secrets at rest (32 zero bytes, base64).
struct SealingKey;

impl promptgate_server::config::Env for SealingKey {
    fn var(&self, name: &str) -> Option<String> {
        (name == "PROMPTGATE_TOKEN_KEY").then(|| "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=".to_owned())
    }
}

async fn every_documented_operation_keeps_users_apart(backend: Backend) {
    init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    upstream.replay_by_default(text(["an answer"]));
    // Bob's MCP server carries secrets, which a tokens-mode server seals with a configured key.
    let gw = Gateway::start_with_env(
        backend,
        scripted_config(AuthMode::Tokens, &upstream.base_url()),
        &SealingKey,
    )
    .await;
    let bob = bob_with_data(&gw).await;
    let alice = {
        let user = gw.store.create_user("alice").await.unwrap();
        gw.store.issue_token(&user.id).await.unwrap()
    };
    let before = snapshot(&gw, &bob).await;
    upstream.set_recording(true);
    let upstream_calls = upstream.calls();
    let bobs_requests = upstream.requests().len();

    // Operations on Bob's ids first: Alice's own creations below may reuse ids from her namespace.
    let mut ops = operations();
    ops.sort_by_key(|op| !op.template.contains("{id}"));
    for op in ops {
        let name = format!("{} {}", op.method, op.template);
        for token in [
            None,
            Some("pg_0000000000000000000000000000000000000000000000000000000000000000"),
        ] {
            let (status, body) = call_as(&gw, &op, &bob, token).await;
            assert!(
                !body.contains(MARK),
                "{name} without a valid token showed bob's data: {body}"
            );
            if is_public(&op) {
                assert!(!status.is_success(), "{name}: {status} {body}");
            } else {
                assert_eq!(
                    status,
                    StatusCode::UNAUTHORIZED,
                    "{name} with token {token:?}: {body}"
                );
                let value: Value = serde_json::from_str(&body).unwrap();
                if op.template.starts_with("/v1/messages") {
                    // Anthropic's clients read Anthropic's error shape.
                    assert_eq!(value["error"]["type"], "authentication_error", "{name}: {body}");
                } else {
                    assert_eq!(error_code(&value), "unauthorized");
                }
            }
        }

        let (status, body) = call_as(&gw, &op, &bob, Some(&alice)).await;
        assert!(
            !body.contains(MARK),
            "{name} as alice showed bob's data: {status} {body}"
        );
        let targets_bob = op.template.contains("{id}") || names_bobs_project(&op);
        if is_public(&op) {
            assert!(!status.is_success(), "{name} as alice: {status} {body}");
        } else if targets_bob {
            let stop_of_nothing = op.template.ends_with("/stop")
                && serde_json::from_str::<Value>(&body).unwrap()["stopped"] == false;
            // Resuming is keyed by the caller's own threads: bob's running turn is not alice's, so
            // she gets what any thread without a turn gets.
            let resume_of_nothing =
                op.template.ends_with("/stream") && status == StatusCode::NO_CONTENT && body.is_empty();
            // Alice is no admin: the admin operations refuse her whoever they name.
            let not_admin = op.template.starts_with("/v1/admin/") && status == StatusCode::FORBIDDEN;
            assert!(
                status == StatusCode::NOT_FOUND || stop_of_nothing || resume_of_nothing || not_admin,
                "{name} as alice with bob's id: {status} {body}"
            );
        } else {
            assert!(status != StatusCode::INTERNAL_SERVER_ERROR, "{name}: {body}");
        }
    }

    assert_eq!(snapshot(&gw, &bob).await, before, "alice changed bob's data");
    let (_, keys) = gw.call(Method::GET, "/v1/keys", None, Some(&bob.token)).await;
    assert!(
        keys.to_string().contains(&bob.ids["key"]),
        "alice deleted bob's key: {keys}"
    );
    let leaked: Vec<Value> = upstream
        .requests()
        .into_iter()
        .skip(bobs_requests)
        .filter(|r| r.to_string().contains(MARK))
        .collect();
    assert!(
        leaked.is_empty(),
        "bob's data reached the model in alice's turns: {leaked:?}"
    );
    assert!(upstream.calls() > upstream_calls, "alice's own sends ran");
}

crate::common::on_both_backends!(every_documented_operation_keeps_users_apart);
