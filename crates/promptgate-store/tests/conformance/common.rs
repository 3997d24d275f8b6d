//! Rows the conformance tests set up, the same way on both backends.

pub use promptgate_core::settings::*;
pub use promptgate_store::*;
pub use serde_json::{Value, json};

/// A fresh user; returns its id.
pub async fn user(store: &Store, name: &str) -> String {
    store.create_user(name).await.unwrap().id
}

pub fn model(id: &str) -> Model {
    Model {
        id: id.to_owned(),
        name: format!("Model {id}"),
        provider: "demo".to_owned(),
        upstream_model: "demo-1".to_owned(),
        tool_usage: 1,
        context_window: Some(128_000),
        supports_parallel_tool_calls: true,
        ..Model::default()
    }
}

pub fn text(s: &str) -> Value {
    json!([{ "type": "text", "text": s }])
}

pub async fn thread(store: &Store, user: &str, id: &str, project: Option<&str>, title: Option<&str>) {
    store
        .create_thread(
            user,
            &NewThread {
                id: Some(id.to_owned()),
                project_id: project.map(str::to_owned),
                title: title.map(str::to_owned),
            },
        )
        .await
        .unwrap();
}

pub async fn say(store: &Store, user: &str, thread: &str, role: Role, words: &str) -> Message {
    say_with_id(store, user, thread, None, role, words).await
}

/// [`say`] under a message id of the caller's (the same id again is an edit).
pub async fn say_with_id(
    store: &Store,
    user: &str,
    thread: &str,
    id: Option<&str>,
    role: Role,
    words: &str,
) -> Message {
    store
        .append_message(
            user,
            &NewMessage {
                id: id.map(str::to_owned),
                thread_id: thread.to_owned(),
                role,
                parts: text(words),
                metadata: json!({}),
                status: None,
            },
        )
        .await
        .unwrap()
}

pub async fn project(store: &Store, user: &str, name: &str) -> Project {
    store
        .create_project(
            user,
            &NewProject {
                name: name.to_owned(),
                instructions: None,
            },
        )
        .await
        .unwrap()
}

pub fn skill(slug: &str, enabled: bool) -> NewSkill {
    NewSkill {
        slug: slug.to_owned(),
        name: format!("Skill {slug}"),
        description: format!("Does {slug}"),
        instructions: format!("Steps for {slug}"),
        enabled,
        renders_widgets: false,
    }
}

/// An enabled MCP server with no headers, token or OAuth client; tests set what they look at.
pub fn mcp_server(name: &str) -> NewMcpServer {
    NewMcpServer {
        name: name.to_owned(),
        url: "https://mcp.example.com/mcp".to_owned(),
        enabled: true,
        headers: std::collections::BTreeMap::new(),
        bearer_token: None,
        oauth_client_id: None,
        oauth_client_secret: None,
    }
}
