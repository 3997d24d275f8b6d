//! Attached files through the whole gateway. A PDF bomb: a 0.7 MB PDF (under the body limit) whose
//! one content stream inflates to 700 MB is refused before any parser inflates it, the server's
//! memory grows by a fraction of that, the model is told why it cannot read the file, and a later
//! send of the thread does not read it again. Files slow to read are read beside the async workers,
//! a few at a time, each cut at its time limit: `/healthz` keeps answering meanwhile, and once they
//! are cut the next file is read.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};

use crate::common;

use base64::Engine as _;
use common::{Gateway, scripted_config};
use flate2::Compression;
use flate2::write::DeflateEncoder;
use promptgate_llm::scripted::{ScriptedUpstream, text};
use promptgate_server::config::AuthMode;
use promptgate_turn::testing::{pdf_of_pages, zlib};
use serde_json::{Value, json};

const MIB: usize = 1 << 20;

/// A zlib stream of `mib` MiB of zeros, built without compressing them all: one MiB compressed
/// after another is a block that only refers back to zeros, so it can be repeated.
fn zlib_zeros(mib: usize) -> Vec<u8> {
    let zeros = vec![0u8; MIB];
    let mut encoder = DeflateEncoder::new(Vec::new(), Compression::best());
    encoder.write_all(&zeros).unwrap();
    encoder.flush().unwrap();
    let first = encoder.get_ref().len();
    encoder.write_all(&zeros).unwrap();
    encoder.flush().unwrap();
    let (head, again) = encoder.get_ref().split_at(first);
    let mut out = vec![0x78, 0xDA];
    out.extend_from_slice(head);
    for _ in 1..mib {
        out.extend_from_slice(again);
    }
    // The empty last block, then the Adler-32 of the zeros: sum 1, running total the length.
    out.extend_from_slice(&[0x03, 0x00]);
    let adler = (((mib * MIB) % 65521) as u32) << 16 | 1;
    out.extend_from_slice(&adler.to_be_bytes());
    out
}

/// One page whose content stream is `content`, FlateDecode-compressed.
fn pdf_with_content(content: &[u8]) -> Vec<u8> {
    pdf_of_pages(1, content)
}

/// A few kilobytes that take the text extractor minutes: many pages, each drawing many short
/// words. `n` makes each one another file.
fn slow_pdf(n: usize) -> Vec<u8> {
    let words = format!(
        "BT /F1 12 Tf 72 720 Td ({n}) Tj {}ET",
        "(ab) Tj 1 0 Td ".repeat(12_000)
    );
    pdf_of_pages(60, &zlib(words.as_bytes()))
}

/// This process's peak resident memory so far, in bytes (the gateway runs in it).
fn peak_rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kib: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

fn send_with_file(thread: &str, pdf: &[u8]) -> Value {
    let url = format!(
        "data:application/pdf;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(pdf)
    );
    json!({"id": thread, "trigger": "submit-message", "model": "scripted",
    "messages": [{"id": "m1", "role": "user", "parts": [
        {"type": "text", "text": "Summarise the report."},
        {"type": "file", "mediaType": "application/pdf", "filename": "report.pdf", "url": url}
    ]}]})
}

#[test]
fn the_bomb_is_what_it_claims() {
    let mut inflated = Vec::new();
    flate2::read::ZlibDecoder::new(&zlib_zeros(3)[..])
        .read_to_end(&mut inflated)
        .unwrap();
    assert_eq!(inflated.len(), 3 * MIB, "a whole, valid zlib stream");
    assert!(inflated.iter().all(|b| *b == 0));
}

