//! Creating Gmail drafts: an RFC 5322 message built here, threaded onto the original for replies.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chrono::{SecondsFormat, Utc};
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::address::{Mailbox, encode_words, parse_mailbox_list};
use super::gmail::non_empty_id;
use super::mime::header;
use super::{GMAIL, GoogleClient};
use crate::oauth::http::{JSON_RESPONSE_LIMIT, api_url, send_authorized, str_field};
use promptgate_core::tools::ToolError;

/// Bounds what a model can ask us to put in one draft.
const MAX_RECIPIENTS: usize = 100;
const MAX_BODY_BYTES: usize = 1024 * 1024;
const MAX_SUBJECT_CHARS: usize = 500;

/// What the user (through the model) wants drafted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DraftEmail {
    pub to: Vec<String>,
    pub subject: String,
    pub body: String,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
    /// Gmail id of the message this answers; threads the draft and sets the reply headers.
    pub reply_to_id: Option<String>,
    /// Also address everyone else who received the original (on Cc), except the user.
    pub reply_all: bool,
}

/// The parts of the original that a reply needs.
struct Original {
    thread_id: String,
    message_id: Option<String>,
    references: Option<String>,
    others: Vec<Mailbox>,
}

impl GoogleClient {
    /// Saves a draft (never sends) and returns `{draft_id, thread_id, created_at}`.
    pub async fn draft_email(&self, draft: &DraftEmail) -> Result<Value, ToolError> {
        let to = recipients(&draft.to, "to")?;
        if to.is_empty() {
            return Err(ToolError::InvalidArguments(
                "a draft needs at least one recipient in `to`".to_owned(),
            ));
        }
        let mut cc = recipients(&draft.cc, "cc")?;
        let bcc = recipients(&draft.bcc, "bcc")?;
        if draft.body.len() > MAX_BODY_BYTES {
            return Err(ToolError::InvalidArguments(
                "the draft body is larger than 1 MiB".to_owned(),
            ));
        }
        let original = match draft
            .reply_to_id
            .as_deref()
            .map(str::trim)
            .filter(|id| !id.is_empty())
        {
            Some(id) => Some(self.original_for_reply(id, draft.reply_all).await?),
            None => None,
        };
        if let Some(original) = &original {
            for mailbox in &original.others {
                let known = to
                    .iter()
                    .chain(&cc)
                    .chain(&bcc)
                    .any(|m| m.email.eq_ignore_ascii_case(&mailbox.email));
                if !known {
                    cc.push(mailbox.clone());
                }
            }
        }
        let subject = reply_subject(&draft.subject, original.is_some());
        let message = MessageParts {
            to: &to,
            cc: &cc,
            bcc: &bcc,
            subject: &subject,
            body: &draft.body,
            in_reply_to: original.as_ref().and_then(|o| o.message_id.as_deref()),
            references: original.as_ref().and_then(|o| o.references.as_deref()),
        }
        .render();
        let mut payload = json!({ "message": { "raw": URL_SAFE_NO_PAD.encode(message) } });
        if let Some(original) = &original {
            payload["message"]["threadId"] = Value::String(original.thread_id.clone());
        }
        let url = api_url(&self.gmail_base, &["users", "me", "drafts"], &[])?;
        let created = send_authorized(&self.tokens, GMAIL, JSON_RESPONSE_LIMIT, |token| {
            self.http.post(url.clone()).bearer_auth(token).json(&payload)
        })
        .await?
        .json(GMAIL)?;
        let created_message = created.get("message").unwrap_or(&Value::Null);
        Ok(json!({
            "draft_id": str_field(&created, "id"),
            "thread_id": created_message.get("threadId").and_then(Value::as_str)
                .or(original.as_ref().map(|o| o.thread_id.as_str())),
            "created_at": Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true),
        }))
    }

    async fn original_for_reply(&self, id: &str, reply_all: bool) -> Result<Original, ToolError> {
        let id = non_empty_id(id)?;
        let query = [
            ("format", "metadata"),
            ("metadataHeaders", "Message-ID"),
            ("metadataHeaders", "References"),
            ("metadataHeaders", "From"),
            ("metadataHeaders", "To"),
            ("metadataHeaders", "Cc"),
        ];
        let reply = self.gmail_get(&["users", "me", "messages", id], &query).await?;
        if reply.status == StatusCode::NOT_FOUND {
            return Err(ToolError::Failed(format!(
                "Gmail has no message with id {id:?} to reply to"
            )));
        }
        let message = reply.json(GMAIL)?;
        let payload = message.get("payload").unwrap_or(&Value::Null);
        let message_id = header(payload, "Message-ID").map(|v| single_line(v.trim()));
        let references = match (header(payload, "References"), &message_id) {
            (Some(refs), Some(id)) => Some(format!("{} {id}", single_line(refs.trim()))),
            (None, Some(id)) => Some(id.clone()),
            (Some(refs), None) => Some(single_line(refs.trim())),
            (None, None) => None,
        };
        let others = if reply_all {
            let me = self.gmail_get_json(&["users", "me", "profile"], &[]).await?;
            let me = str_field(&me, "emailAddress").to_owned();
            let mut others: Vec<Mailbox> = Vec::new();
            for name in ["From", "To", "Cc"] {
                for mailbox in header(payload, name).map(parse_mailbox_list).unwrap_or_default() {
                    let duplicate = others
                        .iter()
                        .any(|o| o.email.eq_ignore_ascii_case(&mailbox.email));
                    if !mailbox.email.eq_ignore_ascii_case(&me) && !duplicate {
                        others.push(mailbox);
                    }
                }
            }
            others
        } else {
            Vec::new()
        };
        Ok(Original {
            thread_id: str_field(&message, "threadId").to_owned(),
            message_id,
            references,
            others,
        })
    }
}

