//! Long threads: a send's cost against the length of its thread. Threads of 10 to 20,000 messages
//! are filled straight into the store (as years of use would leave them), then sent to in
//! interleaved rounds; each send is timed to the first byte of its answer and to the first text of
//! it, and the gateway's peak memory during the send is read above its resident size when it was
//! idle (just started, before any send) and above its size right before the send. The first send to
//! each thread is reported apart: it is the one that compacts a thread past the window.

use std::fmt::Write;
use std::time::{Duration, Instant};

use promptgate_server::state::LOCAL_USER_ID;
use promptgate_store::{MessageStatus, NewMessage, NewThread, Role, Store};
use serde_json::{Value, json};

use crate::error::LoadError;
use crate::gateway::{GatewayProcess, Placement};
use crate::report::{mib, ms_tenths};

/// Thread lengths measured by default, in messages.
pub const SIZES: [usize; 5] = [10, 100, 1_000, 5_000, 20_000];
/// Bytes of text per stored message: the 20,000-message thread sent 6.7 MB.
const MESSAGE_BYTES: usize = 330;

/// How the long-threads scenario runs.
#[derive(Debug, Clone)]
pub struct ThreadsOptions {
    /// Thread lengths, in messages.
    pub sizes: Vec<usize>,
    /// Measured sends per thread, one per round.
    pub rounds: u32,
    /// The bench model's context window, in tokens.
    pub context_window: u64,
    pub placement: Placement,
    pub postgres_url: Option<String>,
}

/// One thread length's numbers.
#[derive(Debug, Default)]
struct Row {
    size: usize,
    first_send: Option<Sample>,
    samples: Vec<Sample>,
    sent_messages: u64,
    prompt_tokens: u64,
    /// The gateway's resident size once started, before any send.
    idle_kib: u64,
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    first_byte: Duration,
    first_text: Duration,
    /// The resident size right before the send, and the peak during it.
    before_kib: u64,
    peak_kib: u64,
}

impl Sample {
    fn peak_above_before(&self) -> u64 {
        self.peak_kib.saturating_sub(self.before_kib)
    }
}

