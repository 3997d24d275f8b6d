//! The kept transcripts of harness-engine models, one per thread: the conversation the model saw
//! on the thread's last send (tool calls and results included), kept in memory while its signature
//! holds, so the next send continues it instead of replaying only the text of earlier turns.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};

use promptgate_llm::ChatMessage;
use promptgate_workspace::WorkspaceSession;
use tokio_util::sync::CancellationToken;

use promptgate_turn::engine::{TurnEnd, TurnStatus};

/// Threads whose harness one instance keeps; the least recently used goes first. A thread that lost
/// its harness is rebuilt from its stored messages on its next send.
pub const DEFAULT_KEPT_HARNESSES: usize = 256;

/// Bytes of transcript text one instance keeps across all threads; past it the least recently used
/// transcripts go first, and a transcript larger than all of it is not kept at all. Long threads have
/// transcripts of many megabytes, so a count alone does not bound the memory.
pub const DEFAULT_KEPT_HARNESS_BYTES: usize = 64 * 1024 * 1024;

/// What a harness run that would start on a spent web budget (a retry of a turn that used it up)
/// ends with, before any model request.
pub const REPLAY_REFUSED_TEXT: &str = "This turn's web budget is already used up, so retrying it would only \
     repeat the same answer. Send the message again yourself to start a new research attempt.";

/// Where a client runs, as the request names it; it shapes the harness prompt.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientIdentity {
    /// `web`, `ios`, `android`, `desktop` or `cli`; anything else is taken for `desktop`.
    pub environment: String,
    pub version: Option<String>,
}

impl ClientIdentity {
    /// The web app's identity, for requests that name none.
    pub fn web() -> Self {
        Self {
            environment: "web".to_owned(),
            version: None,
        }
    }
}

type ThreadKey = (String, String);

struct Kept {
    signature: String,
    /// The model-facing conversation, ending with the stored answer `answer_id`; empty while the
    /// first run of a rebuilt harness is under way.
    transcript: Vec<ChatMessage>,
    answer_id: Option<String>,
    /// Regenerations on this thread; part of the signature, so a regenerate starts over.
    revision: u32,
    run: Option<CancellationToken>,
    last_used: u64,
    /// What `transcript` takes, as [`transcript_bytes`] counts it.
    bytes: usize,
}

#[derive(Default)]
struct Inner {
    threads: HashMap<ThreadKey, Kept>,
    clock: u64,
    /// The sum of every kept transcript's bytes.
    bytes: usize,
}

impl Inner {
    /// Drops the least recently used transcripts, never `keep`, until both bounds hold.
    fn evict(&mut self, capacity: usize, max_bytes: usize, keep: &ThreadKey) {
        while self.threads.len() > capacity || self.bytes > max_bytes {
            let oldest = self
                .threads
                .iter()
                .filter(|(key, _)| *key != keep)
                .min_by_key(|(_, kept)| kept.last_used)
                .map(|(key, _)| key.clone());
            let Some(oldest) = oldest else { break };
            if let Some(gone) = self.threads.remove(&oldest) {
                self.bytes -= gone.bytes;
            }
        }
    }

    /// Replaces a kept transcript, keeping the byte count in step.
    fn set_transcript(&mut self, key: &ThreadKey, transcript: Vec<ChatMessage>) {
        let bytes = transcript_bytes(&transcript);
        if let Some(kept) = self.threads.get_mut(key) {
            self.bytes = self.bytes - kept.bytes + bytes;
            kept.transcript = transcript;
            kept.bytes = bytes;
        }
    }
}

