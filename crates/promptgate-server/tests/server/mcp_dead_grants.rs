//! A send that finds the user's grant for an MCP server already dead does not go on without the
//! server: an instance that never listed its tools under the grant (another one, or one restarted)
//! offers the tools the server last listed, and calling one brings the consent card and runs once
//! the user authorized. A server that asks for authorization and whose tools were never listed
//! leaves the model a note that the user must connect it, and a client that shows cards a card that
//! does not wait. The server is the Python SDK's auth peer.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{Backend, offered_tools, scripted_config_with, use_chat_body};
use crate::mcp_consent::{
    Setup, WHOAMI, WithKey, authorized, call_whoami, card, parts, registered, result_the_model_read, send,
};
use crate::mcp_oauth::{TOML, callback, consent, peer_control};
use promptgate_llm::scripted::text;
use promptgate_server::config::AuthMode;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// The system prompt of an upstream request.
fn system_prompt(request: &Value) -> String {
    request["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Forgets every access and refresh token the peer issued, as a user removing the app's access.
async fn revoke_grants(url: &str) {
    peer_control(url, "revoke-grants").send().await.unwrap();
}

#[tokio::test]
async fn a_grant_revoked_between_sends_keeps_the_tools_and_the_next_call_runs_after_the_card() {
    let Some(Setup {
        gw: a,
        upstream,
        url,
        _peer,
    }) = authorized(Backend::Postgres, "").await
    else {
        return;
    };
    call_whoami(&upstream);
    let first = send(&a, "t1").await;
    assert_eq!(first.text(), "Done.");
    assert_eq!(result_the_model_read(&upstream), "py-auth-peer");

    // The grant ends between the sends; the next send lands on an instance whose hub holds no
    // session, so its discovery meets `401` and renewing is refused.
    revoke_grants(&url).await;
    let config = scripted_config_with(AuthMode::SingleUser, &upstream.base_url(), TOML);
    let b = a.another_instance_with_env(config, &WithKey).await;
    call_whoami(&upstream);
    let user = async {
        let shown = card(&b, "t2").await;
        assert_eq!(shown["server"], "Notes");
        assert_eq!(shown["state"], "waiting");
        let path = consent(shown["url"].as_str().unwrap()).await;
        assert_eq!(callback(&b, &path).await.0, StatusCode::OK);
    };
    let (sse, ()) = tokio::join!(send(&b, "t2"), user);
    let offered = offered_tools(&upstream.requests()[2]);
    assert!(offered.iter().any(|t| t == WHOAMI), "{offered:?}");
    assert_eq!(sse.text(), "Done.");
    assert!(sse.of_type("tool-output-error").is_empty(), "{:?}", sse.types());
    assert_eq!(result_the_model_read(&upstream), "py-auth-peer");
    let states: Vec<&Value> = parts(&sse).iter().map(|part| &part["state"]).collect();
    assert_eq!(states, [&json!("waiting"), &json!("authorized")]);
}

#[tokio::test]
async fn a_server_never_listed_leaves_a_note_and_a_card_that_connects_it() {
    let Some((
        Setup {
            gw, upstream, _peer, ..
        },
        _id,
    )) = registered(Backend::Sqlite, "").await
    else {
        return;
    };
    upstream.push(text(["Notes is not connected."]));
    let sse = send(&gw, "t1").await;
    let request = upstream.last_request().unwrap();
    assert!(!offered_tools(&request).iter().any(|t| t == WHOAMI));
    let system = system_prompt(&request);
    assert!(
        system.contains("\"Notes\" cannot be used now: the user needs to connect it again"),
        "{system}"
    );
    let shown = parts(&sse);
    assert_eq!(shown.len(), 1, "{:?}", sse.types());
    assert_eq!(shown[0]["state"], "needed");
    assert_eq!(shown[0]["server"], "Notes");
    assert_eq!(shown[0]["kind"], "mcp");
    let stored = gw.stored_messages("t1", 2).await;
    assert!(
        stored[1]["parts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|part| part["type"] == "data-authorization"),
        "the answer keeps the card: {stored}"
    );

    // A client that cannot show cards gets the note only.
    upstream.push(text(["Still not."]));
    let v5 = gw
        .stream_as("v5", "/v1/chat", use_chat_body("t2", "who is it?", "scripted"))
        .await;
    assert!(v5.of_type("data-authorization").is_empty(), "{:?}", v5.types());
    assert!(system_prompt(&upstream.last_request().unwrap()).contains("\"Notes\" cannot be used now"));

    // The card's URL connects the server, and the next send has its tools and no note.
    let path = consent(shown[0]["url"].as_str().unwrap()).await;
    assert_eq!(callback(&gw, &path).await.0, StatusCode::OK);
    call_whoami(&upstream);
    let sse = send(&gw, "t3").await;
    assert_eq!(sse.text(), "Done.");
    assert_eq!(result_the_model_read(&upstream), "py-auth-peer");
    assert!(!system_prompt(&upstream.last_request().unwrap()).contains("cannot be used now"));
}