fn recipients(list: &[String], field: &str) -> Result<Vec<Mailbox>, ToolError> {
    let mut mailboxes = Vec::new();
    for entry in list {
        if entry.contains(['\r', '\n']) {
            return Err(ToolError::InvalidArguments(format!(
                "`{field}` contains a line break"
            )));
        }
        let parsed = parse_mailbox_list(entry);
        if parsed.is_empty() || parsed.iter().any(|m| !plausible_address(&m.email)) {
            return Err(ToolError::InvalidArguments(format!(
                "`{field}` has an invalid address: {entry:?}"
            )));
        }
        mailboxes.extend(parsed);
    }
    if mailboxes.len() > MAX_RECIPIENTS {
        return Err(ToolError::InvalidArguments(format!(
            "`{field}` has more than {MAX_RECIPIENTS} recipients"
        )));
    }
    Ok(mailboxes)
}

fn plausible_address(email: &str) -> bool {
    let Some((local, domain)) = email.rsplit_once('@') else {
        return false;
    };
    !local.is_empty()
        && domain.contains('.')
        && !email
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '<' | '>' | ',' | '"'))
}

/// A reply's subject gets exactly one `Re: ` prefix.
fn reply_subject(subject: &str, is_reply: bool) -> String {
    let subject: String = single_line(subject.trim())
        .chars()
        .take(MAX_SUBJECT_CHARS)
        .collect();
    let already = subject.get(..3).is_some_and(|p| p.eq_ignore_ascii_case("re:"));
    if is_reply && !already {
        format!("Re: {subject}")
    } else {
        subject
    }
}

fn single_line(text: &str) -> String {
    text.split(['\r', '\n'])
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

struct MessageParts<'a> {
    to: &'a [Mailbox],
    cc: &'a [Mailbox],
    bcc: &'a [Mailbox],
    subject: &'a str,
    body: &'a str,
    in_reply_to: Option<&'a str>,
    references: Option<&'a str>,
}

