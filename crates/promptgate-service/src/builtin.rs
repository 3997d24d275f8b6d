//! Executors of the built-in tools, wired to this send's user, thread and turn state.

use std::sync::Arc;

use promptgate_core::budget::WebIntent;
use promptgate_core::tools::names;
use promptgate_store::SendContext;
use promptgate_tools::builtin::{
    AddTasks, DeleteTasks, FetchContent, GetTasks, RenderHtml, SearchProjectChats, SkillTool, WebSearch,
};

use super::Service;
use super::hooks::TurnState;
use super::toolset::Executors;

pub(super) async fn register(
    service: &Service,
    executors: &mut Executors,
    user_id: &str,
    ctx: &SendContext,
    state: &Arc<TurnState>,
) {
    let store = &service.store;
    // One handle for every tool of the send; each sees it through the storage trait it needs.
    let storage = Arc::new(store.clone());
    let thread_id = ctx.thread.as_ref().map(|t| t.id.clone());
    executors.insert(
        names::RENDER_HTML,
        Arc::new(RenderHtml::new(storage.clone(), user_id, thread_id.clone())),
    );
    executors.insert(
        names::ADD_TASKS,
        Arc::new(AddTasks::new(storage.clone(), user_id)),
    );
    executors.insert(
        names::GET_TASKS,
        Arc::new(GetTasks::new(storage.clone(), user_id)),
    );
    executors.insert(
        names::DELETE_TASKS,
        Arc::new(DeleteTasks::new(storage.clone(), user_id)),
    );

    // Loading the research skill may widen this turn's web budget (once; promotion is idempotent).
    let promoted = Arc::clone(state);
    let skill = SkillTool::new(ctx.skills.clone()).with_on_loaded(Arc::new(move |slug: &str| {
        promoted.budget().promote(WebIntent::of_skill(slug))
    }));
    executors.insert(names::SKILL, Arc::new(skill));

    if let Some(project) = &ctx.project
        && ctx.sibling_count > 0
    {
        // The search leaves out the chat it is called from. A new chat's preview has no thread
        // yet, so nothing to leave out: no thread has an empty id.
        let thread = thread_id.clone().unwrap_or_default();
        executors.insert(
            names::SEARCH_PROJECT_CHATS,
            Arc::new(SearchProjectChats::new(
                storage,
                user_id,
                project.id.clone(),
                project.name.clone(),
                thread,
            )),
        );
    }

    if let (Some(backend), Some(fetcher)) = (&service.web.search, &service.web.fetcher) {
        executors.insert(
            names::SEARCH,
            Arc::new(WebSearch::new(Arc::clone(backend), Arc::clone(&state.sources))),
        );
        executors.insert(
            names::FETCH_CONTENT,
            Arc::new(
                FetchContent::new(Arc::clone(fetcher), Arc::clone(&state.sources))
                    .with_bundle(Arc::clone(backend)),
            ),
        );
    }
}
