//! `render_html`: a valid document stored for its user and thread, each problem reported to the model.

use promptgate_store::testing::TestDb;
use promptgate_tools::builtin::{MAX_HTML_BYTES, RenderHtml};

use crate::builtin::common::*;

const CHART: &str = r#"<!DOCTYPE html>
<html><head><title>Rainfall</title>
<style>body { font-family: sans-serif; } .bar { background: teal; }</style>
<link rel="icon" href="data:image/png;base64,iVBORw0KGgo=">
<link rel="stylesheet" href="local.css">
</head><body>
<div id="chart"></div>
<script>
  const data = [3, 7, 2];
  document.getElementById('chart').innerHTML = data.map(v => `<div class="bar" style="width:${v}em">${v}</div>`).join('');
  const prefetch = (x) => x;
  prefetch(1);
</script>
</body></html>"#;

fn errors(output: &ToolOutput) -> Vec<String> {
    assert_eq!(output.output["ok"], json!(false), "{}", output.output);
    serde_json::from_value(output.output["errors"].clone()).unwrap()
}

/// The one error a document with exactly one problem gets.
async fn only_error(tool: &RenderHtml, html: &str, title: &str) -> String {
    let output = run(tool, json!({"html": html, "title": title})).await;
    let mut errors = errors(&output);
    assert_eq!(errors.len(), 1, "{errors:?}");
    errors.remove(0)
}

promptgate_store::on_both_backends! {
    async fn a_valid_document_is_stored_for_its_user_and_thread(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        thread(store, &alice, "weather", None, None).await;
        let tool = RenderHtml::new(storage(store), &alice, Some("weather".to_owned()));

        let output = run(&tool, json!({"html": CHART, "title": "  Rainfall by month "})).await;

        let id = output.output["artifact_id"].as_str().unwrap().to_owned();
        assert_eq!(
            output.output,
            json!({"ok": true, "artifact_id": id, "url": format!("/v1/artifacts/{id}"), "title": "Rainfall by month"})
        );
        let stored = store.get_artifact(&alice, &id).await.unwrap().unwrap();
        assert_eq!(stored.html, CHART);
        assert_eq!(stored.title, "Rainfall by month");
        assert_eq!(stored.thread_id.as_deref(), Some("weather"));
        assert_eq!(store.get_artifact(&bob, &id).await.unwrap(), None, "another user cannot read it");
    }

    async fn a_send_without_a_thread_stores_a_loose_artifact(store: &Store) {
        let alice = user(store, "Alice").await;
        let tool = RenderHtml::new(storage(store), &alice, None);
        let output = run(&tool, json!({"html": CHART, "title": "Rainfall"})).await;
        let id = output.output["artifact_id"].as_str().unwrap();
        let stored = store.get_artifact(&alice, id).await.unwrap().unwrap();
        assert_eq!(stored.thread_id, None);
    }

    async fn another_users_thread_is_refused(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        thread(store, &bob, "bobs", None, None).await;
        let tool = RenderHtml::new(storage(store), &alice, Some("bobs".to_owned()));
        let error = refused(&tool, json!({"html": CHART, "title": "Rainfall"})).await;
        assert_eq!(
            error.to_string(),
            "Could not store the artifact: this chat or user no longer exists."
        );
    }
}

/// Alice's tool on a fresh SQLite store, outside any thread; keep the store while the tool is used.
async fn alices_tool() -> (TestDb, RenderHtml) {
    let db = TestDb::sqlite().await;
    let alice = user(&db, "Alice").await;
    let tool = RenderHtml::new(storage(db.store()), &alice, None);
    (db, tool)
}

#[tokio::test]
async fn each_problem_is_reported_so_the_model_can_fix_it() {
    let (_db, tool) = alices_tool().await;
    let page = |body: &str| format!("<html><body>{body}</body></html>");

    assert!(only_error(&tool, "   ", "Empty").await.contains("html is empty"));
    let huge = page(&"x".repeat(MAX_HTML_BYTES));
    assert!(
        only_error(&tool, &huge, "Huge")
            .await
            .contains("keep it under 1048576 bytes")
    );
    assert!(
        only_error(&tool, "# A heading\n\nSome *markdown* text.", "Prose")
            .await
            .contains("does not look like HTML")
    );
    assert!(only_error(&tool, CHART, "  ").await.contains("title is empty"));
    assert!(
        only_error(&tool, CHART, &"t".repeat(201))
            .await
            .contains("at most 200")
    );
    assert_eq!(
        only_error(
            &tool,
            &page(r#"<script SRC="https://cdn.example.com/d3.js"></script>"#),
            "Cdn"
        )
        .await,
        "<script src=\"https://cdn.example.com/d3.js\"> loads from the network, but the artifact must work \
         offline: put its content inline."
    );
    assert!(
        only_error(
            &tool,
            &page(r#"<link rel='stylesheet' href='//fonts.example.com/a.css'>"#),
            "Font"
        )
        .await
        .starts_with("<link href=\"//fonts.example.com/a.css\"> loads from the network")
    );
    assert!(
        only_error(
            &tool,
            &page("<script>fetch('/api/data').then(r => r.json())</script>"),
            "Api"
        )
        .await
        .contains("calls fetch()")
    );
    assert!(
        only_error(
            &tool,
            &page("<script>const x = new XMLHttpRequest();</script>"),
            "Xhr"
        )
        .await
        .contains("uses XMLHttpRequest")
    );
    assert_eq!(
        only_error(
            &tool,
            &page("<script>let a = 1;<script>let b = 2;</script>"),
            "Scripts"
        )
        .await,
        "The <script> tags are unbalanced: 2 opened and 1 closed."
    );
}

#[tokio::test]
async fn all_problems_come_back_together_and_nothing_is_stored() {
    let (_db, tool) = alices_tool().await;
    let html = r#"<html><head><script src="http://x.example/a.js"></script>
        <link href="https://x.example/b.css" rel="stylesheet"></head>
        <body><script>fetch("/x")</body></html>"#;

    let output = run(&tool, json!({"html": html, "title": ""})).await;

    let errors = errors(&output);
    assert_eq!(errors.len(), 5, "{errors:?}");
    assert!(errors[0].contains("title is empty"));
    assert!(errors[1].contains("http://x.example/a.js"));
    assert!(errors[2].contains("https://x.example/b.css"));
    assert!(errors[3].contains("fetch()"));
    assert!(errors[4].contains("2 opened and 1 closed"));
    assert_eq!(output.output.get("artifact_id"), None);
    let model_text = output.model_text.unwrap();
    assert!(model_text.contains("call render_html again"), "{model_text}");
    assert!(
        model_text.contains("- The <script> tags are unbalanced"),
        "{model_text}"
    );
}

#[tokio::test]
async fn malformed_arguments_are_an_error_the_model_sees() {
    let (_db, tool) = alices_tool().await;
    let error = refused(&tool, json!({"html": CHART})).await;
    assert!(
        matches!(&error, ToolError::InvalidArguments(m) if m.contains("title")),
        "{error}"
    );
}
