//! Skills: which ones the prompt discloses and how, and the `/slug` tokens that load one for a message.

use std::fmt::Write;

use crate::prompt::sanitize::{
    BLOCK_MAX_CHARS, DESCRIPTION_MAX_CHARS, SHORT_FIELD_MAX_CHARS, block, single_line,
};
use crate::settings::Skill;

/// Upper bound on skills listed in one prompt, so a runaway skill table cannot bloat every request.
pub const MAX_DISCLOSED_SKILLS: usize = 100;

const LISTING_GUIDANCE: &str = "Use the `skill` tool to load a skill's full instructions before you rely on it. \
When the user's message contains a `/name` token, that skill's instructions are already loaded for you.";
const FALLBACK_INSTRUCTIONS_INTRO: &str = "The complete instructions of each skill:";

/// The skills the prompt discloses: every enabled skill for a tool-capable model; for a model without
/// tools only the enabled skills that teach an inline widget, since nothing else can be loaded later.
pub fn select_prompt_skills(skills: &[Skill], supports_tools: bool) -> Vec<&Skill> {
    skills
        .iter()
        .filter(|s| s.enabled && (supports_tools || s.renders_widgets))
        .take(MAX_DISCLOSED_SKILLS)
        .collect()
}

/// `- <slug>: <description>` per skill, descriptions collapsed to one line.
pub fn skill_catalog(skills: &[&Skill]) -> Option<String> {
    if skills.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(skills.len() * 96);
    for (i, skill) in skills.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let slug = single_line(&skill.slug, SHORT_FIELD_MAX_CHARS);
        let description = single_line(&skill.description, DESCRIPTION_MAX_CHARS);
        // Writing to a String cannot fail.
        let _ = write!(out, "- {slug}: {description}");
    }
    Some(out)
}

/// For tool-capable models: `## Skills`, how to load one, then the catalog. Instructions stay out.
pub fn skill_listing(skills: &[&Skill]) -> Option<String> {
    let catalog = skill_catalog(skills)?;
    Some(format!("## Skills\n{LISTING_GUIDANCE}\n{catalog}"))
}

/// For models without tools: the catalog followed by every skill's full instructions.
pub fn fallback_skill_disclosure(skills: &[&Skill]) -> Option<String> {
    let catalog = skill_catalog(skills)?;
    let mut out = format!("## Skills\n{catalog}\n\n{FALLBACK_INSTRUCTIONS_INTRO}\n\n");
    for (i, skill) in skills.iter().enumerate() {
        if i > 0 {
            out.push_str("\n\n");
        }
        out.push_str("### ");
        out.push_str(&single_line(&skill.slug, SHORT_FIELD_MAX_CHARS));
        out.push('\n');
        out.push_str(&block(&skill.instructions, BLOCK_MAX_CHARS));
    }
    Some(out)
}

/// The `## Skills` fragment of `# Tools` for this model, if any skill is disclosed.
pub fn skill_disclosure(skills: &[Skill], supports_tools: bool) -> Option<String> {
    let selected = select_prompt_skills(skills, supports_tools);
    if supports_tools {
        skill_listing(&selected)
    } else {
        fallback_skill_disclosure(&selected)
    }
}

/// The `/slug` tokens of a message, deduplicated, in first-seen order, without the slash.
///
/// A token is a `/` at the start of the text or after whitespace, then one or more of `[A-Za-z0-9_-]`,
/// then whitespace or the end of the text. So `/notes.`, `a/b`, `docs/x` and URLs are not tokens, and
/// `/Research` yields `Research` (slugs are case-sensitive).
pub fn parse_skill_tokens(text: &str) -> Vec<&str> {
    let mut tokens: Vec<&str> = Vec::new();
    let mut after_space = true;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '/' && after_space {
            let start = i + 1;
            let mut end = start;
            while let Some(&(j, d)) = chars.peek() {
                if d.is_ascii_alphanumeric() || d == '_' || d == '-' {
                    end = j + 1;
                    chars.next();
                } else {
                    break;
                }
            }
            let at_boundary = chars.peek().is_none_or(|&(_, d)| is_js_whitespace(d));
            if end > start && at_boundary && !tokens.contains(&&text[start..end]) {
                tokens.push(&text[start..end]);
            }
            after_space = false;
            continue;
        }
        after_space = is_js_whitespace(c);
    }
    tokens
}

/// The instructions of each enabled skill named by a `/slug` token in `text`, in first-seen order.
pub fn resolve_skill_instructions(text: &str, skills: &[Skill]) -> Vec<String> {
    if text.is_empty() || !skills.iter().any(|s| s.enabled) {
        return Vec::new();
    }
    parse_skill_tokens(text)
        .into_iter()
        .filter_map(|slug| skills.iter().find(|s| s.enabled && s.slug == slug))
        .map(|s| s.instructions.clone())
        .collect()
}

/// The enabled skill the `skill` tool was asked for: the name is trimmed and one leading `/` dropped,
/// then matched exactly (case-sensitive) against the slugs.
pub fn find_enabled_skill<'a>(skills: &'a [Skill], requested: &str) -> Option<&'a Skill> {
    let trimmed = requested.trim();
    let slug = trimmed.strip_prefix('/').unwrap_or(trimmed);
    skills.iter().find(|s| s.enabled && s.slug == slug)
}

/// Whitespace as JavaScript regular expressions define `\s`, which the token rule is specified in.
fn is_js_whitespace(c: char) -> bool {
    (c.is_whitespace() && c != '\u{85}') || c == '\u{FEFF}'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_need_whitespace_or_text_edges_on_both_sides() {
        assert_eq!(parse_skill_tokens("/research rust async"), vec!["research"]);
        assert_eq!(parse_skill_tokens("please /meeting-notes."), Vec::<&str>::new());
        assert_eq!(
            parse_skill_tokens("a/b/c docs/x https://x.org/y"),
            Vec::<&str>::new()
        );
        assert_eq!(parse_skill_tokens("/a\t/b\n/a /c"), vec!["a", "b", "c"]);
        assert_eq!(parse_skill_tokens("/Research"), vec!["Research"]);
        assert_eq!(parse_skill_tokens("/ alone /x/y /ok"), vec!["ok"]);
        assert_eq!(parse_skill_tokens("\u{3000}/wide\u{A0}"), vec!["wide"]);
    }
}
