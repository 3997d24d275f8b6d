//! The thread as it now reads, worked out from its stored messages in one pass.
//!
//! A turn stores one answer per user message, so an answer directly followed by another answer was
//! replaced by a regenerate (or an automatic retry): only the later one is part of the conversation.
//! A user message whose id repeats an earlier user message of the thread is an edit of it: the edit
//! takes that message's place and what followed the old version leaves the conversation. Replaced
//! messages stay stored; the model and the default message listing see this view.
//!
//! A send reads a long thread backwards, page by page, and stops once its model's window is full,
//! so the same rules also apply to a slice of the newest messages: what the slice settles on its own,
//! and what still depends on messages before it (an edit of a message below the slice cuts away what
//! the slice holds before the edit; an answer opening the slice replaces one just before it).

use std::borrow::Borrow;
use std::collections::HashMap;
use std::sync::Arc;

use crate::types::{Message, Role, ThreadContext};

/// A slice's part of the conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// Indices into the slice of its messages that are part of the conversation, in order.
    pub kept: Vec<usize>,
    /// `kept[..settled_from]` stay in the conversation only if an edit of a message below the slice
    /// does not cut them away; from here on the slice alone decides.
    pub settled_from: usize,
    /// The slice changes what comes before it: it edits a message below it, or opens with an
    /// answer that replaces one just before it.
    pub reaches_below: bool,
}

/// Works out which messages of `slice` (stored messages in order) form the conversation. With
/// `from_start` the slice is the whole thread; otherwise unknown messages precede it, and the
/// resolution says where they could still matter. The slice holds messages or shared ones (a
/// send's tail).
pub fn resolve<M: Borrow<Message>>(slice: &[M], from_start: bool) -> Resolution {
    let first_seq = slice.first().map_or(0, |m| m.borrow().seq);
    let mut kept: Vec<usize> = Vec::with_capacity(slice.len());
    // The user messages in `kept`, by id, with their place there: an edit finds its original in
    // constant time, so a rebuild stays linear however many edits the thread holds.
    let mut users: HashMap<&str, usize> = HashMap::new();
    let mut settled_from = 0;
    let mut reaches_below = false;
    for (at, message) in slice.iter().enumerate() {
        let message = message.borrow();
        match message.role {
            Role::Assistant => match kept.last() {
                Some(&top) if slice[top].borrow().role == Role::Assistant => {
                    kept.pop();
                }
                None if !from_start => reaches_below = true,
                _ => {}
            },
            Role::User => {
                let original = users.get(message.id.as_str()).copied();
                let below = !from_start && message.edit_of.is_some_and(|seq| seq < first_seq);
                match original {
                    // The original is settled: the edit cuts the conversation there.
                    Some(place) if place >= settled_from => {
                        for &gone in &kept[place..] {
                            let gone = slice[gone].borrow();
                            if gone.role == Role::User {
                                users.remove(gone.id.as_str());
                            }
                        }
                        kept.truncate(place);
                    }
                    // The original may already be gone (cut away from below), or be the message
                    // below the slice it edits: either way what precedes the edit is unknown here.
                    Some(_) => settled_from = kept.len(),
                    None if below => {
                        reaches_below = true;
                        settled_from = kept.len();
                    }
                    None => {}
                }
                users.insert(message.id.as_str(), kept.len());
            }
        }
        kept.push(at);
    }
    Resolution {
        kept,
        settled_from,
        reaches_below,
    }
}

/// The thread as it now reads (see the module's rules), from all of its stored messages in order.
pub fn current_conversation(messages: Vec<Message>) -> Vec<Message> {
    let kept = resolve(&messages, true).kept;
    let mut wanted = kept.into_iter().peekable();
    messages
        .into_iter()
        .enumerate()
        .filter_map(|(at, message)| wanted.next_if_eq(&at).map(|_| message))
        .collect()
}

/// The newest stored messages of a thread, as far back as a send has read them, and the record
/// standing in for its compacted older part.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThreadTail {
    /// Stored messages in order, the newest last; replaced ones included. Shared: a send may take
    /// most of them from what an earlier send of the thread read (no copy per send).
    pub messages: Vec<Arc<Message>>,
    /// Nothing is stored before `messages[0]`.
    pub from_start: bool,
    /// What replaces the thread's older part in a send, once it has been compacted.
    pub context: Option<ThreadContext>,
}

