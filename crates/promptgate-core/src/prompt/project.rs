//! The `# Project: <name>` section, placed right after `# Context` in the stable half.

use super::sanitize::{BLOCK_MAX_CHARS, SHORT_FIELD_MAX_CHARS, block, single_line};
use crate::settings::Project;

/// The project a thread belongs to, as the prompt needs it.
#[derive(Debug, Clone, Copy)]
pub struct ProjectContext<'a> {
    pub project: &'a Project,
    /// Other chats of this project can be searched: the caller sets `supports_tools && siblings > 0`.
    pub has_searchable_chats: bool,
}

const SCOPE_LINE: &str = "The user is working inside this project, and its instructions apply to every message in this conversation.";
const INSTRUCTIONS_HEADING: &str = "## Project instructions\n";
const OTHER_CHATS: &str = "## Other chats in this project
The user has other conversations in this project. When they refer to something discussed earlier, use \
`search_project_chats` to find it. It matches keywords, not meaning, so retry with synonyms and other wording \
before concluding that nothing was said.";

/// The section, or `None` when there are neither instructions nor chats to search.
pub fn project_section(context: &ProjectContext<'_>) -> Option<String> {
    let instructions = context
        .project
        .instructions
        .as_deref()
        .map(|text| block(text, BLOCK_MAX_CHARS))
        .filter(|text| !text.is_empty());
    if instructions.is_none() && !context.has_searchable_chats {
        return None;
    }
    let name = single_line(&context.project.name, SHORT_FIELD_MAX_CHARS);
    let name = if name.is_empty() {
        "Untitled project"
    } else {
        &name
    };
    let mut out = String::with_capacity(256 + instructions.as_ref().map_or(0, String::len));
    out.push_str("# Project: ");
    out.push_str(name);
    out.push_str("\n\n");
    out.push_str(SCOPE_LINE);
    if let Some(instructions) = &instructions {
        out.push_str("\n\n");
        out.push_str(INSTRUCTIONS_HEADING);
        out.push_str(instructions);
    }
    if context.has_searchable_chats {
        out.push_str("\n\n");
        out.push_str(OTHER_CHATS);
    }
    Some(out)
}
