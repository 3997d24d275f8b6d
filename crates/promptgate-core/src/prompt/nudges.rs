//! Texts the turn engine sends as user messages to steer a model that is running out of steps, and the
//! citation reminder appended to the system prompt after tool steps.

use crate::settings::ModelProfile;

/// Last step of a turn: tools are gone, an answer is due.
pub const FINAL_STEP_NUDGE: &str = "This is the last step of this turn. Answer now with the information you have gathered, and do not ask the user any questions.";

/// Many tool steps in a row: time to stop collecting and write.
pub const PREVENTIVE_NUDGE: &str = "You have made a lot of tool calls already. Stop calling tools, bring together the results you have and answer now.";

/// The previous attempt ended without any text.
pub const RETRY_NUDGE: &str = "Your previous attempt ended without an answer. Reply now with the information you have gathered, and do not call any more tools.";

/// Appended (after a space) to the retry nudge on the final attempt.
pub const LAST_RETRY_SENTENCE: &str =
    "This is the final attempt: your reply must contain a non-empty answer.";

/// The web budget of this turn is spent. Profiles cannot replace this one: it states a fact.
pub const WEB_BUDGET_NUDGE: &str = "The web budget for this turn is used up, so no more web calls will run. Answer now with the results you already have.";

/// Steers a harness once after the web budget's first denial. Its other tools stay, so the model is
/// pointed at finishing the work with them rather than at answering at once.
pub const WEB_FLOOR_STEER: &str = "No more web searches or page fetches will run in this turn: its web budget is spent. \
Finish the task with the evidence you already gathered and the tools you still have, and say plainly which parts \
you could not cover or verify instead of presenting the answer as complete.";

/// Appended verbatim to the system prompt of every step after a tool step when the profile asks for it.
pub const DEFAULT_CITATION_REINFORCEMENT: &str = "\n\nReminder: cite every claim drawn from a tool result with [N], \
written once after the last sentence that uses that source, with a space before the bracket. Use no other citation format.";

pub fn final_step_nudge(profile: &ModelProfile) -> &str {
    profile.nudge_final_step.as_deref().unwrap_or(FINAL_STEP_NUDGE)
}

pub fn preventive_nudge(profile: &ModelProfile) -> &str {
    profile.nudge_preventive.as_deref().unwrap_or(PREVENTIVE_NUDGE)
}

/// The retry nudge, with the final-attempt sentence when `last_attempt`.
pub fn retry_nudge(profile: &ModelProfile, last_attempt: bool) -> String {
    let base = profile.nudge_retry.as_deref().unwrap_or(RETRY_NUDGE);
    if last_attempt {
        format!("{base} {LAST_RETRY_SENTENCE}")
    } else {
        base.to_owned()
    }
}

pub fn citation_reinforcement(profile: &ModelProfile) -> &str {
    profile
        .citation_reinforcement_prompt
        .as_deref()
        .unwrap_or(DEFAULT_CITATION_REINFORCEMENT)
}
