//! What the model reads in place of the part of a long conversation that no longer fits its context
//! window: a summary of it, or a note that it is left out. The block sits right after the stable
//! half of the system prompt and changes only when the thread is compacted again, so the cached
//! prefix of every send in between stays the same. Also the instructions the summariser model gets.

/// The older part of a conversation, as a send replaces it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Earlier<'a> {
    /// Messages of the conversation not included in the request.
    pub covered: u64,
    /// How many of them (the newest) the summary was written from.
    pub summarised: u64,
    /// `None`: nothing stands in for them.
    pub summary: Option<&'a str>,
}

/// The system prompt's block about the left-out part of the conversation.
pub fn earlier_block(earlier: &Earlier<'_>) -> String {
    let covered = earlier.covered;
    let (messages, are) = if covered == 1 {
        ("message", "is")
    } else {
        ("messages", "are")
    };
    match earlier.summary {
        Some(summary) => {
            let from = if earlier.summarised < covered {
                format!(
                    ". The summary was written from the last {} of them; the ones before those are lost",
                    earlier.summarised
                )
            } else {
                String::new()
            };
            format!(
                "# Earlier in this conversation\nThe first {covered} {messages} of this conversation {are} not \
                 shown to you; this is a summary of them{from}. Treat it as what was said, and say so when the \
                 user asks about a detail it does not keep.\n\n<summary>\n{}\n</summary>",
                summary.trim()
            )
        }
        None => format!(
            "# Earlier in this conversation\nThe first {covered} {messages} of this conversation {are} not \
             shown to you: they no longer fit your context window. If the user refers to something from \
             them, say that you cannot see it and ask them to repeat what matters."
        ),
    }
}

/// The system prompt of the summariser model.
pub const SUMMARISER_INSTRUCTIONS: &str = "You compress the older part of a conversation between a user and an \
     AI assistant so that the assistant can continue it without seeing those messages. Write a summary in \
     the conversation's language that keeps what the assistant will need: the user's goals, facts and \
     preferences they stated, decisions and conclusions reached, answers given with their key figures, \
     names, links and code identifiers, results of tool calls that were relied on, and questions left \
     open. Leave out greetings, repetition and how answers were phrased. Write plain prose or short \
     bullet points, in the third person (\"The user asked ...\"), with no preamble.";

/// The summariser's task: the summary so far (if any), then the messages it must take in, oldest
/// first, as a transcript. `omitted` messages between the two could not be shown to it.
pub fn summariser_task(previous: Option<&str>, omitted: u64, transcript: &str, max_words: u64) -> String {
    let mut task = String::new();
    if let Some(previous) = previous {
        task.push_str("Summary of the conversation so far:\n<summary>\n");
        task.push_str(previous.trim());
        task.push_str("\n</summary>\n\n");
    }
    if omitted > 0 {
        task.push_str(&format!(
            "({omitted} messages after that are too long to show here and are lost.)\n\n"
        ));
    }
    task.push_str("The messages that follow it:\n<transcript>\n");
    task.push_str(transcript);
    task.push_str("\n</transcript>\n\n");
    task.push_str(&format!(
        "Write one summary of everything above{}, in at most {max_words} words.",
        if previous.is_some() {
            " (the summary so far and the messages)"
        } else {
            ""
        }
    ));
    task
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_says_how_much_it_stands_for() {
        let block = earlier_block(&Earlier {
            covered: 120,
            summarised: 120,
            summary: Some("The user plans a garden.\n"),
        });
        assert!(block.starts_with("# Earlier in this conversation\nThe first 120 messages"));
        assert!(block.ends_with("<summary>\nThe user plans a garden.\n</summary>"));
        let partial = earlier_block(&Earlier {
            covered: 120,
            summarised: 80,
            summary: Some("x"),
        });
        assert!(partial.contains("written from the last 80 of them"));
    }

    #[test]
    fn without_a_summary_the_model_is_told_what_it_cannot_see() {
        let block = earlier_block(&Earlier {
            covered: 1,
            summarised: 0,
            summary: None,
        });
        assert!(block.contains("The first 1 message of this conversation is not shown to you"));
        assert!(block.contains("no longer fit your context window"));
    }

    #[test]
    fn the_task_carries_the_summary_so_far_and_what_was_lost() {
        let task = summariser_task(Some("Earlier."), 12, "User: hi", 300);
        assert!(task.starts_with("Summary of the conversation so far:\n<summary>\nEarlier.\n</summary>"));
        assert!(task.contains("(12 messages after that are too long to show here and are lost.)"));
        assert!(task.contains("<transcript>\nUser: hi\n</transcript>"));
        assert!(task.ends_with("in at most 300 words."));
        assert!(!summariser_task(None, 0, "x", 10).contains("so far"));
    }
}