#[tokio::test]
async fn a_pdf_bomb_is_refused_within_bounds_and_not_read_again() {
    common::init();
    let bomb = pdf_with_content(&zlib_zeros(700));
    assert!(bomb.len() < 760_000, "a 0.7 MB file: {} bytes", bomb.len());
    let upstream = ScriptedUpstream::start().await.unwrap();
    let gw = Gateway::start(
        common::Backend::Sqlite,
        scripted_config(AuthMode::SingleUser, &upstream.base_url()),
    )
    .await;
    let body = send_with_file("bomb", &bomb);
    let before = peak_rss();

    upstream.push(text(["I could not read it."]));
    let sse = gw.stream("/v1/chat", body).await;
    assert_eq!(sse.text(), "I could not read it.", "{:?}", sse.events);
    let grown = peak_rss().saturating_sub(before);
    assert!(grown < 300 * MIB, "memory grew by {} MiB", grown / MIB);
    let told = upstream.last_request().unwrap().to_string();
    assert!(
        told.contains(
            "[Attached file: report.pdf (application/pdf); it is a PDF whose content expands past the \
             32 MiB this server reads and could not be read]"
        ),
        "{told}"
    );
    let reads = r#"promptgate_attachment_reads_total{outcome="read"}"#;
    assert_eq!(gw.metric(reads).await, 1.0);

    // The next send renders the same file again, from what was kept.
    upstream.push(text(["Still no."]));
    let sse = gw.chat("bomb", "And now?").await;
    assert_eq!(sse.text(), "Still no.");
    assert!(
        upstream
            .last_request()
            .unwrap()
            .to_string()
            .contains("expands past the 32 MiB")
    );
    assert_eq!(gw.metric(reads).await, 1.0, "the file was read once");
}

/// More files than the gateway has workers, so that, read on them, every worker would be taken.
const SLOW_FILES: usize = 4;

#[tokio::test]
async fn healthz_answers_while_files_slow_to_read_are_read_and_each_is_cut_at_its_limit() {
    common::init();
    let server = common::server_runtime();
    let (upstream, config) =
        common::single_user_scripted("[documents]\nthreads = 1\nread_timeout_ms = 2000\n").await;
    let gw = Gateway::start_on(&server, config).await;
    for _ in 0..SLOW_FILES {
        upstream.push(text(["Noted."]));
    }

    let sends: Vec<_> = (0..SLOW_FILES)
        .map(|n| gw.stream("/v1/chat", send_with_file(&format!("slow-{n}"), &slow_pdf(n))))
        .collect();
    let answers = gw.healthy_during(futures::future::join_all(sends)).await;
    for sse in &answers {
        assert_eq!(sse.text(), "Noted.", "{:?}", sse.events);
    }
    let told: Vec<String> = upstream.requests().iter().map(Value::to_string).collect();
    for request in &told {
        assert!(
            request.contains("it took longer than 2 seconds to read and could not be read")
                || request.contains("the user's other files took the time there was to read it"),
            "{request}"
        );
    }
    assert!(told.iter().any(|r| r.contains("took longer than 2 seconds")));

    // The readings were cut, not left running: the one reading thread is free for the next file.
    upstream.push(text(["Read it."]));
    let small = pdf_with_content(&zlib(b"BT /F1 12 Tf 72 720 Td (Tide tables) Tj ET"));
    let sse = gw.stream("/v1/chat", send_with_file("after", &small)).await;
    assert_eq!(sse.text(), "Read it.");
    let request = upstream.last_request().unwrap().to_string();
    assert!(request.contains("Tide tables"), "{request}");
    server.shutdown_background();
}

/// A Messages API document block holding `pdf`, as Anthropic's SDKs send a PDF.
fn pdf_document(title: &str, pdf: &[u8]) -> Value {
    json!({"type": "document", "title": title, "source": {"type": "base64", "media_type": "application/pdf",
           "data": base64::engine::general_purpose::STANDARD.encode(pdf)}})
}

