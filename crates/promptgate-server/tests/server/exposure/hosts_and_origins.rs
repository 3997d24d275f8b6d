//! DNS rebinding (Host), cross-site requests (Origin) and CORS for a frontend on another origin.

use promptgate_server::config::AuthMode;
use serde_json::json;

use super::{Raw, raw};
use crate::common::{Backend, Gateway, test_config, use_chat_body};

/// A request on a fresh connection with the given Host and extra header lines.
async fn with_host(gw: &Gateway, method: &str, path: &str, host: &str, extra: &str, body: &[u8]) -> Raw {
    let mut head = format!("{method} {path} HTTP/1.1\r\nhost: {host}");
    if !extra.is_empty() {
        head.push_str("\r\n");
        head.push_str(extra);
    }
    raw(gw.addr, &head, body).await
}

/// A CORS header the answer must carry, lowercased: the names and methods it lists have no case.
fn listed(answer: &Raw, name: &str) -> String {
    answer
        .header(name)
        .unwrap_or_else(|| panic!("no {name}: {answer:?}"))
        .to_ascii_lowercase()
}

/// A JSON request as a page on `origin` sends it.
async fn json_from_origin(
    gw: &Gateway,
    method: &str,
    path: &str,
    host: &str,
    origin: &str,
    body: &[u8],
) -> Raw {
    let extra = format!("origin: {origin}\r\ncontent-type: application/json");
    with_host(gw, method, path, host, &extra, body).await
}

#[tokio::test]
async fn a_rebinding_page_can_neither_read_nor_change_anything_in_single_user_mode() {
    let gw = Gateway::single_user(Backend::Sqlite).await;
    let port = gw.addr.port();
    gw.put("/v1/settings", json!({"preferred_name": "Grace"})).await;

    let evil = format!("attacker.example:{port}");
    let body = br#"{"preferred_name": "Mallory"}"#;
    let put = json_from_origin(&gw, "PUT", "/v1/settings", &evil, &format!("http://{evil}"), body).await;
    assert_eq!(put.status, 421, "{put:?}");
    assert_eq!(put.code(), "host_not_allowed");
    let read = with_host(&gw, "GET", "/v1/settings", &evil, "", b"").await;
    assert_eq!(read.status, 421);
    assert!(!read.body.contains("Grace"), "{}", read.body);
    for host in [
        "attacker.example".to_owned(),
        format!("127.0.0.1.attacker.example:{port}"),
        format!("localhost.attacker.example:{port}"),
        format!("0.0.0.0:{port}"),
    ] {
        let res = with_host(&gw, "GET", "/v1/threads", &host, "", b"").await;
        assert_eq!(res.status, 421, "{host}: {res:?}");
    }

    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("127.9.8.7:{port}"),
        format!("[::1]:{port}"),
        "localhost".to_owned(),
    ] {
        let res = with_host(&gw, "GET", "/v1/settings", &host, "", b"").await;
        assert_eq!(res.status, 200, "{host}: {res:?}");
        assert_eq!(res.json()["preferred_name"], "Grace");
    }
}

#[tokio::test]
async fn hosts_the_operator_lists_are_answered() {
    let mut config = test_config(AuthMode::SingleUser);
    config.server.allowed_hosts = vec!["gw.lan".into()];
    let gw = Gateway::start(Backend::Sqlite, config).await;
    let port = gw.addr.port();
    let listed = with_host(&gw, "GET", "/v1/settings", &format!("GW.lan:{port}"), "", b"").await;
    assert_eq!(listed.status, 200, "{listed:?}");
    let other = with_host(
        &gw,
        "GET",
        "/v1/settings",
        &format!("gw.lan.evil:{port}"),
        "",
        b"",
    )
    .await;
    assert_eq!(other.status, 421);
}

#[tokio::test]
async fn tokens_mode_checks_hosts_only_when_some_are_listed() {
    let gw = Gateway::start(Backend::Sqlite, test_config(AuthMode::Tokens)).await;
    let user = gw.store.create_user("ada").await.unwrap();
    let token = gw.store.issue_token(&user.id).await.unwrap();
    let auth = format!("authorization: Bearer {token}");
    let res = with_host(&gw, "GET", "/v1/settings", "gw.example.org", &auth, b"").await;
    assert_eq!(res.status, 200, "a token is what protects tokens mode: {res:?}");
}