/// About what a transcript takes in memory: its text, ids and arguments.
fn transcript_bytes(transcript: &[ChatMessage]) -> usize {
    use promptgate_llm::{ContentPart, UserContent};
    transcript
        .iter()
        .map(|message| {
            std::mem::size_of::<ChatMessage>()
                + match message {
                    ChatMessage::System { content } => content.len(),
                    ChatMessage::User {
                        content: UserContent::Text(text),
                    } => text.len(),
                    ChatMessage::User {
                        content: UserContent::Parts(parts),
                    } => parts
                        .iter()
                        .map(|part| match part {
                            ContentPart::Text { text } => text.len(),
                            ContentPart::ImageUrl { image_url } => image_url.url.len(),
                        })
                        .sum(),
                    ChatMessage::Assistant { content, tool_calls } => {
                        content.as_ref().map_or(0, String::len)
                            + tool_calls
                                .iter()
                                .map(|call| {
                                    call.id.len() + call.function.name.len() + call.function.arguments.len()
                                })
                                .sum::<usize>()
                    }
                    ChatMessage::Tool {
                        tool_call_id,
                        content,
                    } => tool_call_id.len() + content.len(),
                }
        })
        .sum()
}

/// The kept transcripts of this instance, by user and thread. Cheap to clone.
#[derive(Clone)]
pub(crate) struct KeptTranscripts {
    inner: Arc<Mutex<Inner>>,
    capacity: usize,
    max_bytes: usize,
}

/// How a harness send starts.
pub(crate) struct Started {
    /// The kept transcript to continue, or `None` when the harness was (re)built and the history
    /// is seeded from the stored thread.
    pub transcript: Option<Vec<ChatMessage>>,
}

