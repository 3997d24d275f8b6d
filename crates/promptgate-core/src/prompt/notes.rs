//! Per-send system notes: what changes from one send to the next and so stays out of the stable half.

use super::sanitize::{DESCRIPTION_MAX_CHARS, single_line};

/// Sent while the user talks to the assistant by voice.
pub const VOICE_MODE_NOTE: &str = "You are in voice mode: the user is speaking, and your replies are read aloud \
by text-to-speech. Keep every reply short and conversational, usually a sentence or two. Leave out Markdown, \
lists, code and URLs. Answer questions about yourself from what this prompt tells you; do not search the web \
for your own identity. Your voice is fixed for this conversation and cannot be changed. The user can interrupt \
you at any moment by speaking.";

const ASK_RESPONSES_HEADING: &str = "## User responses";
const ASK_RESPONSES_INTRO: &str = "The user already answered these interactive questions. Build on their answers and do not ask the same questions again.";
const NO_RESPONSE: &str = "(no response)";

/// One answered question from an `ask` widget, read from the stored message cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AskResponse {
    pub prompt: String,
    pub answer: AskAnswer,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskAnswer {
    /// The options the user picked; empty when they picked none.
    Chose(Vec<String>),
    /// Free-text answer of the older widget mode; empty when they wrote nothing.
    Answered(String),
}

/// Everything the per-send notes are built from.
#[derive(Debug, Clone)]
pub struct NotesInput<'a> {
    /// `PromptParts::volatile`.
    pub date_line: &'a str,
    pub voice_mode: bool,
    /// From `skills::resolve_skill_instructions` over the last user message.
    pub skill_instructions: Vec<String>,
    pub ask_responses: &'a [AskResponse],
}

/// The notes in the order the model reads them: date, voice note, skill instructions, ask responses.
pub fn volatile_notes(input: NotesInput<'_>) -> Vec<String> {
    let mut notes = Vec::with_capacity(3 + input.skill_instructions.len());
    notes.push(input.date_line.to_owned());
    if input.voice_mode {
        notes.push(VOICE_MODE_NOTE.to_owned());
    }
    notes.extend(input.skill_instructions);
    if let Some(note) = format_ask_responses_note(input.ask_responses) {
        notes.push(note);
    }
    notes
}

/// `## User responses` with one line per answered question, or `None` when there is nothing to report.
/// Prompts and answers are collapsed to one line each so an answer cannot forge further entries.
pub fn format_ask_responses_note(responses: &[AskResponse]) -> Option<String> {
    if responses.is_empty() {
        return None;
    }
    let mut out = format!("{ASK_RESPONSES_HEADING}\n{ASK_RESPONSES_INTRO}");
    for response in responses {
        out.push_str("\n- ");
        push_quoted(&mut out, &response.prompt);
        out.push_str(" \u{2014} ");
        match &response.answer {
            AskAnswer::Chose(choices) if choices.is_empty() => out.push_str(NO_RESPONSE),
            AskAnswer::Chose(choices) => {
                out.push_str("chose ");
                for (i, choice) in choices.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    push_quoted(&mut out, choice);
                }
            }
            AskAnswer::Answered(text) => {
                out.push_str("answered ");
                if single_line(text, DESCRIPTION_MAX_CHARS).is_empty() {
                    out.push_str(NO_RESPONSE);
                } else {
                    push_quoted(&mut out, text);
                }
            }
        }
    }
    Some(out)
}

fn push_quoted(out: &mut String, text: &str) {
    out.push('"');
    out.push_str(&single_line(text, DESCRIPTION_MAX_CHARS));
    out.push('"');
}
