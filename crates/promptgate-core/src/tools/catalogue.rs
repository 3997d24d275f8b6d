//! The built-in tools and the rules deciding which of them a send offers.

use std::sync::LazyLock;

use schemars::JsonSchema;

use super::ToolSpec;
use super::args::*;
use super::schema::schema_of;
use crate::settings::{IntegrationStatus, UserSettings};

/// Names the model calls the built-in tools by.
pub mod names {
    pub const RENDER_HTML: &str = "render_html";
    pub const ADD_TASKS: &str = "addTasks";
    pub const GET_TASKS: &str = "getTasks";
    pub const DELETE_TASKS: &str = "deleteTasks";
    pub const SEARCH: &str = "search";
    pub const FETCH_CONTENT: &str = "fetch_content";
    pub const GOOGLE_CHECK_INBOX: &str = "google_check_inbox";
    pub const GOOGLE_SEARCH_EMAILS: &str = "google_search_emails";
    pub const GOOGLE_GET_EMAIL: &str = "google_get_email";
    pub const GOOGLE_DRAFT_EMAIL: &str = "google_draft_email";
    pub const GOOGLE_CHECK_CALENDAR: &str = "google_check_calendar";
    pub const MICROSOFT_LIST_MESSAGES: &str = "microsoft_list_messages";
    pub const MICROSOFT_GET_MESSAGE: &str = "microsoft_get_message";
    pub const MICROSOFT_SEARCH_ONEDRIVE: &str = "microsoft_search_onedrive";
    pub const MICROSOFT_GET_ONEDRIVE_FILE_CONTENT: &str = "microsoft_get_onedrive_file_content";
    pub const SKILL: &str = "skill";
    pub const SEARCH_PROJECT_CHATS: &str = "search_project_chats";
    pub const READ: &str = "read";
    pub const WRITE: &str = "write";
    pub const EDIT: &str = "edit";
    pub const BASH: &str = "bash";

    /// The tools the per-turn web budget counts.
    pub const WEB: [&str; 2] = [SEARCH, FETCH_CONTENT];
    /// The harness engine's workspace tools, in the order they are offered (before the app's tools).
    pub const WORKSPACE: [&str; 4] = [READ, WRITE, EDIT, BASH];
}

/// Which gate a built-in tool sits behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gate {
    Always,
    Tasks,
    Web,
    Google,
    Microsoft,
}

struct Entry {
    gate: Gate,
    spec: ToolSpec,
}

fn spec<T: JsonSchema>(name: &str, description: &str, verb: &str, cacheable: bool) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        parameters: std::sync::Arc::new(schema_of::<T>()),
        verb: Some(verb.to_owned()),
        cacheable,
        web: names::WEB.contains(&name),
        mcp: None,
    }
}

