//! The crate's one error type, and how rmcp's transport and service errors map onto it.

use std::error::Error as StdError;
use std::time::Duration;

use rmcp::service::{ClientInitializeError, ServiceError};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, StreamableHttpError,
};

/// Why talking to an MCP server failed. Variants are coarse on purpose: callers word a message for
/// the user from them. No message carries a secret header value or token, and none repeats what a
/// foreign server sent back beyond a status code or a JSON-RPC error of an MCP server: a URL may
/// point at any internal service, and its answer must not reach the user who aimed it there. For
/// the same reason every failure to connect reads the same, whatever the operating system said.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    #[error("invalid MCP server settings: {0}")]
    InvalidConfig(String),
    /// The outbound address policy refused the server's address.
    #[error("the MCP server address is refused: {0}")]
    RefusedAddress(String),
    /// The address is allowed but nothing usable answered there; the text is ours, never the OS's.
    #[error("the MCP server is unreachable: {0}")]
    Connect(String),
    #[error("the MCP server refused the credentials (HTTP {status})")]
    Unauthorized { status: u16 },
    /// `403` with `error="insufficient_scope"`: the token is good but the server wants it to cover
    /// more (`scope`, when the challenge named scopes fit to ask for; the user must authorize again).
    #[error("the MCP server asks for a wider authorization than the one given")]
    InsufficientScope { scope: Option<String> },
    #[error("the MCP server answered with HTTP status {0}")]
    HttpStatus(u16),
    #[error("the MCP server did not answer within {} ms", .0.as_millis())]
    Timeout(Duration),
    #[error("not an MCP server: {0}")]
    Protocol(String),
    /// A JSON-RPC error the server returned for a request (bad arguments, an internal failure...).
    #[error("the MCP server returned error {code}: {message}")]
    Rpc { code: i32, message: String },
    #[error("invalid tool arguments: {0}")]
    InvalidArguments(String),
    #[error("the MCP server has no tool named `{0}`")]
    ToolNotFound(String),
    #[error("the connection to the MCP server was closed")]
    Closed,
    /// Authorizing with the server's OAuth authorization server failed or was refused; the text is
    /// ours (with an RFC 6749 error code at most), never what the server sent.
    #[error("MCP authorization failed: {0}")]
    Authorization(String),
    /// The user already has as many probes running or started this minute as the hub allows.
    #[error("too many MCP server probes; try again in {} s", .retry_after.as_secs().max(1))]
    TooManyProbes { retry_after: Duration },
}

impl McpError {
    /// Whether the failure says the server (or the way to it) is unusable right now, as opposed to
    /// one request going wrong on a healthy session.
    pub fn is_connection_failure(&self) -> bool {
        matches!(
            self,
            McpError::Connect(_)
                | McpError::Unauthorized { .. }
                | McpError::HttpStatus(_)
                | McpError::Timeout(_)
                | McpError::Protocol(_)
                | McpError::Closed
        )
    }

