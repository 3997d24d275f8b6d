//! A whole answer: asked for ([`crate::ChatRequest::whole_answer`]), or sent by a server or proxy
//! that ignores `stream: true`. It is read as if it were a single chunk followed by `[DONE]`.

use bytes::Bytes;
use futures::{Stream, StreamExt};

use crate::parser::ChunkParser;
use crate::transport::BodyError;
use crate::{LlmError, StreamEvent};

pub(super) async fn read(
    body: impl Stream<Item = Result<Bytes, BodyError>>,
    mut parser: ChunkParser,
) -> Result<Vec<StreamEvent>, LlmError> {
    let mut bytes = Vec::new();
    let mut body = std::pin::pin!(body);
    while let Some(piece) = body.next().await {
        bytes.extend_from_slice(&piece?);
    }
    parser.push_completion(&bytes)
}