/// In the order the model is offered them.
static CATALOGUE: LazyLock<Vec<Entry>> = LazyLock::new(|| {
    use names::*;
    let e = |gate, spec| Entry { gate, spec };
    vec![
        e(
            Gate::Always,
            spec::<RenderHtmlArgs>(
                RENDER_HTML,
                "Show the user an interactive HTML artifact (a chart, a calculator, a small app or a formatted \
             document) rendered in a sandbox next to the chat. Use it when a visual or interactive result \
             serves the user better than text.",
                "Rendering artifact",
                false,
            ),
        ),
        e(
            Gate::Tasks,
            spec::<AddTasksArgs>(
                ADD_TASKS,
                "Add one or more tasks to the user's task list.",
                "Adding tasks",
                false,
            ),
        ),
        e(
            Gate::Tasks,
            spec::<GetTasksArgs>(
                GET_TASKS,
                "Read the user's task list, with each task's id and state.",
                "Getting tasks",
                false,
            ),
        ),
        e(
            Gate::Tasks,
            spec::<DeleteTasksArgs>(
                DELETE_TASKS,
                "Remove tasks from the user's task list by id. Read the list first to learn the ids.",
                "Deleting tasks",
                false,
            ),
        ),
        e(
            Gate::Web,
            spec::<SearchArgs>(
                SEARCH,
                "Search the web. Every result carries a source label such as `[Source 3] (cite as [3])`; when \
             you use a result, cite it as [3] at the end of the sentence it supports. Results show short \
             snippets only: fetch a page with fetch_content when you need what it actually says.",
                "searching for {query}",
                true,
            ),
        ),
        e(
            Gate::Web,
            spec::<FetchContentArgs>(
                FETCH_CONTENT,
                "Read the text of one web page, for example a search result worth a closer look or a URL the \
             user gave. The result carries a source label such as `[Source 3] (cite as [3])`; cite what \
             you take from the page as [3] at the end of the sentence.",
                "fetching {url}",
                true,
            ),
        ),
        e(
            Gate::Google,
            spec::<GoogleCheckInboxArgs>(
                GOOGLE_CHECK_INBOX,
                "List recent conversations in the user's Gmail, newest first, optionally for another label.",
                "Checking Gmail inbox",
                false,
            ),
        ),
        e(
            Gate::Google,
            spec::<GoogleSearchEmailsArgs>(
                GOOGLE_SEARCH_EMAILS,
                "Find messages in the user's Gmail with Gmail's own search syntax.",
                "Searching Gmail messages",
                false,
            ),
        ),
        e(
            Gate::Google,
            spec::<GoogleGetEmailArgs>(
                GOOGLE_GET_EMAIL,
                "Read one Gmail message in full: sender, recipients, body and attachment list.",
                "Getting Gmail message details",
                false,
            ),
        ),
        e(
            Gate::Google,
            spec::<GoogleDraftEmailArgs>(
                GOOGLE_DRAFT_EMAIL,
                "Save an email as a draft in the user's Gmail. Nothing is sent: the user reviews and sends \
             the draft themselves.",
                "Creating Gmail draft",
                false,
            ),
        ),
        e(
            Gate::Google,
            spec::<GoogleCheckCalendarArgs>(
                GOOGLE_CHECK_CALENDAR,
                "List upcoming events from the user's Google Calendar.",
                "Checking Google Calendar",
                true,
            ),
        ),
        e(
            Gate::Microsoft,
            spec::<MicrosoftListMessagesArgs>(
                MICROSOFT_LIST_MESSAGES,
                "List messages in the user's Outlook mailbox, newest first, optionally filtered.",
                "Listing Microsoft messages",
                true,
            ),
        ),
        e(
            Gate::Microsoft,
            spec::<MicrosoftGetMessageArgs>(
                MICROSOFT_GET_MESSAGE,
                "Read one Outlook message in full.",
                "Getting Microsoft message",
                true,
            ),
        ),
        e(
            Gate::Microsoft,
            spec::<MicrosoftSearchOnedriveArgs>(
                MICROSOFT_SEARCH_ONEDRIVE,
                "Find files in the user's OneDrive by name or content.",
                "Searching OneDrive",
                true,
            ),
        ),
        e(
            Gate::Microsoft,
            spec::<MicrosoftGetOnedriveFileContentArgs>(
                MICROSOFT_GET_ONEDRIVE_FILE_CONTENT,
                "Read the text of one OneDrive file. Formats without extractable text are reported as such.",
                "Getting OneDrive file content",
                true,
            ),
        ),
    ]
});

/// The built-in tool called `name`, whatever its gate.
pub fn built_in(name: &str) -> Option<&'static ToolSpec> {
    CATALOGUE.iter().map(|e| &e.spec).find(|s| s.name == name)
}

/// Where a tool's work happens, as traces name it: `mcp` (a user's MCP server), `integration`
/// (Google or Microsoft on the user's behalf), `workspace` (the harness's files and shell) or
/// `built_in` (everything the gateway does itself).
pub fn origin(spec: &ToolSpec) -> &'static str {
    if spec.mcp.is_some() {
        return "mcp";
    }
    if names::WORKSPACE.contains(&spec.name.as_str()) {
        return "workspace";
    }
    let gate = CATALOGUE
        .iter()
        .find(|e| e.spec.name == spec.name)
        .map(|e| e.gate);
    match gate {
        Some(Gate::Google | Gate::Microsoft) => "integration",
        _ => "built_in",
    }
}

