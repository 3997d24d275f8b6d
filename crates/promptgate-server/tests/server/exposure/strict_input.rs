//! Strict, bounded input: objects where objects are documented, plain JSON only, short echoes, and
//! a JSON error with a code for every failure, including the ones no handler produces.

use promptgate_server::config::AuthMode;
use reqwest::Method;
use serde_json::json;

use super::raw;
use crate::common::{Backend, Gateway, error_code, test_config};

#[tokio::test]
async fn bodies_must_be_json_objects_sent_as_plain_json() {
    let gw = Gateway::single_user(Backend::Sqlite).await;
    for body in ["[]", "[\"t1\"]", "\"t1\"", "42", "null"] {
        let (status, err) = gw
            .raw(Method::POST, "/v1/threads", "application/json", body.into())
            .await;
        assert_eq!(status, 422, "{body}: {err}");
        assert_eq!(error_code(&err), "invalid_body");
    }
    let (status, err) = gw
        .raw(Method::POST, "/v1/threads", "application/json", b"[".to_vec())
        .await;
    assert_eq!(status, 400, "{err}");
    assert_eq!(error_code(&err), "malformed_json");
    for kind in [
        "application/json-patch+json",
        "text/plain",
        "application/json; charset=latin1",
    ] {
        let (status, err) = gw.raw(Method::POST, "/v1/threads", kind, b"{}".to_vec()).await;
        assert_eq!(status, 415, "{kind}: {err}");
        assert_eq!(error_code(&err), "unsupported_media_type");
    }
    let (status, _) = gw
        .raw(
            Method::POST,
            "/v1/threads",
            "application/json; charset=utf-8",
            b"{}".to_vec(),
        )
        .await;
    assert_eq!(status, 201);
    let (_, threads) = gw.get("/v1/threads").await;
    assert_eq!(
        threads.as_array().unwrap().len(),
        1,
        "no refused body created a thread"
    );
}

#[tokio::test]
async fn a_huge_bad_value_is_quoted_only_in_part() {
    let gw = Gateway::single_user(Backend::Sqlite).await;
    let zone = format!("Mars/{}", "x".repeat(900 * 1024));
    let res = gw
        .response(
            Method::PUT,
            "/v1/settings",
            Some(&json!({"time_zone": zone})),
            None,
        )
        .await;
    assert_eq!(res.status(), 422);
    let text = res.text().await.unwrap();
    assert!(text.len() < 2048, "the error is {} bytes", text.len());
    let err: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(error_code(&err), "invalid_body");
    assert!(
        err["error"]["message"].as_str().unwrap().contains("Mars/xxx"),
        "{err}"
    );

    // serde's own explanations quote input too.
    let res = gw
        .response(
            Method::PUT,
            "/v1/settings",
            Some(&json!({"localization": {"distance_unit": "y".repeat(500_000)}})),
            None,
        )
        .await;
    assert_eq!(res.status(), 422);
    assert!(res.text().await.unwrap().len() < 2048);
}

#[tokio::test]
async fn errors_no_handler_produces_are_json_with_a_code() {
    let mut config = test_config(AuthMode::SingleUser);
    config.limits.request_timeout_secs = 1;
    let gw = Gateway::start(Backend::Sqlite, config).await;
    let host = "host: 127.0.0.1";

    for (what, head, status, code) in [
        (
            "a path that is not UTF-8",
            format!("GET /v1/threads/%FF%FE HTTP/1.1\r\n{host}"),
            400,
            "invalid_request",
        ),
        (
            "a method the route lacks",
            format!("PATCH /v1/settings HTTP/1.1\r\n{host}"),
            405,
            "method_not_allowed",
        ),
        (
            "a long URI",
            format!(
                "GET /v1/threads?project_id={} HTTP/1.1\r\n{host}",
                "p".repeat(10_000)
            ),
            414,
            "uri_too_long",
        ),
        (
            "a big head",
            format!(
                "GET /v1/settings HTTP/1.1\r\n{host}\r\nx-filler: {}",
                "h".repeat(40_000)
            ),
            431,
            "headers_too_large",
        ),
    ] {
        let answer = raw(gw.addr, &head, b"").await;
        assert_eq!(answer.status, status, "{what}: {answer:?}");
        assert_eq!(answer.code(), code, "{what}");
    }

    // A probe of an MCP server that accepts and never answers outlives the request deadline.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_addr = silent.local_addr().unwrap();
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((tcp, _)) = silent.accept().await {
            open.push(tcp);
        }
    });
    let server = gw
        .register_mcp_server("silent", &format!("http://{silent_addr}/mcp"))
        .await;
    let timed_out = raw(
        gw.addr,
        &format!(
            "POST /v1/mcp-servers/{}/probe HTTP/1.1\r\n{host}",
            server["id"].as_str().unwrap()
        ),
        b"",
    )
    .await;
    assert_eq!(timed_out.status, 504, "{timed_out:?}");
    assert_eq!(timed_out.code(), "timeout");
    held.abort();
}
