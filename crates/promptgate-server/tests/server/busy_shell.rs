//! CPU-heavy `bash` calls run beside the async workers, not on them: with several such calls
//! running on a gateway with two workers (a two-core machine), `/healthz` keeps answering, and
//! each call ends at its limit with a result the model can read.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use crate::common;

use common::{Gateway, scripted_config_with, use_chat_body};
use promptgate_core::settings::Engine;
use promptgate_llm::scripted::{ScriptedUpstream, text, tool_calls};
use promptgate_server::config::AuthMode;

/// Busy until the interpreter's clock stops it: a string copied longer at each of fewer iterations
/// than the loop limit.
const SPIN: &str =
    r#"{"command": "awk 'BEGIN { for (i = 0; i < 99999; i++) s = s \"0123456789\"; print length(s) }'"}"#;

/// More calls than the gateway has workers, so that, run on them, every worker would be taken.
const CALLS: usize = 4;

/// A harness gateway on `server`.
async fn harness_gateway(server: &tokio::runtime::Runtime, upstream: &ScriptedUpstream) -> Gateway {
    let mut config = scripted_config_with(
        AuthMode::SingleUser,
        &upstream.base_url(),
        "[workspace]\nbash_timeout_ms = 6000\n",
    );
    let model = config.models.iter_mut().find(|m| m.id == "scripted").unwrap();
    model.engine = Engine::Harness;
    Gateway::start_on(server, config).await
}

#[tokio::test]
async fn healthz_answers_while_cpu_heavy_bash_calls_run() {
    common::init();
    let server = common::server_runtime();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let gw = harness_gateway(&server, &upstream).await;
    for n in 0..CALLS {
        let arguments = [SPIN];
        upstream.push(tool_calls(&[(&format!("b{n}"), "bash", &arguments)]));
    }
    for _ in 0..CALLS {
        upstream.push(text(["Done."]));
    }

    let sends: Vec<_> = (0..CALLS)
        .map(|n| {
            gw.stream(
                "/v1/chat",
                use_chat_body(&format!("spin-{n}"), "Crunch.", "scripted"),
            )
        })
        .collect();
    let answers = futures::future::join_all(sends);
    tokio::pin!(answers);
    // Every send asked the model, whose answer is a call: from here on calls run, until the
    // answers end.
    while upstream.calls() < CALLS {
        tokio::select! {
            _ = &mut answers => panic!("the answers ended before every send asked the model"),
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
    }
    let answers = gw.healthy_during(answers).await;

    for sse in answers {
        let output = &sse.of_type("tool-output-available")[0]["output"];
        assert_eq!(output["exit_code"], 124, "the call ended at its limit: {output}");
        let stderr = output["stderr"].as_str().unwrap();
        assert!(stderr.contains("nothing was changed"), "{stderr}");
        assert_eq!(sse.text(), "Done.");
    }
    server.shutdown_background();
}
