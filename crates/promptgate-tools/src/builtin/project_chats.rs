//! `search_project_chats`: keyword search over the other chats of the current chat's project.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use promptgate_core::storage::ChatSearch;
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
pub struct SearchProjectChats {
    chats: Arc<dyn ChatSearch>,
    user_id: String,
    project_name: String,
    sibling_ids: Vec<String>,
    titles: HashMap<String, String>,
}

impl SearchProjectChats {
    /// `siblings` are the project's other threads as `(thread_id, title)`, as the store's
    /// `sibling_threads` lists them; the current thread must not be among them.
    pub fn new(
        chats: Arc<dyn ChatSearch>,
        user_id: impl Into<String>,
        project_name: impl Into<String>,
        siblings: Vec<(String, Option<String>)>,
    ) -> Self {
        let sibling_ids = siblings.iter().map(|(id, _)| id.clone()).collect();
        let titles = siblings
            .into_iter()
            .filter_map(|(id, title)| {
                let title = title?.trim().to_owned();
                (!title.is_empty()).then_some((id, title))
            })
            .collect();
        Self {
            chats,
            user_id: user_id.into(),
            project_name: project_name.into(),
            sibling_ids,
            titles,
        }
    }

    fn title_of(&self, thread_id: &str) -> &str {
        self.titles.get(thread_id).map_or(UNTITLED, String::as_str)
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
        let hits = self
            .chats
            .search_messages(&self.user_id, &self.sibling_ids, query, PROJECT_CHAT_HIT_LIMIT)
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
            .map(|hit| format!("From \"{}\":\n{}", self.title_of(&hit.thread_id), hit.excerpt))
            .collect();
        let listed: Vec<Value> = hits
            .iter()
            .map(|hit| {
                json!({
                    "thread_id": hit.thread_id,
                    "title": self.title_of(&hit.thread_id),
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