#[tokio::test]
async fn the_messages_api_reads_its_pdfs_as_a_send_reads_attachments_bomb_included() {
    common::init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    let gw = Gateway::start(
        common::Backend::Sqlite,
        scripted_config(AuthMode::SingleUser, &upstream.base_url()),
    )
    .await;
    let readable = pdf_with_content(&zlib(b"BT /F1 12 Tf 72 720 Td (High tide at six) Tj ET"));
    let bomb = pdf_with_content(&zlib_zeros(700));
    let body = json!({"model": "scripted", "max_tokens": 64, "messages": [{"role": "user", "content": [
        pdf_document("tides.pdf", &readable),
        pdf_document("bomb.pdf", &bomb),
        {"type": "text", "text": "When is high tide?"}
    ]}]});

    upstream.push(text(["At six."]));
    let (status, answer) = gw.post("/v1/messages", body.clone()).await;
    assert_eq!(status, 200, "{answer}");
    let told = upstream.last_request().unwrap().to_string();
    assert!(
        told.contains("High tide at six"),
        "the PDF's text reached the model: {told}"
    );
    assert!(
        told.contains(
            "[Attached file: bomb.pdf (application/pdf); it is a PDF whose content expands past the 32 MiB"
        ),
        "{told}"
    );
    let reads = r#"promptgate_attachment_reads_total{outcome="read"}"#;
    assert_eq!(gw.metric(reads).await, 2.0);

    // Counting the tokens reads nothing again: the reader kept both outcomes.
    let (status, count) = gw.post("/v1/messages/count_tokens", body).await;
    assert_eq!(status, 200, "{count}");
    assert_eq!(gw.metric(reads).await, 2.0);
}

#[tokio::test]
async fn one_users_files_slow_to_read_leave_a_thread_to_another_users_file() {
    common::init();
    let upstream = ScriptedUpstream::start().await.unwrap();
    upstream.replay_by_default(text(["Noted."]));
    let config = common::scripted_config_with(
        AuthMode::Tokens,
        &upstream.base_url(),
        "[documents]\nthreads = 2\nread_timeout_ms = 3000\n",
    );
    let gw = Gateway::start(common::Backend::Sqlite, config).await;
    let mut tokens = Vec::new();
    for name in ["ada", "bob"] {
        let user = gw.store.create_user(name).await.unwrap();
        tokens.push(gw.store.issue_token(&user.id).await.unwrap());
    }
    let ask = |documents: Vec<Value>| json!({"model": "scripted", "max_tokens": 64, "messages": [{"role": "user", "content": documents}]});

    // Ada's one request attaches more files slow to read than there are threads.
    let slow: Vec<Value> = (0..4)
        .map(|n| pdf_document(&format!("slow-{n}.pdf"), &slow_pdf(n)))
        .collect();
    let ada = gw.post_as("/v1/messages", ask(slow), &tokens[0]);
    // Bob's file arrives once hers are being read or wait.
    let bob = async {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let small = pdf_with_content(&zlib(b"BT /F1 12 Tf 72 720 Td (Tide tables) Tj ET"));
        gw.post_as(
            "/v1/messages",
            ask(vec![pdf_document("tides.pdf", &small)]),
            &tokens[1],
        )
        .await
    };
    let ((ada_status, _), (bob_status, _)) = tokio::join!(ada, bob);
    assert_eq!((ada_status.as_u16(), bob_status.as_u16()), (200, 200));
    let told: Vec<String> = upstream.requests().iter().map(Value::to_string).collect();
    let bobs = told.iter().find(|r| r.contains("tides.pdf")).unwrap();
    assert!(bobs.contains("Tide tables"), "Bob's file was read: {bobs}");
    let adas = told.iter().find(|r| r.contains("slow-0.pdf")).unwrap();
    assert!(adas.contains("took longer than 3 seconds"), "{adas}");
    assert!(
        adas.contains("the user's other files took the time there was to read it"),
        "her files waited for each other, not for the server: {adas}"
    );
}

/// `count_tokens` reads the request's PDFs but streams nothing, so it ends at the request timeout
/// however long its files take, answered in Anthropic's shape.
#[tokio::test]
async fn counting_tokens_ends_at_the_request_timeout_whatever_its_files_take() {
    common::init();
    let (_upstream, mut config) =
        common::single_user_scripted("[documents]\nthreads = 1\nread_timeout_ms = 5000\n").await;
    config.limits.request_timeout_secs = 1;
    let gw = Gateway::start(common::Backend::Sqlite, config).await;
    let documents: Vec<Value> = (0..3)
        .map(|n| pdf_document(&format!("slow-{n}.pdf"), &slow_pdf(n)))
        .collect();
    let body = json!({"model": "scripted", "messages": [{"role": "user", "content": documents}]});
    let (status, answer) = gw.post("/v1/messages/count_tokens", body).await;
    assert_eq!(status, 504, "{answer}");
    assert_eq!(answer["type"], "error", "{answer}");
}
