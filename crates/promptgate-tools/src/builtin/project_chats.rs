//! `search_project_chats`: keyword search over the other chats of the current chat's project.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use promptgate_core::storage::{ChatSearch, MessageSearch};
use promptgate_core::tools::args::SearchProjectChatsArgs;
use promptgate_core::tools::names;
use serde_json::{Value, json};

use super::{parse, shortened, storage_failed};
use promptgate_core::tools::{ToolError, ToolExecutor, ToolOutput};

/// Most messages one search returns.
pub const PROJECT_CHAT_HIT_LIMIT: u32 = 8;
const UNTITLED: &str = "Untitled chat";
/// A query echoed in the no-hits sentence is cut here.
const MAX_ECHOED_QUERY_CHARS: usize = 200;

/// Searches the messages of a project's sibling chats (never the current chat, never another user's).
/// The siblings are listed when the tool first runs, not when a send offers it: most sends never call
/// it, and a project can hold a hundred thousand chats.
pub struct SearchProjectChats {
    chats: Arc<dyn ChatSearch>,
    user_id: String,
    project_id: String,
    project_name: String,
    current_thread_id: String,
    siblings: tokio::sync::OnceCell<Siblings>,
}

/// A project's other chats, as listed on the tool's first run.
struct Siblings {
    ids: Vec<String>,
    titles: HashMap<String, String>,
}

impl Siblings {
    fn new(listed: Vec<(String, Option<String>)>) -> Self {
        let ids = listed.iter().map(|(id, _)| id.clone()).collect();
        let titles = listed
            .into_iter()
            .filter_map(|(id, title)| {
                let title = title?.trim().to_owned();
                (!title.is_empty()).then_some((id, title))
            })
            .collect();
        Self { ids, titles }
    }

    fn title_of(&self, thread_id: &str) -> &str {
        self.titles.get(thread_id).map_or(UNTITLED, String::as_str)
    }
}

impl SearchProjectChats {
    /// The tool for a send to `current_thread_id` of the user's project `project_id`.
    pub fn new(
        chats: Arc<dyn ChatSearch>,
        user_id: impl Into<String>,
        project_id: impl Into<String>,
        project_name: impl Into<String>,
        current_thread_id: impl Into<String>,
    ) -> Self {
        Self {
            chats,
            user_id: user_id.into(),
            project_id: project_id.into(),
            project_name: project_name.into(),
            current_thread_id: current_thread_id.into(),
            siblings: tokio::sync::OnceCell::new(),
        }
    }

    /// The project's other chats, listed once per send.
    async fn siblings(&self) -> Result<&Siblings, ToolError> {
        self.siblings
            .get_or_try_init(|| async {
                self.chats
                    .project_threads(&self.user_id, &self.project_id, &self.current_thread_id)
                    .await
                    .map(Siblings::new)
                    .map_err(|e| storage_failed("list the project's chats", e))
            })
            .await
    }
}

#[async_trait]
impl ToolExecutor for SearchProjectChats {
    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        let args: SearchProjectChatsArgs = parse(names::SEARCH_PROJECT_CHATS, &input)?;
        let query = args.query.trim();
        if query.is_empty() {
            return Err(ToolError::InvalidArguments(
                "the query is empty; give one or more keywords to look for".to_owned(),
            ));
        }
        let siblings = self.siblings().await?;
        let hits = self
            .chats
            .search_messages(
                &self.user_id,
                MessageSearch {
                    thread_ids: &siblings.ids,
                    query,
                    limit: PROJECT_CHAT_HIT_LIMIT,
                },
            )
            .await
            .map_err(|e| storage_failed("search the project's chats", e))?;
        if hits.is_empty() {
            let text = format!(
                "Nothing in the other chats of project \"{}\" matched \"{}\". This is a keyword search, \
                 not a semantic one: try different words, such as synonyms or a name mentioned in that chat.",
                shortened(&self.project_name, MAX_ECHOED_QUERY_CHARS),
                shortened(query, MAX_ECHOED_QUERY_CHARS)
            );
            return Ok(ToolOutput {
                output: json!({"hits": []}),
                model_text: Some(text),
            });
        }
        let blocks: Vec<String> = hits
            .iter()
            .map(|hit| format!("From \"{}\":\n{}", siblings.title_of(&hit.thread_id), hit.excerpt))
            .collect();
        let listed: Vec<Value> = hits
            .iter()
            .map(|hit| {
                json!({
                    "thread_id": hit.thread_id,
                    "title": siblings.title_of(&hit.thread_id),
                    "excerpt": hit.excerpt,
                })
            })
            .collect();
        Ok(ToolOutput {
            output: json!({"hits": listed}),
            model_text: Some(blocks.join("\n\n")),
        })
    }
}
