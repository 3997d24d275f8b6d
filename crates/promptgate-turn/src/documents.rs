//! Reading a conversation's attached files for the model, off the async workers.
//!
//! Every send renders the whole history, so every file of a thread would be decoded and parsed
//! again on every send. Here each file is read once: on the runtime's blocking threads (at most
//! [`DocumentSettings::threads`] at once), within [`DocumentSettings::read_timeout`], and what came
//! out (its text, or why it could not be read) is kept by the hash of the user and the file, so a
//! later send of the thread finds it. A reading stops at its time limit (a PDF's extraction is
//! cut there, see [`crate::pdf`]) and frees its thread; the file then reads as too slow, on this
//! send and later ones.
//!
//! One user's files take at most all but one of the threads (one, when there are two), and they
//! wait for their turn among themselves before they wait for a thread: a request with a hundred
//! files slow to read holds its share and no more, and another user's file is read beside it.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;

use crate::attachments::{FileText, file_text, has_text, unreadable};
use crate::history::{part_type, parts};
pub use crate::pdf::PdfLimits;
use crate::pdf::{Deadline, took_too_long};

/// How much longer than its limit a reading is waited for before the send goes on without it:
/// the part of a reading not checked against its deadline (loading the file's objects) is
/// bounded by the file's size, not by a clock.
const BACKSTOP: Duration = Duration::from_secs(2);

/// How attached files are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DocumentSettings {
    pub pdf: PdfLimits,
    /// One file's reading, at most; past it the model is told the file took too long.
    pub read_timeout: Duration,
    /// Files read at once on this server; one user's files take at most all but one of them
    /// (one, when there are two or fewer).
    pub threads: usize,
    /// Files whose outcome is kept, so later sends do not read them again.
    pub kept: usize,
}

impl Default for DocumentSettings {
    fn default() -> Self {
        Self {
            pdf: PdfLimits::default(),
            read_timeout: Duration::from_secs(10),
            threads: 2,
            kept: 1024,
        }
    }
}

/// The texts of a conversation's files that were read, by the file (its name, type and data).
#[derive(Debug, Default)]
pub struct FileTexts {
    texts: HashMap<[u8; 32], String>,
}

/// No file read: every file reads as a label.
pub static NO_FILE_TEXTS: LazyLock<FileTexts> = LazyLock::new(FileTexts::default);

impl FileTexts {
    /// The text of the file part `part`, when it was read.
    pub fn get(&self, part: &Value) -> Option<&str> {
        if self.texts.is_empty() {
            return None;
        }
        let (name, media_type) = crate::history::file_identity(part);
        let url = part.get("url").and_then(Value::as_str)?;
        self.texts
            .get(&file_key(&[name, media_type, url]))
            .map(String::as_str)
    }

    /// The text of an inline file given by its base64 `data`, when it was read: as [`Self::get`]
    /// for its file part (URL `data:{media_type};base64,{data}`), without copying the data into one.
    pub fn get_inline(&self, name: &str, media_type: &str, data: &str) -> Option<&str> {
        if self.texts.is_empty() {
            return None;
        }
        let url = ["data:", media_type, ";base64,", data];
        let mut hash = Sha256::new();
        for field in [name, media_type] {
            hash.update((field.len() as u64).to_le_bytes());
            hash.update(field.as_bytes());
        }
        let url_len: usize = url.iter().map(|piece| piece.len()).sum();
        hash.update((url_len as u64).to_le_bytes());
        url.iter().for_each(|piece| hash.update(piece.as_bytes()));
        let key: [u8; 32] = hash.finalize().into();
        self.texts.get(&key).map(String::as_str)
    }
}

/// One file part to read.
struct FileRef {
    name: String,
    media_type: String,
    url: String,
}

/// What is known of a file: being read, or read.
#[derive(Clone)]
enum Kept {
    Reading,
    Read(String),
}

/// Outcomes by key, the oldest dropped first past the bound.
#[derive(Default)]
struct KeptOutcomes {
    outcomes: HashMap<[u8; 32], Kept>,
    order: VecDeque<[u8; 32]>,
}

impl KeptOutcomes {
    fn keep(&mut self, key: [u8; 32], outcome: Kept, bound: usize) {
        if self.outcomes.insert(key, outcome).is_none() {
            self.order.push_back(key);
        }
        while self.order.len() > bound.max(1) {
            if let Some(oldest) = self.order.pop_front() {
                self.outcomes.remove(&oldest);
            }
        }
    }
}

