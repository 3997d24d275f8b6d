//! The `microsoft_*` tools: parse the arguments core defines, call [`GraphClient`].

use async_trait::async_trait;
use promptgate_core::tools::args::{
    MicrosoftGetMessageArgs, MicrosoftGetOnedriveFileContentArgs, MicrosoftListMessagesArgs,
    MicrosoftSearchOnedriveArgs,
};
use promptgate_core::tools::names;
use serde_json::Value;

use super::GraphClient;
use crate::oauth::{IntegrationExecutor, IntegrationTool, tool_args};
use promptgate_core::tools::ToolError;

/// Which Microsoft tool an executor runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MicrosoftTool {
    ListMessages,
    GetMessage,
    SearchOnedrive,
    GetOnedriveFileContent,
}

/// Runs one Microsoft tool for the user the client belongs to.
pub type MicrosoftExecutor = IntegrationExecutor<MicrosoftTool>;

#[async_trait]
impl IntegrationTool for MicrosoftTool {
    type Client = GraphClient;

    const ALL: &'static [Self] = &[
        Self::ListMessages,
        Self::GetMessage,
        Self::SearchOnedrive,
        Self::GetOnedriveFileContent,
    ];

    fn name(self) -> &'static str {
        match self {
            Self::ListMessages => names::MICROSOFT_LIST_MESSAGES,
            Self::GetMessage => names::MICROSOFT_GET_MESSAGE,
            Self::SearchOnedrive => names::MICROSOFT_SEARCH_ONEDRIVE,
            Self::GetOnedriveFileContent => names::MICROSOFT_GET_ONEDRIVE_FILE_CONTENT,
        }
    }

    async fn run(self, client: &Self::Client, input: &Value) -> Result<Value, ToolError> {
        let name = self.name();
        match self {
            MicrosoftTool::ListMessages => {
                let args: MicrosoftListMessagesArgs = tool_args(name, input)?;
                client
                    .list_messages(
                        Some(args.top()),
                        args.skip_token(),
                        args.filter(),
                        args.include_body_html,
                    )
                    .await
            }
            MicrosoftTool::GetMessage => {
                let args: MicrosoftGetMessageArgs = tool_args(name, input)?;
                client.get_message(&args.id, args.include_body_html).await
            }
            MicrosoftTool::SearchOnedrive => {
                let args: MicrosoftSearchOnedriveArgs = tool_args(name, input)?;
                client
                    .search_onedrive(&args.query, Some(args.max_results()))
                    .await
            }
            MicrosoftTool::GetOnedriveFileContent => {
                let args: MicrosoftGetOnedriveFileContentArgs = tool_args(name, input)?;
                client.get_onedrive_file_content(&args.file_id).await
            }
        }
    }
}
