//! The `google_*` tools: parse the arguments core defines, call [`GoogleClient`].

use async_trait::async_trait;
use promptgate_core::tools::args::{
    GoogleCheckCalendarArgs, GoogleCheckInboxArgs, GoogleDraftEmailArgs, GoogleGetEmailArgs,
    GoogleSearchEmailsArgs,
};
use promptgate_core::tools::names;
use serde_json::Value;

use super::{DraftEmail, GoogleClient};
use crate::oauth::{IntegrationExecutor, IntegrationTool, tool_args};
use promptgate_core::tools::ToolError;

/// Which Google tool an executor runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoogleTool {
    CheckInbox,
    SearchEmails,
    GetEmail,
    DraftEmail,
    CheckCalendar,
}

/// Runs one Google tool for the user the client belongs to.
pub type GoogleExecutor = IntegrationExecutor<GoogleTool>;

#[async_trait]
impl IntegrationTool for GoogleTool {
    type Client = GoogleClient;

    const ALL: &'static [Self] = &[
        Self::CheckInbox,
        Self::SearchEmails,
        Self::GetEmail,
        Self::DraftEmail,
        Self::CheckCalendar,
    ];

    fn name(self) -> &'static str {
        match self {
            Self::CheckInbox => names::GOOGLE_CHECK_INBOX,
            Self::SearchEmails => names::GOOGLE_SEARCH_EMAILS,
            Self::GetEmail => names::GOOGLE_GET_EMAIL,
            Self::DraftEmail => names::GOOGLE_DRAFT_EMAIL,
            Self::CheckCalendar => names::GOOGLE_CHECK_CALENDAR,
        }
    }

    async fn run(self, client: &Self::Client, input: &Value) -> Result<Value, ToolError> {
        let name = self.name();
        match self {
            GoogleTool::CheckInbox => {
                let args: GoogleCheckInboxArgs = tool_args(name, input)?;
                client
                    .check_inbox(
                        Some(&args.label),
                        Some(args.max_results()),
                        args.include_spam_trash,
                    )
                    .await
            }
            GoogleTool::SearchEmails => {
                let args: GoogleSearchEmailsArgs = tool_args(name, input)?;
                client.search_emails(&args.query, Some(args.max_results())).await
            }
            GoogleTool::GetEmail => {
                let args: GoogleGetEmailArgs = tool_args(name, input)?;
                client.get_email(&args.id).await
            }
            GoogleTool::DraftEmail => {
                let args: GoogleDraftEmailArgs = tool_args(name, input)?;
                let draft = DraftEmail {
                    to: args.to.to_vec(),
                    subject: args.subject,
                    body: args.body,
                    cc: args.cc.map(|cc| cc.to_vec()).unwrap_or_default(),
                    bcc: args.bcc.map(|bcc| bcc.to_vec()).unwrap_or_default(),
                    reply_to_id: args.reply_to_id,
                    reply_all: args.reply_all,
                };
                client.draft_email(&draft).await
            }
            GoogleTool::CheckCalendar => {
                let args: GoogleCheckCalendarArgs = tool_args(name, input)?;
                client
                    .check_calendar(Some(args.days_ahead()), Some(&args.calendar_id))
                    .await
            }
        }
    }
}