    /// A stable, machine-readable name of the variant, for API responses.
    pub fn kind(&self) -> &'static str {
        match self {
            McpError::InvalidConfig(_) => "invalid_config",
            McpError::RefusedAddress(_) => "refused_address",
            McpError::Connect(_) => "connect",
            McpError::Unauthorized { .. } => "unauthorized",
            McpError::InsufficientScope { .. } => "insufficient_scope",
            McpError::HttpStatus(_) => "http_status",
            McpError::Timeout(_) => "timeout",
            McpError::Protocol(_) => "protocol",
            McpError::Rpc { .. } => "rpc",
            McpError::InvalidArguments(_) => "invalid_arguments",
            McpError::ToolNotFound(_) => "tool_not_found",
            McpError::Closed => "closed",
            McpError::TooManyProbes { .. } => "too_many_probes",
            McpError::Authorization(_) => "authorization",
        }
    }

    /// The same error with every secret of `config` scrubbed from its text.
    pub(crate) fn redacted(self, config: &crate::McpServerConfig) -> McpError {
        match self {
            McpError::InvalidConfig(m) => McpError::InvalidConfig(config.redact(&m)),
            McpError::RefusedAddress(m) => McpError::RefusedAddress(config.redact(&m)),
            McpError::Connect(m) => McpError::Connect(config.redact(&m)),
            McpError::Protocol(m) => McpError::Protocol(config.redact(&m)),
            McpError::Rpc { code, message } => McpError::Rpc {
                code,
                message: config.redact(&message),
            },
            other => other,
        }
    }

    pub(crate) fn from_outbound(err: promptgate_outbound::OutboundError) -> McpError {
        use promptgate_outbound::OutboundError;
        match err {
            OutboundError::Refused(reason) => McpError::RefusedAddress(reason),
            OutboundError::Unresolvable(_) | OutboundError::NoAddresses(_) => {
                McpError::Connect(err.to_string())
            }
            OutboundError::NoHost => McpError::InvalidConfig(err.to_string()),
            OutboundError::TlsUnavailable(_) | OutboundError::Client => McpError::Connect(err.to_string()),
        }
    }

    pub(crate) fn from_reqwest(err: &reqwest::Error) -> McpError {
        if let Some(status) = err.status() {
            return status_error(status.as_u16());
        }
        if err.is_timeout() {
            return McpError::Connect(NO_ANSWER.to_owned());
        }
        if err.is_decode() || err.is_body() {
            return McpError::Protocol("the response body could not be read".to_owned());
        }
        // The operating system's reason (refused, reset, no route) would let a user map which ports
        // of a host are open; it goes to the operator's log only. reqwest's own text names the url,
        // which may carry a token in its query, so only the sources are logged.
        let mut cause = String::new();
        let mut source = err.source();
        while let Some(inner) = source {
            cause.push_str(": ");
            cause.push_str(&inner.to_string());
            source = inner.source();
        }
        tracing::debug!(cause = %cause, connect = err.is_connect(), "MCP request failed");
        McpError::Connect(NO_CONNECTION.to_owned())
    }

    pub(crate) fn from_init(err: &ClientInitializeError) -> McpError {
        match err {
            ClientInitializeError::JsonRpcError(data) => McpError::Rpc {
                code: data.code.0,
                message: data.message.to_string(),
            },
            ClientInitializeError::TransportError { error, .. } => classify_transport(error.error.as_ref()),
            ClientInitializeError::LegacyFallbackFailed { fallback, .. } => McpError::from_init(fallback),
            ClientInitializeError::ConnectionClosed(_) | ClientInitializeError::Cancelled => McpError::Closed,
            other => {
                tracing::debug!(error = %other, "MCP handshake failed");
                McpError::Protocol("the handshake did not complete".to_owned())
            }
        }
    }

    pub(crate) fn from_service(err: &ServiceError) -> McpError {
        match err {
            ServiceError::McpError(data) => McpError::Rpc {
                code: data.code.0,
                message: data.message.to_string(),
            },
            ServiceError::TransportSend(error) => classify_transport(error.error.as_ref()),
            ServiceError::TransportClosed | ServiceError::Cancelled { .. } => McpError::Closed,
            ServiceError::Timeout { timeout } => McpError::Timeout(*timeout),
            ServiceError::UnexpectedResponse => {
                McpError::Protocol("the server answered with a result of the wrong kind".to_owned())
            }
            other => {
                tracing::debug!(error = %other, "MCP request failed");
                McpError::Protocol("the server's answer could not be used".to_owned())
            }
        }
    }
}

const NO_CONNECTION: &str = "no connection could be made";
const NO_ANSWER: &str = "the connection was made but no answer came in time";

pub(crate) fn status_error(status: u16) -> McpError {
    match status {
        401 | 403 => McpError::Unauthorized { status },
        _ => McpError::HttpStatus(status),
    }
}

type HttpError = StreamableHttpError<reqwest::Error>;

/// A step-up challenge, with its scopes when they are fit to ask an authorization server for.
fn insufficient_scope(err: &InsufficientScopeError) -> McpError {
    let scope = err
        .required_scope
        .clone()
        .or_else(|| crate::oauth::Challenge::parse(&err.www_authenticate_header)?.scope)
        .filter(|scope| !scope.trim().is_empty() && crate::oauth::valid_scope(scope));
    McpError::InsufficientScope { scope }
}