#[tokio::test]
async fn a_foreign_origin_cannot_change_state_whatever_the_content_type() {
    let gw = Gateway::single_user(Backend::Sqlite).await;
    let port = gw.addr.port();
    let host = format!("127.0.0.1:{port}");
    gw.post("/v1/threads", json!({"id": "kept"})).await;
    let server = gw
        .register_mcp_server("docs", "https://mcp.example.com/mcp")
        .await;
    let probe = format!("/v1/mcp-servers/{}/probe", server["id"].as_str().unwrap());

    for origin in ["http://attacker.example", "null", "http://localhost:5173"] {
        for (kind, body) in [
            ("text/plain", &b"{}"[..]),
            ("application/x-www-form-urlencoded", &b"a=b"[..]),
            ("multipart/form-data; boundary=x", &b"--x--"[..]),
        ] {
            for path in ["/v1/chat/kept/stop", probe.as_str()] {
                let res = with_host(
                    &gw,
                    "POST",
                    path,
                    &host,
                    &format!("origin: {origin}\r\ncontent-type: {kind}"),
                    body,
                )
                .await;
                assert_eq!(res.status, 403, "{origin} {kind} {path}: {res:?}");
                assert_eq!(res.code(), "origin_not_allowed");
            }
        }
        let delete = with_host(
            &gw,
            "DELETE",
            "/v1/threads/kept",
            &host,
            &format!("origin: {origin}"),
            b"",
        )
        .await;
        assert_eq!(delete.status, 403, "{delete:?}");
        let put = json_from_origin(
            &gw,
            "PUT",
            "/v1/settings",
            &host,
            origin,
            br#"{"preferred_name": "Mallory"}"#,
        )
        .await;
        assert_eq!(put.status, 403, "{put:?}");
    }
    let (status, _) = gw.get("/v1/threads/kept").await;
    assert_eq!(status, 200, "the thread survived");
    let (_, settings) = gw.get("/v1/settings").await;
    assert_ne!(settings["preferred_name"], "Mallory");

    // The server's own pages (same origin) and clients that send no Origin are served.
    let own = json_from_origin(
        &gw,
        "PUT",
        "/v1/settings",
        &host,
        &format!("http://{host}"),
        br#"{"preferred_name": "Own page"}"#,
    )
    .await;
    assert_eq!(own.status, 200, "{own:?}");
    let stop = with_host(&gw, "POST", "/v1/chat/kept/stop", &host, "", b"").await;
    assert_ne!(stop.status, 403, "{stop:?}");
    // Behind a proxy that rewrites Host, the page's own origin arrives as X-Forwarded-Host.
    let proxied = with_host(
        &gw,
        "POST",
        "/v1/chat/kept/stop",
        &host,
        "origin: https://gw.localhost\r\nx-forwarded-host: gw.localhost",
        b"",
    )
    .await;
    assert_eq!(proxied.status, 200, "{proxied:?}");
}

#[tokio::test]
async fn a_frontend_on_a_listed_origin_gets_cors_and_others_do_not() {
    let mut config = test_config(AuthMode::SingleUser);
    config.server.cors.allowed_origins = vec!["http://localhost:5173".into()];
    let gw = Gateway::start(Backend::Sqlite, config).await;
    let host = format!("127.0.0.1:{}", gw.addr.port());

    let preflight = |origin: &'static str| {
        let host = host.clone();
        let gw = &gw;
        async move {
            with_host(
                gw,
                "OPTIONS",
                "/v1/chat",
                &host,
                &format!(
                    "origin: {origin}\r\naccess-control-request-method: POST\r\n\
                     access-control-request-headers: content-type, authorization"
                ),
                b"",
            )
            .await
        }
    };
    let allowed = preflight("http://localhost:5173").await;
    assert!(allowed.status < 300, "{allowed:?}");
    assert_eq!(
        allowed.header("access-control-allow-origin"),
        Some("http://localhost:5173")
    );
    let methods = listed(&allowed, "access-control-allow-methods");
    assert!(methods.contains("post"), "{methods}");
    let headers = listed(&allowed, "access-control-allow-headers");
    assert!(
        headers.contains("authorization") && headers.contains("content-type"),
        "{headers}"
    );

    let refused = preflight("http://localhost:5174").await;
    assert_eq!(refused.header("access-control-allow-origin"), None, "{refused:?}");

    let body = serde_json::to_vec(&use_chat_body("cors", "hello", "demo")).unwrap();
    let send = |origin: &'static str| {
        let host = host.clone();
        let body = body.clone();
        let gw = &gw;
        async move { json_from_origin(gw, "POST", "/v1/chat", &host, origin, &body).await }
    };
    let answered = send("http://localhost:5173").await;
    assert_eq!(answered.status, 200, "{answered:?}");
    assert_eq!(
        answered.header("access-control-allow-origin"),
        Some("http://localhost:5173")
    );
    let exposed = listed(&answered, "access-control-expose-headers");
    assert!(exposed.contains("x-vercel-ai-ui-message-stream"), "{exposed}");
    assert!(answered.body.contains("\"finish\""), "{}", answered.body);

    let foreign = send("http://localhost:5174").await;
    assert_eq!(foreign.status, 403, "{foreign:?}");
    assert_eq!(foreign.code(), "origin_not_allowed");
    assert_eq!(foreign.header("access-control-allow-origin"), None);
}