impl ThreadTail {
    /// The end of the conversation that the messages read so far settle on their own: it always
    /// holds the newest user message and whatever follows it.
    pub fn settled_end(&self) -> Vec<&Message> {
        let resolution = resolve(&self.messages, self.from_start);
        resolution.kept[resolution.settled_from..]
            .iter()
            .map(|&at| &*self.messages[at])
            .collect()
    }

    /// Position of the oldest message read, if any.
    pub fn oldest_seq(&self) -> Option<i64> {
        self.messages.first().map(|m| m.seq)
    }

    /// Puts messages stored before the ones read so far in front of them.
    pub fn prepend(&mut self, older: Vec<Arc<Message>>, from_start: bool) {
        let newer = std::mem::replace(&mut self.messages, older);
        self.messages.extend(newer);
        self.from_start = from_start;
    }

    /// Forgets the answers stored after the newest user message, for a send that answers it anew
    /// (a regenerate, or a retry of a turn that failed): the model must not see what it replaces.
    pub fn answer_newest_question(&mut self) {
        if let Some(at) = self.messages.iter().rposition(|m| m.role == Role::User) {
            self.messages.truncate(at + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn empty_object() -> Value {
        Value::Object(serde_json::Map::new())
    }

    fn message(id: &str, role: Role) -> Message {
        Message {
            id: id.to_owned(),
            thread_id: "t".to_owned(),
            role,
            parts: Value::Array(Vec::new()),
            metadata: empty_object(),
            status: None,
            created_at: 0,
            seq: 0,
            edit_of: None,
        }
    }

    /// Messages numbered by position from 1, with the edit marks the store writes on append.
    fn stored(spec: &[(&str, Role)]) -> Vec<Message> {
        let mut out: Vec<Message> = Vec::new();
        for (seq, (id, role)) in (1..).zip(spec) {
            let mut m = message(id, *role);
            m.seq = seq;
            if *role == Role::User {
                m.edit_of = out
                    .iter()
                    .rev()
                    .find(|o| o.role == Role::User && o.id == *id)
                    .map(|o| o.seq);
            }
            out.push(m);
        }
        out
    }

    fn ids(messages: &[Message]) -> Vec<&str> {
        messages.iter().map(|m| m.id.as_str()).collect()
    }

    #[test]
    fn only_the_last_of_consecutive_answers_is_current() {
        let stored = vec![
            message("u1", Role::User),
            message("a1", Role::Assistant),
            message("a1-again", Role::Assistant),
            message("a1-third", Role::Assistant),
            message("u2", Role::User),
            message("a2", Role::Assistant),
        ];
        assert_eq!(ids(&current_conversation(stored)), ["u1", "a1-third", "u2", "a2"]);
    }

    #[test]
    fn an_edited_message_replaces_its_old_version_and_what_followed() {
        let mut stored = vec![
            message("u1", Role::User),
            message("a1", Role::Assistant),
            message("u2", Role::User),
            message("a2", Role::Assistant),
            message("u1", Role::User),
            message("a1-edited", Role::Assistant),
        ];
        for (seq, m) in (0..).zip(stored.iter_mut()) {
            m.seq = seq;
        }
        let current = current_conversation(stored);
        assert_eq!(ids(&current), ["u1", "a1-edited"]);
        assert_eq!(current[0].seq, 4, "the edit, not the old version");
    }

    #[test]
    fn an_edit_after_a_regenerate_still_cuts_at_the_edited_message() {
        let stored = vec![
            message("u1", Role::User),
            message("a1", Role::Assistant),
            message("u2", Role::User),
            message("a2", Role::Assistant),
            message("a2-again", Role::Assistant),
            message("u2", Role::User),
            message("a2-edited", Role::Assistant),
        ];
        assert_eq!(
            ids(&current_conversation(stored)),
            ["u1", "a1", "u2", "a2-edited"]
        );
    }

    #[test]
    fn user_messages_in_a_row_are_all_kept() {
        // A send whose turn failed before storing an answer leaves two user messages in a row.
        let stored = vec![
            message("u1", Role::User),
            message("u2", Role::User),
            message("a2", Role::Assistant),
        ];
        assert_eq!(ids(&current_conversation(stored)), ["u1", "u2", "a2"]);
    }

    fn settled_ids(slice: &[Message]) -> Vec<&str> {
        let r = resolve(slice, false);
        r.kept[r.settled_from..]
            .iter()
            .map(|&at| slice[at].id.as_str())
            .collect()
    }

    #[test]
    fn a_slice_of_a_plain_thread_settles_all_it_holds() {
        let thread = stored(&[
            ("u1", Role::User),
            ("a1", Role::Assistant),
            ("u2", Role::User),
            ("a2", Role::Assistant),
        ]);
        let r = resolve(&thread[2..], false);
        assert_eq!((r.kept, r.settled_from, r.reaches_below), (vec![0, 1], 0, false));
        // An answer opening the slice may replace the one before it.
        assert!(resolve(&thread[1..], false).reaches_below);
        assert!(!resolve(&thread[1..], true).reaches_below);
    }

    #[test]
    fn an_edit_of_a_message_below_the_slice_leaves_what_precedes_it_unsettled() {
        let thread = stored(&[
            ("u1", Role::User),
            ("a1", Role::Assistant),
            ("u2", Role::User),
            ("a2", Role::Assistant),
            ("u1", Role::User),
            ("a1-edited", Role::Assistant),
        ]);
        let slice = &thread[2..];
        let r = resolve(slice, false);
        assert!(r.reaches_below);
        assert_eq!(settled_ids(slice), ["u1", "a1-edited"]);
        // Read from the start, the edit's original is found and what followed it goes.
        assert_eq!(ids(&current_conversation(thread)), ["u1", "a1-edited"]);
    }

    /// A small deterministic generator of threads with regenerates, resends and edits.
    fn generated_thread(seed: u64, len: usize) -> Vec<Message> {
        let mut state = seed;
        let mut next = move |n: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        let mut spec: Vec<(String, Role)> = Vec::new();
        let mut users = 0;
        for _ in 0..len {
            let (id, role) = match next(10) {
                0..=3 => {
                    users += 1;
                    (format!("u{users}"), Role::User)
                }
                // An edit of an earlier question.
                4 if users > 0 => (format!("u{}", 1 + next(users)), Role::User),
                _ => (format!("a{}", spec.len()), Role::Assistant),
            };
            spec.push((id, role));
        }
        let borrowed: Vec<(&str, Role)> = spec.iter().map(|(id, role)| (id.as_str(), *role)).collect();
        stored(&borrowed)
    }

    #[test]
    fn what_a_slice_settles_is_the_end_of_the_whole_conversation() {
        for seed in 0..40 {
            let thread = generated_thread(seed, 60);
            let whole: Vec<i64> = current_conversation(thread.clone())
                .iter()
                .map(|m| m.seq)
                .collect();
            for from in 0..thread.len() {
                let slice = &thread[from..];
                let r = resolve(slice, from == 0);
                let settled: Vec<i64> = r.kept[r.settled_from..].iter().map(|&at| slice[at].seq).collect();
                assert!(
                    whole.ends_with(&settled),
                    "seed {seed}, slice from {from}: {settled:?} is not the end of {whole:?}"
                );
                if !r.reaches_below {
                    let all: Vec<i64> = r.kept.iter().map(|&at| slice[at].seq).collect();
                    assert!(whole.ends_with(&all), "seed {seed}, slice from {from}");
                }
            }
        }
    }

    #[test]
    fn a_thread_edited_at_every_question_rebuilds_to_its_last_version() {
        // Each question edited once after its answer, many times over: the rebuild keeps finding
        // the originals and cutting after them.
        let mut spec: Vec<(String, Role)> = Vec::new();
        for n in 0..2_000 {
            spec.push((format!("u{n}"), Role::User));
            spec.push((format!("a{n}"), Role::Assistant));
            spec.push((format!("u{n}"), Role::User));
            spec.push((format!("a{n}-edited"), Role::Assistant));
        }
        let borrowed: Vec<(&str, Role)> = spec.iter().map(|(id, role)| (id.as_str(), *role)).collect();
        let current = current_conversation(stored(&borrowed));
        assert_eq!(current.len(), 4_000);
        assert_eq!(current[1].id, "a0-edited");
        assert_eq!(current[3_999].id, "a1999-edited");
        assert!(current.windows(2).all(|w| w[0].seq < w[1].seq));
    }
}