/// Walks an error chain for the first cause we know how to word.
fn classify_transport(error: &(dyn StdError + 'static)) -> McpError {
    let mut current: Option<&(dyn StdError + 'static)> = Some(error);
    while let Some(err) = current {
        if err.downcast_ref::<AuthRequiredError>().is_some() {
            return McpError::Unauthorized { status: 401 };
        }
        if let Some(err) = err.downcast_ref::<InsufficientScopeError>() {
            return insufficient_scope(err);
        }
        if let Some(status) = err.downcast_ref::<HttpStatusError>() {
            return status_error(status.status);
        }
        if let Some(err) = err.downcast_ref::<reqwest::Error>() {
            return McpError::from_reqwest(err);
        }
        if let Some(mapped) = err.downcast_ref::<HttpError>().and_then(classify_http) {
            return mapped;
        }
        current = err.source();
    }
    tracing::debug!(%error, "unrecognised MCP transport failure");
    McpError::Protocol("the server's answer could not be used".to_owned())
}

fn classify_http(err: &HttpError) -> Option<McpError> {
    Some(match err {
        StreamableHttpError::Client(inner) => McpError::from_reqwest(inner),
        StreamableHttpError::HttpStatus(status) => status_error(status.status),
        StreamableHttpError::AuthRequired(_) => McpError::Unauthorized { status: 401 },
        StreamableHttpError::InsufficientScope(err) => insufficient_scope(err),
        // rmcp words non-JSON error statuses as "HTTP <code> <reason>: <body>"; only the code is kept.
        StreamableHttpError::UnexpectedServerResponse(text) => match leading_status(text) {
            Some(status) => status_error(status),
            None => McpError::Protocol("the server answered with something other than MCP".to_owned()),
        },
        StreamableHttpError::TransportChannelClosed | StreamableHttpError::UnexpectedEndOfStream => {
            McpError::Closed
        }
        StreamableHttpError::SessionExpired => McpError::Closed,
        StreamableHttpError::Io(io) => {
            tracing::debug!(error = %io, "MCP connection failed");
            McpError::Connect(NO_CONNECTION.to_owned())
        }
        StreamableHttpError::ResponseBodyTooLarge { max_size } => {
            McpError::Protocol(format!("the response is larger than {max_size} bytes"))
        }
        // serde's and the SSE parser's texts quote pieces of the body.
        StreamableHttpError::Deserialize(_) => McpError::Protocol("the answer is not JSON-RPC".to_owned()),
        StreamableHttpError::Sse(_) => McpError::Protocol("the event stream could not be read".to_owned()),
        StreamableHttpError::UnexpectedContentType(_) => {
            McpError::Protocol("the answer is neither JSON nor an event stream".to_owned())
        }
        _ => return None,
    })
}

fn leading_status(text: &str) -> Option<u16> {
    let rest = text.strip_prefix("HTTP ")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    if digits.len() != 3 {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_in_rmcp_messages_are_recognised() {
        assert_eq!(leading_status("HTTP 401 Unauthorized: nope"), Some(401));
        assert_eq!(leading_status("HTTP 404 Not Found: "), Some(404));
        assert_eq!(leading_status("could not parse JSON"), None);
        assert_eq!(leading_status("HTTP 12: odd"), None);
    }

    #[test]
    fn auth_statuses_become_unauthorized() {
        assert_eq!(status_error(401), McpError::Unauthorized { status: 401 });
        assert_eq!(status_error(403), McpError::Unauthorized { status: 403 });
        assert_eq!(status_error(500), McpError::HttpStatus(500));
    }

    #[test]
    fn messages_read_well() {
        assert_eq!(
            McpError::Timeout(Duration::from_millis(3000)).to_string(),
            "the MCP server did not answer within 3000 ms"
        );
        assert_eq!(
            McpError::ToolNotFound("x".into()).to_string(),
            "the MCP server has no tool named `x`"
        );
    }
}
