//! What a client can put into the operator's metrics and logs: labels stay bounded whatever methods
//! and paths it sends.

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
    let metrics = gw.http.get(gw.url("/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.len() < 1_000_000, "/metrics is {} bytes", metrics.len());
    assert!(!metrics.contains("SCAN"), "a made-up method became a label");
    assert!(!metrics.contains("probe-"), "an unknown path became a label");
    assert!(
        metrics.contains(r#"promptgate_http_requests_total{route="unmatched",method="other",status="#),
        "{metrics}"
    );
}
