//! The OpenAI Responses API over the turn engine (`POST /v1/responses` and the kept responses):
//! the request's checks ([`request`]), the `Response` object ([`object`]), a turn's events folded into
//! it and, streamed, into the API's events ([`translate`], the calls among them in `calls`), written as SSE ([`frames`]). The routes
//! are in `routes::responses`; the turn and the kept responses are the service's.

mod calls;
pub mod frames;
pub mod object;
pub mod request;
pub mod translate;

pub use frames::Frames;
pub use object::Echo;
pub use request::{Checked, CreateResponse};
pub use translate::Translator;