/// The server's file reader. Clones share its threads and kept outcomes.
#[derive(Clone)]
pub struct DocumentReader {
    inner: Arc<Inner>,
}

struct Inner {
    settings: DocumentSettings,
    threads: Arc<Semaphore>,
    /// Each reading user's share of the threads, while they have files being read or waiting.
    shares: Mutex<HashMap<String, Arc<Semaphore>>>,
    kept: Mutex<KeptOutcomes>,
}

impl Default for DocumentReader {
    fn default() -> Self {
        Self::new(DocumentSettings::default())
    }
}

impl DocumentReader {
    pub fn new(settings: DocumentSettings) -> Self {
        Self {
            inner: Arc::new(Inner {
                settings,
                threads: Arc::new(Semaphore::new(settings.threads.max(1))),
                shares: Mutex::new(HashMap::new()),
                kept: Mutex::new(KeptOutcomes::default()),
            }),
        }
    }

    /// The texts of the files in the user messages of `messages` that have one (see
    /// [`has_text`]), read for `owner`.
    pub async fn read(&self, owner: &str, messages: &[Value]) -> FileTexts {
        let files = files_to_read(messages);
        if files.is_empty() {
            return FileTexts::default();
        }
        let reads = files.into_iter().map(|file| async move {
            let key = file_key(&[&file.name, &file.media_type, &file.url]);
            (key, self.read_one(owner, file).await)
        });
        FileTexts {
            texts: futures::future::join_all(reads).await.into_iter().collect(),
        }
    }

    async fn read_one(&self, owner: &str, file: FileRef) -> String {
        let limit = self.inner.settings.read_timeout;
        let waited_until = tokio::time::Instant::now() + limit;
        let (name, media_type) = (file.name.clone(), file.media_type.clone());
        let too_slow = |why: &str| unreadable(&name, &media_type, why);
        let share = Share::of(&self.inner, owner);
        let Ok(Ok(turn)) =
            tokio::time::timeout_at(waited_until, Arc::clone(&share.gate).acquire_owned()).await
        else {
            return too_slow("the user's other files took the time there was to read it");
        };
        let Ok(Ok(permit)) =
            tokio::time::timeout_at(waited_until, Arc::clone(&self.inner.threads).acquire_owned()).await
        else {
            return too_slow("the server was too busy reading other files to read it");
        };
        let inner = Arc::clone(&self.inner);
        let owner = owner.to_owned();
        let reading = tokio::task::spawn_blocking(move || {
            let _held = (permit, turn);
            inner.text_of(&owner, &file, Deadline::after(limit))
        });
        match tokio::time::timeout(limit + BACKSTOP, reading).await {
            Ok(Ok(text)) => text,
            Ok(Err(err)) => {
                tracing::error!(error = %err, "reading an attached file failed");
                too_slow("reading it failed")
            }
            Err(_) => {
                metrics::counter!("promptgate_attachment_reads_total", "outcome" => "timeout").increment(1);
                too_slow(&took_too_long(limit))
            }
        }
    }
}

/// A user's share of the reading threads, held while one of their files waits or is read; the
/// last one out removes it, so the map holds only users with files in hand.
struct Share<'a> {
    inner: &'a Inner,
    owner: &'a str,
    gate: Arc<Semaphore>,
}

impl<'a> Share<'a> {
    fn of(inner: &'a Inner, owner: &'a str) -> Self {
        let threads = inner.settings.threads.max(1);
        let gate = Arc::clone(
            inner
                .shares()
                .entry(owner.to_owned())
                .or_insert_with(|| Arc::new(Semaphore::new(threads.saturating_sub(1).max(1)))),
        );
        Self { inner, owner, gate }
    }
}

impl Drop for Share<'_> {
    fn drop(&mut self) {
        let mut shares = self.inner.shares();
        // The map's and this one: nobody else waits or reads (a reading cut off at the backstop
        // still holds its turn, and leaves the share for the user's next file to remove).
        if Arc::strong_count(&self.gate) == 2 {
            shares.remove(self.owner);
        }
    }
}