impl KeptTranscripts {
    pub fn new(capacity: usize, max_bytes: usize) -> Self {
        Self {
            inner: Arc::default(),
            capacity: capacity.max(1),
            max_bytes,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The regeneration revision a send to the thread composes with: one more than the kept one when
    /// the send regenerates.
    pub fn revision(&self, user_id: &str, thread_id: &str, regenerate: bool) -> u32 {
        let kept = self
            .lock()
            .threads
            .get(&(user_id.to_owned(), thread_id.to_owned()))
            .map_or(0, |k| k.revision);
        kept + u32::from(regenerate)
    }

    /// Starts a run of the thread's harness. The kept transcript is continued only while the
    /// signature holds and it ends with the thread's latest stored answer (`previous_answer`):
    /// an edit, a regenerate or a turn another instance ran make it stale too. Otherwise the
    /// harness is rebuilt: a run of the stale one still going is stopped, and the workspace, which
    /// lives in the store, stays as it is.
    pub fn start(
        &self,
        key: (&str, &str),
        signature: &str,
        revision: u32,
        previous_answer: Option<&str>,
        run: CancellationToken,
    ) -> Started {
        let mut inner = self.lock();
        inner.clock += 1;
        let now = inner.clock;
        let key = (key.0.to_owned(), key.1.to_owned());
        if let Some(kept) = inner.threads.get_mut(&key) {
            let holds = kept.signature == signature
                && kept.answer_id.is_some()
                && kept.answer_id.as_deref() == previous_answer;
            if holds {
                kept.last_used = now;
                kept.run = Some(run);
                let transcript = std::mem::take(&mut kept.transcript);
                let handed_over = std::mem::take(&mut kept.bytes);
                inner.bytes -= handed_over;
                return Started {
                    transcript: Some(transcript),
                };
            }
            if let Some(stale) = kept.run.take() {
                stale.cancel();
            }
        }
        let replaced = inner.threads.insert(
            key.clone(),
            Kept {
                signature: signature.to_owned(),
                transcript: Vec::new(),
                answer_id: None,
                revision,
                run: Some(run),
                last_used: now,
                bytes: 0,
            },
        );
        inner.bytes -= replaced.map_or(0, |old| old.bytes);
        inner.evict(self.capacity, self.max_bytes, &key);
        Started { transcript: None }
    }

    /// Keeps the transcript of a run that completed; after a stop or an error the stored thread
    /// (with the partial answer) is the better start, so the harness is forgotten.
    fn finish(
        &self,
        key: &ThreadKey,
        signature: &str,
        answer_id: &str,
        status: TurnStatus,
        transcript: &[ChatMessage],
    ) {
        let mut inner = self.lock();
        let Some(kept) = inner.threads.get_mut(key) else {
            return;
        };
        if kept.signature != signature {
            // A newer harness has taken the thread's place meanwhile.
            return;
        }
        kept.run = None;
        if status != TurnStatus::Complete || transcript_bytes(transcript) > self.max_bytes {
            // A transcript larger than the whole budget would push out every other; the thread
            // rebuilds from its stored messages instead.
            kept.answer_id = None;
            inner.set_transcript(key, Vec::new());
            return;
        }
        kept.answer_id = Some(answer_id.to_owned());
        inner.set_transcript(key, transcript.to_vec());
        inner.evict(self.capacity, self.max_bytes, key);
    }
}

/// Hands a finished run's transcript back to the thread's harness.
pub(crate) struct KeepTranscript {
    pub transcripts: KeptTranscripts,
    pub user_id: String,
    pub thread_id: String,
    pub signature: String,
    pub answer_id: String,
}

impl TurnEnd for KeepTranscript {
    fn turn_ended<'a>(
        &'a self,
        status: TurnStatus,
        transcript: &'a [ChatMessage],
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        let key = (self.user_id.clone(), self.thread_id.clone());
        self.transcripts
            .finish(&key, &self.signature, &self.answer_id, status, transcript);
        Box::pin(std::future::ready(()))
    }
}

/// Saves what the workspace tools changed and could not save yet, so the next send (here or on
/// another instance) finds the turn's last changes once the stream has said it is done.
pub(crate) struct FlushWorkspace(pub Arc<WorkspaceSession>);

impl TurnEnd for FlushWorkspace {
    fn turn_ended<'a>(
        &'a self,
        _status: TurnStatus,
        _transcript: &'a [ChatMessage],
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            if let Err(err) = self.0.flush().await {
                tracing::warn!(error = %err, "the workspace's last changes could not be saved");
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use promptgate_llm::UserContent;

    fn said(text: &str) -> Vec<ChatMessage> {
        vec![ChatMessage::User {
            content: UserContent::Text(text.into()),
        }]
    }

    fn keep(h: &KeptTranscripts, thread: &str, signature: &str, answer: &str, status: TurnStatus) {
        let key = ("u".to_owned(), thread.to_owned());
        h.finish(&key, signature, answer, status, &said(thread));
    }

    #[test]
    fn a_transcript_is_continued_only_while_signature_and_latest_answer_hold() {
        let h = KeptTranscripts::new(8, DEFAULT_KEPT_HARNESS_BYTES);
        let first = h.start(("u", "t"), "sig", 0, None, CancellationToken::new());
        assert!(first.transcript.is_none(), "nothing kept yet");
        keep(&h, "t", "sig", "a1", TurnStatus::Complete);
        let next = h.start(("u", "t"), "sig", 0, Some("a1"), CancellationToken::new());
        assert_eq!(next.transcript, Some(said("t")));
        keep(&h, "t", "sig", "a2", TurnStatus::Complete);

        // The thread moved on elsewhere (an edit, another instance): rebuilt.
        assert!(
            h.start(("u", "t"), "sig", 0, Some("other"), CancellationToken::new())
                .transcript
                .is_none()
        );
        keep(&h, "t", "sig", "a3", TurnStatus::Complete);
        // A new signature rebuilds and stops the stale run.
        let running = CancellationToken::new();
        h.start(("u", "t"), "sig", 0, Some("a3"), running.clone());
        assert!(
            h.start(("u", "t"), "sig2", 0, Some("a3"), CancellationToken::new())
                .transcript
                .is_none()
        );
        assert!(running.is_cancelled());
        // A stopped run leaves nothing to continue.
        keep(&h, "t", "sig2", "a4", TurnStatus::Stopped);
        assert!(
            h.start(("u", "t"), "sig2", 0, Some("a4"), CancellationToken::new())
                .transcript
                .is_none()
        );
    }

    #[test]
    fn the_least_recently_used_harness_goes_first_and_users_are_apart() {
        let h = KeptTranscripts::new(2, DEFAULT_KEPT_HARNESS_BYTES);
        for thread in ["a", "b"] {
            h.start(("u", thread), "s", 0, None, CancellationToken::new());
            keep(&h, thread, "s", "x", TurnStatus::Complete);
        }
        assert!(
            h.start(("u", "a"), "s", 0, Some("x"), CancellationToken::new())
                .transcript
                .is_some()
        );
        keep(&h, "a", "s", "x", TurnStatus::Complete);
        h.start(("u", "c"), "s", 0, None, CancellationToken::new());
        assert!(
            h.start(("u", "b"), "s", 0, Some("x"), CancellationToken::new())
                .transcript
                .is_none()
        );
        assert!(
            h.start(("v", "a"), "s", 0, Some("x"), CancellationToken::new())
                .transcript
                .is_none()
        );
        assert_eq!(h.revision("u", "b", true), 1);
    }

    fn long(thread: &str, bytes: usize) -> Vec<ChatMessage> {
        vec![ChatMessage::User {
            content: UserContent::Text(format!("{thread}{}", "x".repeat(bytes))),
        }]
    }

    fn kept_one(h: &KeptTranscripts, thread: &str, bytes: usize) {
        h.start(("u", thread), "s", 0, None, CancellationToken::new());
        let key = ("u".to_owned(), thread.to_owned());
        h.finish(&key, "s", "x", TurnStatus::Complete, &long(thread, bytes));
    }

    fn continues(h: &KeptTranscripts, thread: &str) -> bool {
        h.start(("u", thread), "s", 0, Some("x"), CancellationToken::new())
            .transcript
            .is_some()
    }

    #[test]
    fn transcripts_are_bounded_by_their_bytes_least_recently_used_first() {
        let h = KeptTranscripts::new(100, 250_000);
        for thread in ["a", "b"] {
            kept_one(&h, thread, 100_000);
        }
        assert!(continues(&h, "a"), "two fit");
        kept_one(&h, "a", 100_000);
        // A third pushes the total past the bound: the least recently used (b) goes.
        kept_one(&h, "c", 100_000);
        assert!(continues(&h, "a"));
        kept_one(&h, "a", 100_000);
        assert!(continues(&h, "c"));
        kept_one(&h, "c", 100_000);
        assert!(
            !continues(&h, "b"),
            "evicted for its size although the count allows 100"
        );
        assert!(h.lock().bytes <= 250_000, "{}", h.lock().bytes);

        // A transcript larger than the whole bound is not kept, and pushes nothing out.
        kept_one(&h, "huge", 300_000);
        assert!(!continues(&h, "huge"));
        assert!(continues(&h, "a"), "the others stay");
    }

    #[test]
    fn the_byte_count_follows_every_change() {
        let h = KeptTranscripts::new(1, DEFAULT_KEPT_HARNESS_BYTES);
        kept_one(&h, "a", 10_000);
        let one = h.lock().bytes;
        assert!(one >= 10_000, "{one}");
        assert!(continues(&h, "a"));
        assert_eq!(
            h.lock().bytes,
            0,
            "a running harness holds its transcript outside the count"
        );
        let key = ("u".to_owned(), "a".to_owned());
        h.finish(&key, "s", "y", TurnStatus::Stopped, &long("a", 10_000));
        assert_eq!(h.lock().bytes, 0, "a stopped run keeps nothing");
        kept_one(&h, "a", 10_000);
        kept_one(&h, "b", 10_000);
        assert_eq!(
            h.lock().bytes,
            one,
            "the count holds one thread: the other went with its bytes"
        );
    }
}