impl MessageParts<'_> {
    /// The message as RFC 5322 text with CRLF line ends. The body goes out as base64 so any
    /// UTF-8 text and any line length survive transport unchanged.
    fn render(&self) -> String {
        let mut out = String::new();
        for (name, list) in [("To", self.to), ("Cc", self.cc), ("Bcc", self.bcc)] {
            if !list.is_empty() {
                let joined = list
                    .iter()
                    .map(Mailbox::to_header)
                    .collect::<Vec<_>>()
                    .join(",\r\n ");
                out.push_str(&format!("{name}: {joined}\r\n"));
            }
        }
        let subject = if self.subject.is_ascii() {
            self.subject.to_owned()
        } else {
            encode_words(self.subject).join("\r\n ")
        };
        out.push_str(&format!("Subject: {subject}\r\n"));
        if let Some(id) = self.in_reply_to {
            out.push_str(&format!("In-Reply-To: {id}\r\n"));
        }
        if let Some(references) = self.references {
            out.push_str(&format!("References: {}\r\n", fold_references(references)));
        }
        out.push_str("MIME-Version: 1.0\r\n");
        out.push_str("Content-Type: text/plain; charset=UTF-8\r\n");
        out.push_str("Content-Transfer-Encoding: base64\r\n\r\n");
        let canonical = self.body.replace("\r\n", "\n").replace('\n', "\r\n");
        let encoded = STANDARD.encode(canonical.as_bytes());
        for line in encoded.as_bytes().chunks(76) {
            out.push_str(&String::from_utf8_lossy(line));
            out.push_str("\r\n");
        }
        out
    }
}

/// Long threads accumulate hundreds of ids. Keep the thread's first message and the most recent
/// ones (what clients use to thread), one id per line so no header line grows past the limit.
fn fold_references(references: &str) -> String {
    const KEEP_RECENT: usize = 20;
    let ids: Vec<&str> = references.split_whitespace().collect();
    let kept: Vec<&str> = if ids.len() > KEEP_RECENT + 1 {
        std::iter::once(ids[0])
            .chain(ids[ids.len() - KEEP_RECENT..].iter().copied())
            .collect()
    } else {
        ids
    };
    kept.join("\r\n ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_subject_is_prefixed_once() {
        assert_eq!(reply_subject("Lunch", true), "Re: Lunch");
        assert_eq!(reply_subject("RE: Lunch", true), "RE: Lunch");
        assert_eq!(reply_subject("Lunch", false), "Lunch");
    }

    #[test]
    fn non_ascii_subject_is_encoded_in_short_words() {
        let parts = MessageParts {
            to: &[Mailbox {
                name: Some("Zoë".into()),
                email: "zoe@example.com".into(),
            }],
            cc: &[],
            bcc: &[],
            subject: &"Grüße aus München ".repeat(5),
            body: "hi",
            in_reply_to: None,
            references: None,
        };
        let text = parts.render();
        assert!(text.contains("To: =?UTF-8?B?Wm/Dqw==?= <zoe@example.com>\r\n"));
        let subject_block: Vec<&str> = text
            .split("\r\n")
            .skip_while(|l| !l.starts_with("Subject:"))
            .take_while(|l| !l.starts_with("MIME"))
            .collect();
        assert!(
            subject_block.len() > 1,
            "a long subject is folded over several lines"
        );
        assert!(subject_block.iter().all(|l| l.len() <= 78));
    }

    #[test]
    fn long_reference_chains_keep_the_root_and_the_latest_ids() {
        let chain: Vec<String> = (0..50).map(|i| format!("<id{i}@example.com>")).collect();
        let folded = fold_references(&chain.join(" "));
        let lines: Vec<&str> = folded.split("\r\n ").collect();
        assert_eq!(lines.len(), 21);
        assert_eq!(lines[0], "<id0@example.com>");
        assert_eq!(lines[1], "<id30@example.com>");
        assert_eq!(lines[20], "<id49@example.com>");
    }

    #[test]
    fn line_breaks_in_recipients_are_refused() {
        let err = recipients(&["a@example.com\r\nBcc: evil@example.com".to_owned()], "to");
        assert!(matches!(err, Err(ToolError::InvalidArguments(_))));
    }
}
