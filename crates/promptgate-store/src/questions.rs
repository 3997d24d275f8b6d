//! Questions a running tool call puts to the user and waits on (see migration 0023). The call waits
//! on its own instance; the answer may arrive on any, so it goes through here. Each question
//! leaves `pending` once, in one conditional update: the first answer wins, and an answer that
//! comes after another, after the wait expired or after Stop finds it settled.

use std::time::Duration;

use crate::connect::Store;
use crate::error::Result;
use crate::statement::Sql;
use crate::util::{Cols, expiry};

/// A question to keep while its call waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewQuestion {
    pub question_id: String,
    pub thread_id: String,
    pub message_id: String,
    pub turn_id: String,
    pub tool_call_id: String,
    /// How to read `question` (`elicitation`, `authorization`).
    pub kind: String,
    /// What the user is shown, as JSON text.
    pub question: String,
}

/// Where a question stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuestionState {
    Pending,
    Answered,
    /// Its time ran out before an answer came.
    Expired,
    /// Stop, or its call ended first.
    Cancelled,
}

impl QuestionState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Answered => "answered",
            Self::Expired => "expired",
            Self::Cancelled => "cancelled",
        }
    }

    fn parse(text: &str) -> Self {
        match text {
            "answered" => Self::Answered,
            "expired" => Self::Expired,
            "cancelled" => Self::Cancelled,
            _ => Self::Pending,
        }
    }
}

/// A question as kept: what was asked, and where it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredQuestion {
    pub asked: NewQuestion,
    pub state: QuestionState,
    /// The user's answer as JSON text, once answered.
    pub answer: Option<String>,
    pub created_at: i64,
    pub expires_at: i64,
    /// Its time is up (read when it was loaded): it can no longer be answered.
    pub expired: bool,
}

/// How long settled questions are kept after they expire, so a late answer is told what became of
/// the question rather than that it never existed.
pub(crate) const KEPT_AFTER_EXPIRY_MS: i64 = 24 * 60 * 60 * 1000;

const COLUMNS: &str = "question_id, thread_id, message_id, turn_id, tool_call_id, kind, question, state, \
                       answer, created_at, expires_at";

impl Store {
    /// Keeps a question, answerable for `ttl` from now.
    pub async fn keep_question(&self, user_id: &str, question: &NewQuestion, ttl: Duration) -> Result<()> {
        let now = self.now_ms();
        "INSERT INTO tool_questions (user_id, question_id, thread_id, message_id, turn_id, tool_call_id, \
         kind, question, state, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9, $10) \
         ON CONFLICT (user_id, question_id) DO NOTHING"
            .with_values((
                user_id,
                &question.question_id,
                &question.thread_id,
                &question.message_id,
                &question.turn_id,
                &question.tool_call_id,
                &question.kind,
                &question.question,
                now,
                expiry(now, ttl),
            ))
            .execute(&self.writer, "questions.keep_question")
            .await?;
        Ok(())
    }

    /// The thread's questions still waiting for an answer whose time has not run out, oldest first.
    pub async fn pending_questions(&self, user_id: &str, thread_id: &str) -> Result<Vec<StoredQuestion>> {
        // One instant for the filter and for reading each row's time left, so a row the query kept
        // never reads as already expired.
        let now = self.now_ms();
        let sql = format!(
            "SELECT {COLUMNS} FROM tool_questions \
             WHERE user_id = $1 AND thread_id = $2 AND state = 'pending' AND expires_at > $3 \
             ORDER BY created_at, question_id"
        );
        let rows = sqlx::AssertSqlSafe(sql)
            .with_values((user_id, thread_id, now))
            .fetch_all(&self.pool, "questions.pending_questions")
            .await?;
        rows.iter().map(|row| read(row, now)).collect()
    }

    /// One question of the thread, whatever its state.
    pub async fn question(
        &self,
        user_id: &str,
        thread_id: &str,
        question_id: &str,
    ) -> Result<Option<StoredQuestion>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM tool_questions WHERE user_id = $1 AND thread_id = $2 AND question_id = $3"
        );
        let row = sqlx::AssertSqlSafe(sql)
            .with_values((user_id, thread_id, question_id))
            .fetch_optional(&self.pool, "questions.question")
            .await?;
        let now = self.now_ms();
        row.as_ref().map(|row| read(row, now)).transpose()
    }

    /// Writes the answer of a pending question whose time has not run out. False when it is not
    /// pending (answered before, expired, cancelled) or unknown; then nothing changed.
    pub async fn answer_question(
        &self,
        user_id: &str,
        thread_id: &str,
        question_id: &str,
        answer: &str,
    ) -> Result<bool> {
        let done = "UPDATE tool_questions SET state = 'answered', answer = $4 \
                    WHERE user_id = $1 AND thread_id = $2 AND question_id = $3 AND state = 'pending' \
                    AND expires_at > $5"
            .with_values((user_id, thread_id, question_id, answer, self.now_ms()))
            .execute(&self.writer, "questions.answer_question")
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Ends a pending question unanswered (`Expired` or `Cancelled`). False when it was settled
    /// first (an answer won the race).
    pub async fn end_question(&self, user_id: &str, question_id: &str, state: QuestionState) -> Result<bool> {
        let done = "UPDATE tool_questions SET state = $3 \
                    WHERE user_id = $1 AND question_id = $2 AND state = 'pending'"
            .with_values((user_id, question_id, state.as_str()))
            .execute(&self.writer, "questions.end_question")
            .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Cancels every question of the thread still pending (Stop).
    pub async fn cancel_questions(&self, user_id: &str, thread_id: &str) -> Result<u64> {
        let done = "UPDATE tool_questions SET state = 'cancelled' \
                    WHERE user_id = $1 AND thread_id = $2 AND state = 'pending'"
            .with_values((user_id, thread_id))
            .execute(&self.writer, "questions.cancel_questions")
            .await?;
        Ok(done.rows_affected())
    }
}

fn read(row: &impl Cols, now: i64) -> Result<StoredQuestion> {
    let expires_at = row.int(10)?;
    Ok(StoredQuestion {
        asked: NewQuestion {
            question_id: row.text(0)?,
            thread_id: row.text(1)?,
            message_id: row.text(2)?,
            turn_id: row.text(3)?,
            tool_call_id: row.text(4)?,
            kind: row.text(5)?,
            question: row.text(6)?,
        },
        state: QuestionState::parse(&row.text(7)?),
        answer: row.opt_text(8)?,
        created_at: row.int(9)?,
        expires_at,
        expired: expires_at <= now,
    })
}
