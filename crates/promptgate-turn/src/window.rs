//! Which newest part of a conversation fits a model's context window: whole turns only (a turn
//! opens with a user message and holds the answer with every tool call and its result), so a call
//! is never sent without its result, and the newest turn is always kept.

use promptgate_llm::ChatMessage;
use promptgate_llm::tokens::TokenCounter;

/// One message of a conversation as fitting sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit {
    /// A turn may begin here: the message is one the user wrote.
    pub opens_turn: bool,
    /// Tokens it costs.
    pub tokens: usize,
}

/// Where the part to keep begins: the oldest turn start from which every message together costs
/// at most `room` tokens. The newest turn is kept whatever it costs (the provider then says whether
/// it fits); a conversation without a turn start is kept whole.
pub fn keep_from(units: &[Unit], room: usize) -> usize {
    let mut total = 0usize;
    let mut keep = None;
    for (at, unit) in units.iter().enumerate().rev() {
        total = total.saturating_add(unit.tokens);
        if !unit.opens_turn {
            continue;
        }
        if keep.is_some() && total > room {
            break;
        }
        keep = Some(at);
    }
    keep.unwrap_or(0)
}

/// Tokens the messages from `from` on cost.
pub fn tokens_from(units: &[Unit], from: usize) -> usize {
    units
        .get(from..)
        .map_or(0, |kept| kept.iter().map(|u| u.tokens).sum())
}

/// Model messages as fitting units: a user message opens a turn; tool results and the engine's
/// own steering (which follow an answer within a turn) never do.
pub fn units(messages: &[ChatMessage], counter: &TokenCounter) -> Vec<Unit> {
    let mut previous_was_user = false;
    messages
        .iter()
        .map(|message| {
            let user = matches!(message, ChatMessage::User { .. });
            // Two user messages in a row (a resend after a failed turn) are one turn.
            let opens_turn = user && !previous_was_user;
            previous_was_user = user;
            Unit {
                opens_turn,
                tokens: counter.message(message),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use promptgate_llm::tokens::Tokenizer;
    use promptgate_llm::{ToolCall, UserContent};

    fn unit(opens_turn: bool, tokens: usize) -> Unit {
        Unit { opens_turn, tokens }
    }

    #[test]
    fn the_newest_whole_turns_that_fit_are_kept() {
        let units = [
            unit(true, 10),
            unit(false, 10),
            unit(true, 10),
            unit(false, 30),
            unit(false, 5),
            unit(true, 10),
            unit(false, 10),
        ];
        assert_eq!(keep_from(&units, 1000), 0);
        assert_eq!(
            keep_from(&units, 65),
            2,
            "the second turn fits, the first would not"
        );
        assert_eq!(
            keep_from(&units, 64),
            5,
            "not the second turn's answer without its question"
        );
        assert_eq!(keep_from(&units, 1), 5, "the newest turn stays whatever it costs");
        assert_eq!(tokens_from(&units, 2), 65);
        assert_eq!(keep_from(&[unit(false, 50), unit(false, 50)], 10), 0);
    }

    #[test]
    fn a_tool_call_and_its_result_are_one_turn_with_the_question() {
        let user = |text: &str| ChatMessage::User {
            content: UserContent::Text(text.into()),
        };
        let messages = vec![
            user("What is the tide?"),
            ChatMessage::Assistant {
                content: None,
                tool_calls: vec![ToolCall::new("c1", "search", r#"{"q":"tide"}"#)],
            },
            ChatMessage::Tool {
                tool_call_id: "c1".into(),
                content: "06:40".repeat(40),
            },
            ChatMessage::Assistant {
                content: Some("At 06:40.".into()),
                tool_calls: Vec::new(),
            },
            user("And tomorrow?"),
            user("Please."),
        ];
        let counter = TokenCounter::new(Tokenizer::Estimate);
        let units = units(&messages, &counter);
        let opens: Vec<bool> = units.iter().map(|u| u.opens_turn).collect();
        assert_eq!(opens, [true, false, false, false, true, false]);
        let newest = tokens_from(&units, 4);
        assert_eq!(
            keep_from(&units, newest + 50),
            4,
            "the call's result is too big to keep"
        );
        assert_eq!(keep_from(&units, tokens_from(&units, 0)), 0);
    }
}
