//! How a turn's stream is written for its readers. The wire format belongs to the transport that
//! speaks to clients (the server's UI message stream is SSE): it hands its encoding to
//! [`Service::start`](crate::Service::start) in [`Settings`](crate::deployment::Settings), and the
//! service writes every reader's bytes with it. Those bytes are also what the service keeps for
//! followers: in memory while the turn runs, and in the store for a reader on another instance.
//! Every instance of a deployment runs the same server, so the stored bytes read the same
//! whichever instance wrote them.

use bytes::Bytes;
use promptgate_turn::ui::{UiChunk, UiStreamVersion};

/// A wire encoding of a turn's events. Plain functions and static text rather than a trait object:
/// each chunk costs one call through a function pointer, and the keep-alive and done frames are
/// shared, never copied.
#[derive(Debug, Clone, Copy)]
pub struct StreamEncoding {
    /// One chunk as one frame. A stream is its frames one after another, so each frame must mark
    /// its own end.
    pub chunk: fn(&UiChunk) -> String,
    /// Written while nothing else is, so proxies keep a quiet connection open. It is never kept
    /// for followers: the service removes it wherever it occurs in a batch it stores, so it must
    /// not occur inside a chunk's frame.
    pub keep_alive: &'static str,
    /// The last frame of every stream; a stored batch that ends with it ends the turn's stream.
    pub done: &'static str,
    /// Frames for a reader of an older [`UiStreamVersion`], from frames as the service keeps them
    /// (each chunk whole, for the newest version): every frame whose chunk
    /// [`UiChunk::for_version`] changes is written again. Frames arrive whole, several at once.
    pub for_version: fn(Bytes, UiStreamVersion) -> Bytes,
}

impl StreamEncoding {
    pub(crate) fn frame(&self, chunk: &UiChunk) -> Bytes {
        // `Bytes` takes the string's buffer over: the frame is not copied.
        Bytes::from((self.chunk)(chunk))
    }

    pub(crate) fn keep_alive_frame(&self) -> Bytes {
        Bytes::from_static(self.keep_alive.as_bytes())
    }

    pub(crate) fn done_frame(&self) -> Bytes {
        Bytes::from_static(self.done.as_bytes())
    }

    /// The chunk's frame for a reader of `version`, or `None` when it is the frame kept for all.
    pub(crate) fn frame_for(&self, chunk: &UiChunk, version: UiStreamVersion) -> Option<Bytes> {
        chunk.for_version(version).map(|chunk| self.frame(&chunk))
    }

    /// Kept frames as a reader of `version` receives them.
    pub(crate) fn restyle(&self, frames: Bytes, version: UiStreamVersion) -> Bytes {
        (self.for_version)(frames, version)
    }

    /// An `error` chunk with `text`, then the end of the stream: what a reader gets when the rest
    /// of a turn's stream cannot reach it.
    pub(crate) fn error_and_done(&self, text: &str) -> String {
        let mut out = (self.chunk)(&UiChunk::Error {
            error_text: text.to_owned(),
        });
        out.push_str(self.done);
        out
    }
}

/// An encoding for the service's own tests (feature `testing`): one JSON object a line. It is not
/// the server's SSE, which shows the service keeps no assumption about the frames it passes on.
#[cfg(any(test, feature = "testing"))]
pub const JSON_LINES: StreamEncoding = StreamEncoding {
    chunk: |chunk| {
        let mut line = serde_json::to_string(chunk).unwrap_or_default();
        line.push('\n');
        line
    },
    keep_alive: "#keep-alive\n",
    done: "#done\n",
    for_version: |frames, version| {
        let mut out = String::new();
        for line in String::from_utf8_lossy(&frames).split_inclusive('\n') {
            match serde_json::from_str::<UiChunk>(line)
                .ok()
                .and_then(|c| c.for_version(version))
            {
                Some(chunk) => out.push_str(&(JSON_LINES.chunk)(&chunk)),
                None => out.push_str(line),
            }
        }
        Bytes::from(out)
    },
};