/// The built-in tools one send offers, in catalogue order. A model that cannot call tools gets none.
pub fn available(
    settings: &UserSettings,
    integrations: &IntegrationStatus,
    supports_tools: bool,
) -> Vec<ToolSpec> {
    if !supports_tools {
        return Vec::new();
    }
    let open = |gate: Gate| match gate {
        Gate::Always => true,
        Gate::Tasks => settings.experimental_tasks,
        Gate::Web => settings.web_tools_enabled,
        Gate::Google => integrations.google.usable(),
        Gate::Microsoft => integrations.microsoft.usable(),
    };
    CATALOGUE
        .iter()
        .filter(|e| open(e.gate))
        .map(|e| e.spec.clone())
        .collect()
}

static SKILL_SPEC: LazyLock<ToolSpec> = LazyLock::new(|| ToolSpec {
    name: names::SKILL.to_owned(),
    description: "Load the full instructions of one of the enabled skills listed in the prompt. Pass the \
                  skill's name exactly as listed, then follow the instructions it returns."
        .to_owned(),
    parameters: std::sync::Arc::new(schema_of::<SkillArgs>()),
    verb: None,
    cacheable: false,
    web: false,
    mcp: None,
});

static WORKSPACE_SPECS: LazyLock<Vec<ToolSpec>> = LazyLock::new(|| {
    use crate::prompt::WORKSPACE_HOME;
    use names::*;
    vec![
        spec::<ReadArgs>(
            READ,
            &format!(
                "Read a text file of the workspace. Relative paths start at {WORKSPACE_HOME}. Returns the \
                 lines from `offset` on, at most `limit` of them, and says where to continue when it stops \
                 early."
            ),
            "Reading {path}",
            false,
        ),
        spec::<WriteArgs>(
            WRITE,
            &format!(
                "Create or replace a file of the workspace with `content`; missing directories are created. \
                 Relative paths start at {WORKSPACE_HOME}."
            ),
            "Writing {path}",
            false,
        ),
        spec::<EditArgs>(
            EDIT,
            "Edit a workspace file by exact replacement: each `oldText` must occur exactly once in the file \
             and is replaced by its `newText`. The edits apply in order; if any fails, the file is unchanged.",
            "Editing {path}",
            false,
        ),
        spec::<BashArgs>(
            BASH,
            &format!(
                "Run a command in the workspace's simulated shell (no network; run `help` for its \
                 commands). Each call starts a fresh shell in {WORKSPACE_HOME}: files persist, variables \
                 and the working directory do not. Returns stdout, stderr and the exit code, cut to a size \
                 limit."
            ),
            "Running a command",
            false,
        ),
    ]
});

/// The harness engine's `read`, `write`, `edit` and `bash`, in [`names::WORKSPACE`] order. Only a
/// harness model that can call tools gets them; the legacy engine has no workspace.
pub fn workspace_specs() -> Vec<ToolSpec> {
    WORKSPACE_SPECS.clone()
}

/// The `skill` tool, offered to every model that can call tools.
pub fn skill_spec() -> ToolSpec {
    SKILL_SPEC.clone()
}

/// The `search_project_chats` tool for a project with other chats. The description names the project
/// so the model knows what it searches.
pub fn search_project_chats_spec(project_name: &str) -> ToolSpec {
    static PARAMETERS: LazyLock<std::sync::Arc<serde_json::Value>> =
        LazyLock::new(|| std::sync::Arc::new(schema_of::<SearchProjectChatsArgs>()));
    ToolSpec {
        name: names::SEARCH_PROJECT_CHATS.to_owned(),
        description: format!(
            "Search the other chats of the project \"{project_name}\" for earlier discussion. Matching is \
             by keyword, not by meaning: when nothing comes back, try again with synonyms or related \
             words (for example \"price\", then \"cost\" or \"budget\"). The current chat is not searched."
        ),
        parameters: PARAMETERS.clone(),
        verb: None,
        cacheable: false,
        web: false,
        mcp: None,
    }
}

/// Whether the toolset can both search and read pages, the condition for the prompt's web guidance.
pub fn has_web_tools(tools: &[ToolSpec]) -> bool {
    names::WEB.iter().all(|web| tools.iter().any(|t| t.name == *web))
}
