//! What a client can put into the operator's metrics and logs: labels stay bounded whatever methods
//! and paths it sends, and its request id is kept only when it is short and plain.

use reqwest::Method;

use crate::common::{Backend, Gateway};

#[tokio::test]
async fn made_up_methods_and_paths_share_one_label_each_and_metrics_stay_small() {
    let gw = Gateway::single_user(Backend::Sqlite).await;
    for i in 0..3000 {
        let method = Method::from_bytes(format!("SCAN{i}X").as_bytes()).unwrap();
        let path = if i % 2 == 0 {
            format!("/v1/threads/t{i}")
        } else {
            format!("/probe-{i}")
        };
        let res = gw.http.request(method, gw.url(&path)).send().await.unwrap();
        assert!(res.status().is_client_error(), "{}", res.status());
    }
    let metrics = gw.metrics_text().await;
    assert!(metrics.len() < 1_000_000, "/metrics is {} bytes", metrics.len());
    assert!(!metrics.contains("SCAN"), "a made-up method became a label");
    assert!(!metrics.contains("probe-"), "an unknown path became a label");
    assert!(
        metrics.contains(r#"promptgate_http_requests_total{route="unmatched",method="other",status="#),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_request_id_is_kept_only_when_short_and_plain() {
    let gw = Gateway::single_user(Backend::Sqlite).await;
    let answer = |sent: String| {
        let gw = &gw;
        async move {
            let res = gw
                .http
                .get(gw.url("/v1/threads/nowhere"))
                .header("x-request-id", sent)
                .send()
                .await
                .unwrap();
            let echoed = res.headers()["x-request-id"].to_str().unwrap().to_owned();
            let body: serde_json::Value = res.json().await.unwrap();
            assert_eq!(body["error"]["request_id"], echoed.as_str(), "{body}");
            echoed
        }
    };
    for kept in [
        "req-1",
        "9f1c2d3e-aaaa-4bbb-8ccc-0123456789ab",
        "trace:a_b.c+d/e==",
    ] {
        assert_eq!(answer(kept.to_owned()).await, kept);
    }
    // Too long, or with what would end a log field and forge the next one.
    for replaced in [
        "x".repeat(129),
        "abc status=500 user=admin".to_owned(),
        "a\"b".to_owned(),
        "tab\there".to_owned(),
    ] {
        let echoed = answer(replaced.clone()).await;
        assert_ne!(echoed, replaced);
        assert!(uuid_like(&echoed), "{echoed}");
    }
}

fn uuid_like(id: &str) -> bool {
    id.len() == 36 && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
}
