//! The offline demo as `make run` starts it (config/demo.toml): the demo model's first answer
//! searches the bundled pages, reads one without network, cites it and answers in Markdown.

#![allow(clippy::unwrap_used, clippy::panic)]

use crate::common;

use common::{Backend, Gateway};
use promptgate_server::config::{AuthMode, Config};

fn demo_config() -> Config {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../config/demo.toml");
    let config = Config::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(config.auth.mode, AuthMode::SingleUser, "the demo needs no token");
    config
}

#[tokio::test]
async fn the_demo_s_first_answer_searches_reads_and_cites_a_bundled_page() {
    common::init();
    let gw = Gateway::start(Backend::Sqlite, demo_config()).await;
    let sse = gw
        .stream(
            "/v1/chat",
            common::use_chat_body("demo-first", "What is promptgate?", "demo"),
        )
        .await;
    sse.assert_stopped();

    let tools: Vec<&str> = sse
        .of_type("tool-input-available")
        .iter()
        .map(|e| e["toolName"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["search", "fetch_content"]);
    let outputs = sse.of_type("tool-output-available");
    let read = outputs[1]["output"].to_string();
    assert!(
        read.contains("What promptgate is"),
        "the page was read offline: {read}"
    );

    let sources = sse.of_type("source-url");
    let first = sources[0]["url"].as_str().unwrap();
    assert_eq!(first, "https://guide.promptgate.invalid/what-it-is");

    let text = sse.text();
    assert!(text.contains("## From *What promptgate is*"), "Markdown: {text}");
    assert!(text.contains("[1]"), "a citation: {text}");

    // Stored with the same source, so a reload shows it too.
    let stored = gw.stored_messages("demo-first", 2).await;
    let stored_sources = stored[1]["metadata"]["sources"].as_array().unwrap();
    assert_eq!(stored_sources[0]["url"], first);
    assert_eq!(stored_sources[0]["index"], 1);
}