/// Fills the threads on each store, measures them, and returns the report's section.
pub async fn run(
    http: &reqwest::Client,
    upstream_base_url: &str,
    options: &ThreadsOptions,
) -> Result<String, LoadError> {
    let mut out = format!(
        "\n## Long threads (bench model window {} tokens, {} rounds, medians)\n\n\
         | store | messages | filled in (s) | first send: first byte / first text (ms) | \
         first send: peak above the size before it (MiB) | first byte p50 (ms) | first text p50 (ms) | \
         peak above idle, highest (MiB) | messages sent | prompt tokens |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
        options.context_window, options.rounds
    );
    let scratch = std::env::temp_dir().join(format!("promptgate-scale-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&scratch).map_err(LoadError::Files)?;
    let sqlite = format!("sqlite://{}?mode=rwc", scratch.join("scale.db").display());
    let mut stores = vec![("SQLite", sqlite)];
    if let Some(url) = &options.postgres_url {
        stores.push(("Postgres", url.clone()));
    }
    for (label, url) in stores {
        let (rows, filled) = measure_store(http, upstream_base_url, &url, options).await?;
        for (row, fill) in rows.iter().zip(filled) {
            let _ = writeln!(out, "{}", table_row(label, row, fill));
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(out)
}

fn median<T: Copy + Ord>(mut values: Vec<T>) -> Option<T> {
    values.sort_unstable();
    values.get(values.len() / 2).copied()
}

fn table_row(store: &str, row: &Row, fill: Duration) -> String {
    let first = row.first_send.map_or_else(
        || "n/a".to_owned(),
        |s| format!("{} / {}", ms_tenths(s.first_byte), ms_tenths(s.first_text)),
    );
    let byte = median(row.samples.iter().map(|s| s.first_byte).collect());
    let text = median(row.samples.iter().map(|s| s.first_text).collect());
    let mib_or_na = |kib: Option<u64>| kib.map_or_else(|| "n/a".to_owned(), mib);
    // Every send of this thread, the first included: the most it ever held above idle.
    let highest = row
        .first_send
        .iter()
        .chain(&row.samples)
        .map(|s| s.peak_kib.saturating_sub(row.idle_kib))
        .max();
    format!(
        "| {store} | {} | {:.1} | {first} | {} | {} | {} | {} | {} | {} |",
        row.size,
        fill.as_secs_f64(),
        mib_or_na(row.first_send.map(|s| s.peak_above_before())),
        byte.map_or_else(|| "n/a".to_owned(), ms_tenths),
        text.map_or_else(|| "n/a".to_owned(), ms_tenths),
        mib_or_na(highest),
        row.sent_messages,
        row.prompt_tokens,
    )
}

async fn measure_store(
    http: &reqwest::Client,
    upstream_base_url: &str,
    url: &str,
    options: &ThreadsOptions,
) -> Result<(Vec<Row>, Vec<Duration>), LoadError> {
    let run_id = uuid::Uuid::new_v4().simple().to_string();
    let threads: Vec<String> = options
        .sizes
        .iter()
        .map(|size| format!("scale-{size}-{run_id}"))
        .collect();
    let filled = fill(url, &threads, &options.sizes).await?;
    let extra = format!("context_window = {}\n", options.context_window);
    let gateway =
        GatewayProcess::start_with(http, upstream_base_url, Some(url), &options.placement, &extra).await?;
    let idle_kib = gateway.memory().rss_kib;
    let mut rows: Vec<Row> = options
        .sizes
        .iter()
        .map(|&size| Row {
            size,
            idle_kib,
            ..Row::default()
        })
        .collect();
    for (row, thread) in rows.iter_mut().zip(&threads) {
        row.first_send = Some(send(http, &gateway, thread).await?);
    }
    for _ in 0..options.rounds {
        for (row, thread) in rows.iter_mut().zip(&threads) {
            row.samples.push(send(http, &gateway, thread).await?);
        }
    }
    for (row, thread) in rows.iter_mut().zip(&threads) {
        let preview = get_json(http, &gateway.url(&format!("/v1/threads/{thread}/prompt"))).await?;
        row.sent_messages = preview["context"]["sent_messages"].as_u64().unwrap_or(0);
        row.prompt_tokens = preview["context"]["prompt_tokens"].as_u64().unwrap_or(0);
    }
    Ok((rows, filled))
}

/// Creates the threads and fills each with its number of messages, questions and answers in turn;
/// returns how long each took.
async fn fill(url: &str, threads: &[String], sizes: &[usize]) -> Result<Vec<Duration>, LoadError> {
    let store = Store::connect(url)
        .await
        .map_err(|e| LoadError::Store(e.to_string()))?;
    store
        .migrate()
        .await
        .map_err(|e| LoadError::Store(e.to_string()))?;
    store
        .ensure_user(LOCAL_USER_ID, "local")
        .await
        .map_err(|e| LoadError::Store(e.to_string()))?;
    let mut took = Vec::new();
    for (thread, &size) in threads.iter().zip(sizes) {
        let started = Instant::now();
        let new = NewThread {
            id: Some(thread.clone()),
            ..NewThread::default()
        };
        store
            .create_thread(LOCAL_USER_ID, &new)
            .await
            .map_err(|e| LoadError::Store(e.to_string()))?;
        for n in 0..size {
            let role = if n % 2 == 0 { Role::User } else { Role::Assistant };
            let message = NewMessage {
                id: None,
                thread_id: thread.clone(),
                role,
                parts: json!([{"type": "text", "text": filler(n)}]),
                metadata: json!({}),
                status: (role == Role::Assistant).then_some(MessageStatus::Complete),
            };
            store
                .append_message(LOCAL_USER_ID, &message)
                .await
                .map_err(|e| LoadError::Store(e.to_string()))?;
        }
        took.push(started.elapsed());
    }
    store.close().await;
    Ok(took)
}

fn filler(n: usize) -> String {
    let mut text = format!("Message {n}: ");
    while text.len() < MESSAGE_BYTES {
        text.push_str("the tide tables for the northern coast, ");
    }
    text
}

/// One send to `thread`: the time to the first byte of the answer, to its first text delta, and
/// the gateway's peak resident memory during it above what it held before.
async fn send(http: &reqwest::Client, gateway: &GatewayProcess, thread: &str) -> Result<Sample, LoadError> {
    reset_peak(gateway.pid());
    let before = gateway.memory().rss_kib;
    let body = json!({
        "id": thread,
        "trigger": "submit-message",
        "messages": [{"id": uuid::Uuid::new_v4().simple().to_string(), "role": "user",
                      "parts": [{"type": "text", "text": "And what about tomorrow?"}]}],
    });
    let started = Instant::now();
    let mut response = http
        .post(gateway.url("/v1/chat"))
        .json(&body)
        .send()
        .await
        .map_err(|e| LoadError::Send(e.to_string()))?;
    if !response.status().is_success() {
        return Err(LoadError::Send(format!(
            "the send answered {}",
            response.status()
        )));
    }
    let mut first_byte = None;
    let mut first_text = None;
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| LoadError::Send(e.to_string()))?
    {
        first_byte.get_or_insert_with(|| started.elapsed());
        if first_text.is_none() && memchr::memmem::find(&chunk, b"\"text-delta\"").is_some() {
            first_text = Some(started.elapsed());
        }
    }
    let peak = gateway.memory().peak_kib;
    Ok(Sample {
        first_byte: first_byte.unwrap_or_default(),
        first_text: first_text.ok_or_else(|| LoadError::Send("the answer had no text".to_owned()))?,
        before_kib: before,
        peak_kib: peak,
    })
}

/// Sets the process's peak resident size back to its current size (Linux: `clear_refs` 5), so the
/// next reading is the peak of what follows.
fn reset_peak(pid: u32) {
    let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
}

async fn get_json(http: &reqwest::Client, url: &str) -> Result<Value, LoadError> {
    http.get(url)
        .send()
        .await
        .map_err(|e| LoadError::Send(e.to_string()))?
        .json()
        .await
        .map_err(|e| LoadError::Send(e.to_string()))
}
