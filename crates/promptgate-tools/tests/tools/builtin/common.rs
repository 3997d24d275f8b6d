//! Rows and calls the built-in tools' tests share.

pub use promptgate_core::tools::{ToolError, ToolExecutor, ToolOutput};
pub use promptgate_store::{NewMessage, NewProject, NewThread, Role, Store};
pub use serde_json::{Value, json};

/// The store as the tools take it: one shared handle, seen through whichever storage trait a tool needs.
pub fn storage(store: &Store) -> std::sync::Arc<Store> {
    std::sync::Arc::new(store.clone())
}

/// A fresh user; returns its id.
pub async fn user(store: &Store, name: &str) -> String {
    store.create_user(name).await.unwrap().id
}

pub async fn project(store: &Store, user: &str, name: &str) -> String {
    let project = NewProject {
        name: name.to_owned(),
        instructions: None,
    };
    store.create_project(user, &project).await.unwrap().id
}

pub async fn thread(store: &Store, user: &str, id: &str, project: Option<&str>, title: Option<&str>) {
    let thread = NewThread {
        id: Some(id.to_owned()),
        project_id: project.map(str::to_owned),
        title: title.map(str::to_owned),
    };
    store.create_thread(user, &thread).await.unwrap();
}

pub async fn say(store: &Store, user: &str, thread: &str, words: &str) {
    let message = NewMessage {
        id: None,
        thread_id: thread.to_owned(),
        role: Role::User,
        parts: json!([{ "type": "text", "text": words }]),
        metadata: json!({}),
        status: None,
    };
    store.append_message(user, &message).await.unwrap();
}

/// The successful output of a call; fails the test with the error otherwise.
pub async fn run(tool: &dyn ToolExecutor, input: Value) -> ToolOutput {
    match tool.call(input.clone()).await {
        Ok(output) => output,
        Err(e) => panic!("call with {input} failed: {e}"),
    }
}

/// The error of a call that must fail.
pub async fn refused(tool: &dyn ToolExecutor, input: Value) -> ToolError {
    match tool.call(input.clone()).await {
        Ok(output) => panic!("call with {input} should have failed, got {:?}", output.output),
        Err(e) => e,
    }
}