impl Inner {
    fn shares(&self) -> MutexGuard<'_, HashMap<String, Arc<Semaphore>>> {
        self.shares
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn kept(&self) -> MutexGuard<'_, KeptOutcomes> {
        self.kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The file's text from the kept outcomes, else read now and kept. Runs on a blocking thread:
    /// the hash of a large file is work too.
    fn text_of(&self, owner: &str, file: &FileRef, deadline: Deadline) -> String {
        let key = key(owner, file);
        match self.kept().outcomes.get(&key).cloned() {
            Some(Kept::Read(text)) => return text,
            Some(Kept::Reading) => {
                return unreadable(
                    &file.name,
                    &file.media_type,
                    "it is still being read; try again shortly",
                );
            }
            None => {}
        }
        let bound = self.settings.kept;
        self.kept().keep(key, Kept::Reading, bound);
        let text = match file_text(
            &file.name,
            &file.media_type,
            &file.url,
            Some((self.settings.pdf, deadline)),
        ) {
            FileText::Text(text) => text,
            FileText::Label => crate::history::file_label(&file.name, &file.media_type),
        };
        metrics::counter!("promptgate_attachment_reads_total", "outcome" => "read").increment(1);
        self.kept().keep(key, Kept::Read(text.clone()), bound);
        text
    }
}

/// The file parts whose text is read, by position.
fn files_to_read(messages: &[Value]) -> Vec<FileRef> {
    let mut files = Vec::new();
    for message in messages {
        if message.get("role").and_then(Value::as_str) != Some("user") {
            continue;
        }
        for part in parts(message) {
            if part_type(part) != "file" {
                continue;
            }
            let field = |key: &str| part.get(key).and_then(Value::as_str);
            let (name, media_type) = crate::history::file_identity(part);
            let Some(url) = field("url").filter(|url| has_text(name, media_type, url)) else {
                continue;
            };
            files.push(FileRef {
                name: name.to_owned(),
                media_type: media_type.to_owned(),
                url: url.to_owned(),
            });
        }
    }
    files
}

/// Whose file, which file: the same bytes sent by another user are another entry, so a
/// collision could never show one user another's text.
fn key(owner: &str, file: &FileRef) -> [u8; 32] {
    file_key(&[owner, &file.name, &file.media_type, &file.url])
}

/// A hash of `fields`, each framed by its length.
fn file_key(fields: &[&str]) -> [u8; 32] {
    let mut hash = Sha256::new();
    for field in fields {
        hash.update((field.len() as u64).to_le_bytes());
        hash.update(field.as_bytes());
    }
    hash.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inline_file_is_found_by_its_data_as_by_its_part() {
        let part = serde_json::json!({"type": "file", "filename": "tides.pdf",
            "mediaType": "application/pdf", "url": "data:application/pdf;base64,JVBERi0xLjQK"});
        let mut files = FileTexts::default();
        let key = file_key(&[
            "tides.pdf",
            "application/pdf",
            "data:application/pdf;base64,JVBERi0xLjQK",
        ]);
        files.texts.insert(key, "High tide at 06:40".to_owned());
        assert_eq!(files.get(&part), Some("High tide at 06:40"));
        assert_eq!(
            files.get_inline("tides.pdf", "application/pdf", "JVBERi0xLjQK"),
            Some("High tide at 06:40")
        );
        assert_eq!(
            files.get_inline("tides.pdf", "application/pdf", "JVBERi0xLjQL"),
            None
        );
        assert_eq!(
            files.get_inline("other.pdf", "application/pdf", "JVBERi0xLjQK"),
            None
        );
    }

    #[tokio::test]
    async fn a_users_share_of_the_threads_is_let_go_once_their_files_are_read() {
        let reader = DocumentReader::default();
        let file = |n: u8| {
            serde_json::json!({"type": "file", "filename": format!("notes-{n}.txt"),
                "mediaType": "text/plain", "url": format!("data:text/plain;base64,{}", ["SGk=", "WW8="][n as usize])})
        };
        let message = serde_json::json!({"role": "user", "parts": [file(0), file(1)]});
        let texts = reader.read("ada", &[message]).await;
        assert_eq!(texts.texts.len(), 2);
        assert!(
            reader.inner.shares().is_empty(),
            "no share is kept for a user with no file in hand"
        );
        assert_eq!(reader.inner.threads.available_permits(), 2);
    }
}
