//! OTLP/HTTP (protobuf) span export, written straight from the SDK's span data to the wire.
//!
//! The exporter of `opentelemetry-otlp` first converts each batch into the generated protobuf
//! types (every attribute key and string value copied into a new `String`, every id into a new
//! `Vec`, the instrumentation scope hashed once per span) and then encodes those, sizing each
//! nested message again at every level above it. That was about half of what trace export added
//! to a streamed request (docs/benchmarks.md). Here each span is encoded from the borrowed
//! `SpanData` into one buffer, and the resource once, when the provider hands it over. The bytes
//! are the same `ExportTraceServiceRequest` (a test decodes ours with the official definitions and
//! compares them with the SDK's conversion of the same spans).
//!
//! Only plain OTLP/HTTP protobuf goes this way; gRPC, and HTTP with compression asked for, keep the
//! SDK's exporter (see `telemetry::provider`). The endpoint, headers and timeout are read as that
//! exporter reads them (`OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT`, `..._HEADERS`, `..._TIMEOUT`), and a
//! refused batch is retried as it retries one (429, 502, 503, 504 or no answer: three more tries,
//! 100 ms apart and doubling, or after the collector's `Retry-After`, within the timeout).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status, TraceState};
use opentelemetry::{Array, InstrumentationScope, KeyValue, Value};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use prost::Message;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

/// The collector's default OTLP/HTTP address, as the SDK's exporter has it.
const DEFAULT_ENDPOINT: &str = "http://localhost:4318";
const TRACES_PATH: &str = "/v1/traces";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
const RETRIES: u32 = 3;
const FIRST_RETRY_DELAY: Duration = Duration::from_millis(100);
const LONGEST_RETRY_DELAY: Duration = Duration::from_millis(1600);

/// The environment as the exporter reads it (a test passes a map).
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Whether this exporter can stand in for the SDK's: anything but compression, which it does not
/// speak (the SDK's exporter then says what it makes of the setting, as before; built without its
/// gzip feature, it sends uncompressed).
pub fn handles(env: EnvLookup<'_>) -> bool {
    [
        "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
        "OTEL_EXPORTER_OTLP_COMPRESSION",
    ]
    .iter()
    .filter_map(|name| set(env, name))
    .all(|value| value.trim().eq_ignore_ascii_case("none"))
}

/// Spans to an OTLP/HTTP collector, encoded by [`encode_request`].
#[derive(Debug)]
pub struct HttpSpanExporter {
    client: reqwest::blocking::Client,
    endpoint: String,
    headers: HeaderMap,
    timeout: Duration,
    /// The request's resource field, encoded once.
    resource: Vec<u8>,
    /// The resource's schema URL (empty: none).
    resource_schema: String,
}

impl HttpSpanExporter {
    /// The exporter for `endpoint` (`[telemetry] endpoint`: the collector's base URL) or, without
    /// it, for what the environment says.
    pub fn new(endpoint: Option<&str>, env: EnvLookup<'_>) -> anyhow::Result<Self> {
        let endpoint = traces_endpoint(endpoint, env);
        reqwest::Url::parse(&endpoint)
            .map_err(|err| anyhow::anyhow!("invalid OTLP endpoint '{endpoint}': {err}"))?;
        let timeout = ["OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"]
            .iter()
            .find_map(|name| set(env, name)?.trim().parse().ok())
            .map_or(DEFAULT_TIMEOUT, Duration::from_millis);
        let headers = ["OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"]
            .iter()
            .find_map(|name| env(name))
            .map(|list| parse_headers(&list))
            .unwrap_or_default();
        // The blocking client runs a runtime of its own, which must not be made (or dropped) on a
        // thread of another; the server may already be running one here.
        let client = std::thread::Builder::new()
            .name("otlp-http-client".to_owned())
            .spawn(move || reqwest::blocking::Client::builder().timeout(timeout).build())?
            .join()
            .map_err(|_| anyhow::anyhow!("building the OTLP HTTP client panicked"))??;
        Ok(Self {
            client,
            endpoint,
            headers,
            timeout,
            resource: encode_resource(&Resource::builder_empty().build()),
            resource_schema: String::new(),
        })
    }

    /// One POST of `body`, and whether a failure is worth another try (and after how long). The
    /// body is shared with the retries, not copied for each try.
    fn post(&self, body: &bytes::Bytes) -> Result<(), (String, Option<Duration>)> {
        let answer = self
            .client
            .post(&self.endpoint)
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/x-protobuf")
            .body(body.clone())
            .send();
        let response = match answer {
            Ok(response) => response,
            Err(err) => return Err((err.to_string(), Some(Duration::ZERO))),
        };
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let retry = match status.as_u16() {
            429 | 503 => Some(
                response
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|value| value.to_str().ok()?.trim().parse().ok())
                    .map_or(Duration::ZERO, Duration::from_secs),
            ),
            502 | 504 => Some(Duration::ZERO),
            _ => None,
        };
        Err((format!("the collector answered {status}"), retry))
    }
}

impl SpanExporter for HttpSpanExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let body = bytes::Bytes::from(encode_request(&batch, &self.resource, &self.resource_schema));
        drop(batch);
        let start = Instant::now();
        let mut delay = FIRST_RETRY_DELAY;
        let mut attempt = 0;
        loop {
            let (message, retry) = match self.post(&body) {
                Ok(()) => return Ok(()),
                Err(failure) => failure,
            };
            // The collector's wait when it names one, else ours; both within the timeout.
            let wait = match retry {
                Some(asked) if attempt < RETRIES => asked.max(delay),
                _ => return Err(OTelSdkError::InternalFailure(message)),
            };
            if start.elapsed() + wait >= self.timeout {
                return Err(OTelSdkError::InternalFailure(message));
            }
            // The batch processor's own thread, made for waits like this one.
            std::thread::sleep(wait);
            delay = (delay * 2).min(LONGEST_RETRY_DELAY);
            attempt += 1;
        }
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.resource = encode_resource(resource);
        self.resource_schema = resource.schema_url().unwrap_or_default().to_owned();
    }
}

/// Where the spans go: the file's base URL with `/v1/traces`, else the traces' own variable as it
/// is, else the variable for every signal with `/v1/traces`, else the default collector.
fn traces_endpoint(configured: Option<&str>, env: EnvLookup<'_>) -> String {
    if let Some(base) = configured.filter(|base| !base.is_empty()) {
        return format!("{}{TRACES_PATH}", base.trim_end_matches('/'));
    }
    if let Some(endpoint) = set(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        return endpoint;
    }
    let base = set(env, "OTEL_EXPORTER_OTLP_ENDPOINT").unwrap_or_else(|| DEFAULT_ENDPOINT.to_owned());
    match base.strip_suffix('/') {
        Some(trimmed) => format!("{trimmed}{TRACES_PATH}"),
        None => format!("{base}{TRACES_PATH}"),
    }
}

/// A variable that is set and not empty.
fn set(env: EnvLookup<'_>, name: &str) -> Option<String> {
    env(name).filter(|value| !value.is_empty())
}

/// `key=value,key2=value2`, values percent-decoded, as the OTLP exporter specification writes
/// headers; entries that are not a valid header are left out, as the SDK leaves them out.
fn parse_headers(list: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for entry in list.split_terminator(',') {
        let Some((key, value)) = entry.trim().split_once('=') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        let value = percent_decoded(value).unwrap_or_else(|| value.to_owned());
        if key.is_empty() || value.is_empty() {
            continue;
        }
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(key), HeaderValue::try_from(value)) {
            headers.insert(name, value);
        }
    }
    headers
}

fn percent_decoded(value: &str) -> Option<String> {
    let bytes = value.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' {
            let hex = std::str::from_utf8(bytes.get(at + 1..at + 3)?).ok()?;
            decoded.push(u8::from_str_radix(hex, 16).ok()?);
            at += 3;
        } else {
            decoded.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(decoded).ok()
}

/// `resource` as field 1 of `ResourceSpans`, through the official types (once per provider).
fn encode_resource(resource: &Resource) -> Vec<u8> {
    use opentelemetry_proto::tonic::resource::v1::Resource as ProtoResource;
    let attributes = resource
        .iter()
        .map(|(key, value)| KeyValue::new(key.clone(), value.clone()));
    let proto = ProtoResource {
        attributes: opentelemetry_proto::transform::common::tonic::Attributes::from(attributes).0,
        dropped_attributes_count: 0,
        entity_refs: Vec::new(),
    };
    let mut field = Vec::new();
    key(&mut field, 1, LEN);
    field.extend(proto.encode_length_delimited_to_vec());
    field
}

/// An `ExportTraceServiceRequest` of `spans`: one `ResourceSpans` with one `ScopeSpans` per
/// instrumentation scope, spans in the order given, as the SDK's exporter groups them.
pub fn encode_request(spans: &[SpanData], resource: &[u8], resource_schema: &str) -> Vec<u8> {
    // Each span's scope is compared once, here (there is usually one scope).
    let mut scopes: Vec<&InstrumentationScope> = Vec::new();
    let mut scope_of = Vec::with_capacity(spans.len());
    for span in spans {
        let scope = &span.instrumentation_scope;
        let index = scopes.iter().position(|seen| *seen == scope).unwrap_or_else(|| {
            scopes.push(scope);
            scopes.len() - 1
        });
        scope_of.push(index);
    }
    let mut buf = Vec::with_capacity(256 + spans.len() * 512);
    message(&mut buf, 1, |resource_spans| {
        resource_spans.extend_from_slice(resource);
        for (index, scope) in scopes.into_iter().enumerate() {
            message(resource_spans, 2, |scope_spans| {
                let proto = opentelemetry_proto::tonic::common::v1::InstrumentationScope::from((scope, None));
                key(scope_spans, 1, LEN);
                scope_spans.extend(proto.encode_length_delimited_to_vec());
                let in_scope = spans.iter().zip(&scope_of).filter(|(_, of)| **of == index);
                for (span, _) in in_scope {
                    message(scope_spans, 2, |out| encode_span(out, span));
                }
                string(scope_spans, 3, scope.schema_url().unwrap_or_default());
            });
        }
        string(resource_spans, 3, resource_schema);
    });
    buf
}

/// `opentelemetry.proto.trace.v1.Span`, field by field.
fn encode_span(out: &mut Vec<u8>, span: &SpanData) {
    let context = &span.span_context;
    bytes(out, 1, &context.trace_id().to_bytes());
    bytes(out, 2, &context.span_id().to_bytes());
    trace_state(out, 3, context.trace_state());
    if span.parent_span_id != SpanId::INVALID {
        bytes(out, 4, &span.parent_span_id.to_bytes());
    }
    string(out, 5, &span.name);
    uint(out, 6, kind(&span.span_kind));
    fixed64(out, 7, nanos(span.start_time));
    fixed64(out, 8, nanos(span.end_time));
    for attribute in &span.attributes {
        message(out, 9, |kv| key_value(kv, attribute));
    }
    uint(out, 10, u64::from(span.dropped_attributes_count));
    for event in &span.events.events {
        message(out, 11, |out| {
            fixed64(out, 1, nanos(event.timestamp));
            string(out, 2, &event.name);
            for attribute in &event.attributes {
                message(out, 3, |kv| key_value(kv, attribute));
            }
            uint(out, 4, u64::from(event.dropped_attributes_count));
        });
    }
    uint(out, 12, u64::from(span.events.dropped_count));
    for link in &span.links.links {
        message(out, 13, |out| {
            let context = &link.span_context;
            bytes(out, 1, &context.trace_id().to_bytes());
            bytes(out, 2, &context.span_id().to_bytes());
            trace_state(out, 3, context.trace_state());
            for attribute in &link.attributes {
                message(out, 4, |kv| key_value(kv, attribute));
            }
            uint(out, 5, u64::from(link.dropped_attributes_count));
            fixed32(out, 6, flags(context, context.is_remote()));
        });
    }
    uint(out, 14, u64::from(span.links.dropped_count));
    message(out, 15, |out| {
        if let Status::Error { description } = &span.status {
            string(out, 2, description);
        }
        let code = match span.status {
            Status::Unset => 0,
            Status::Ok => 1,
            Status::Error { .. } => 2,
        };
        uint(out, 3, code);
    });
    fixed32(out, 16, flags(context, span.parent_span_is_remote));
}

/// The span flags: the trace flags, and the bits saying whether the parent is remote.
fn flags(context: &SpanContext, remote: bool) -> u32 {
    const HAS_IS_REMOTE: u32 = 0x100;
    const IS_REMOTE: u32 = 0x200;
    let mut flags = u32::from(context.trace_flags().to_u8()) | HAS_IS_REMOTE;
    if remote {
        flags |= IS_REMOTE;
    }
    flags
}

fn kind(kind: &SpanKind) -> u64 {
    match kind {
        SpanKind::Internal => 1,
        SpanKind::Server => 2,
        SpanKind::Client => 3,
        SpanKind::Producer => 4,
        SpanKind::Consumer => 5,
    }
}

fn nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |since| u64::try_from(since.as_nanos()).unwrap_or(u64::MAX))
}

fn trace_state(out: &mut Vec<u8>, field: u32, state: &TraceState) {
    // Almost always empty: header() would allocate to say so.
    if *state != TraceState::NONE {
        string(out, field, &state.header());
    }
}

fn key_value(out: &mut Vec<u8>, attribute: &KeyValue) {
    string(out, 1, attribute.key.as_str());
    message(out, 2, |out| any_value(out, &attribute.value));
}

/// `AnyValue`: a oneof, so written even when it holds its type's default.
fn any_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::String(text) => string_always(out, 1, text.as_str()),
        Value::Bool(flag) => {
            key(out, 2, VARINT);
            varint(out, u64::from(*flag));
        }
        Value::I64(number) => int_value(out, *number),
        Value::F64(number) => double_value(out, *number),
        Value::Array(array) => message(out, 5, |out| match array {
            Array::Bool(flags) => {
                for flag in flags {
                    message(out, 1, |out| any_value(out, &Value::Bool(*flag)));
                }
            }
            Array::I64(numbers) => {
                for number in numbers {
                    message(out, 1, |out| int_value(out, *number));
                }
            }
            Array::F64(numbers) => {
                for number in numbers {
                    message(out, 1, |out| double_value(out, *number));
                }
            }
            Array::String(texts) => {
                for text in texts {
                    message(out, 1, |out| string_always(out, 1, text.as_str()));
                }
            }
            // A kind of array added to the API after this was written: an empty array.
            _ => {}
        }),
        // A kind of value added to the API after this was written: an empty value.
        _ => {}
    }
}

fn int_value(out: &mut Vec<u8>, number: i64) {
    key(out, 3, VARINT);
    varint(out, u64::from_ne_bytes(number.to_ne_bytes()));
}

fn double_value(out: &mut Vec<u8>, number: f64) {
    key(out, 4, FIXED64);
    out.extend_from_slice(&number.to_bits().to_le_bytes());
}

// Protobuf's wire format: proto3 leaves fields at their default out, as prost does.
const VARINT: u32 = 0;
const FIXED64: u32 = 1;
const LEN: u32 = 2;
const FIXED32: u32 = 5;

fn key(out: &mut Vec<u8>, field: u32, wire_type: u32) {
    varint(out, u64::from((field << 3) | wire_type));
}

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value & 0x7f) as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn uint(out: &mut Vec<u8>, field: u32, value: u64) {
    if value != 0 {
        key(out, field, VARINT);
        varint(out, value);
    }
}

fn fixed64(out: &mut Vec<u8>, field: u32, value: u64) {
    if value != 0 {
        key(out, field, FIXED64);
        out.extend_from_slice(&value.to_le_bytes());
    }
}

fn fixed32(out: &mut Vec<u8>, field: u32, value: u32) {
    if value != 0 {
        key(out, field, FIXED32);
        out.extend_from_slice(&value.to_le_bytes());
    }
}

fn bytes(out: &mut Vec<u8>, field: u32, data: &[u8]) {
    if !data.is_empty() {
        string_or_bytes(out, field, data);
    }
}

fn string(out: &mut Vec<u8>, field: u32, text: &str) {
    bytes(out, field, text.as_bytes());
}

fn string_always(out: &mut Vec<u8>, field: u32, text: &str) {
    string_or_bytes(out, field, text.as_bytes());
}

fn string_or_bytes(out: &mut Vec<u8>, field: u32, data: &[u8]) {
    key(out, field, LEN);
    varint(out, data.len() as u64);
    out.extend_from_slice(data);
}

/// A length-delimited field whose body `write` appends. One byte is kept for the length, which
/// is all most bodies need (an attribute, its value, a status); a longer body is moved once its
/// length is known, by the one or two bytes more that the length takes.
fn message(out: &mut Vec<u8>, field: u32, write: impl FnOnce(&mut Vec<u8>)) {
    key(out, field, LEN);
    let at = out.len();
    out.push(0);
    write(out);
    let end = out.len();
    let mut value = (end - at - 1) as u64;
    if value < 0x80 {
        out[at] = value as u8;
        return;
    }
    let mut prefix = [0u8; 10];
    let mut used = 0;
    while value >= 0x80 {
        prefix[used] = (value & 0x7f) as u8 | 0x80;
        value >>= 7;
        used += 1;
    }
    prefix[used] = value as u8;
    used += 1;
    out.resize(end + used - 1, 0);
    out.copy_within(at + 1..end, at + used);
    out[at..at + used].copy_from_slice(&prefix[..used]);
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;
    use std::time::Duration;

    use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState};
    use opentelemetry::{Array, InstrumentationScope, KeyValue, Value};
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
    use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
    use opentelemetry_sdk::Resource;
    use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
    use prost::Message;

    use super::*;

    fn span(name: &'static str, scope: &InstrumentationScope, parent: u64, status: Status) -> SpanData {
        let state = TraceState::from_key_value([("vendor", "x")]).unwrap();
        let mut events = SpanEvents::default();
        events.events.push(opentelemetry::trace::Event::new(
            "exception",
            UNIX_EPOCH + Duration::from_nanos(1_700_000_000_000_000_123),
            vec![KeyValue::new("exception.message", "boom")],
            2,
        ));
        events.dropped_count = 1;
        let mut links = SpanLinks::default();
        links.links.push(opentelemetry::trace::Link::new(
            SpanContext::new(
                TraceId::from(9),
                SpanId::from(8),
                TraceFlags::SAMPLED,
                true,
                state.clone(),
            ),
            vec![KeyValue::new("link.n", 3_i64)],
            0,
        ));
        SpanData {
            span_context: SpanContext::new(
                TraceId::from(0x0af7_6519_16cd_43dd_8448_eb21_1c80_319c),
                SpanId::from(parent + 1),
                TraceFlags::SAMPLED,
                false,
                if parent == 0 { state } else { TraceState::NONE },
            ),
            parent_span_id: SpanId::from(parent),
            parent_span_is_remote: parent == 7,
            span_kind: SpanKind::Client,
            name: Cow::Borrowed(name),
            start_time: UNIX_EPOCH + Duration::from_nanos(1_700_000_000_000_000_000),
            end_time: UNIX_EPOCH + Duration::from_nanos(1_700_000_000_250_000_000),
            attributes: vec![
                KeyValue::new("gen_ai.operation.name", "chat"),
                KeyValue::new("gen_ai.request.model", String::from("gpt-x")),
                KeyValue::new("gen_ai.usage.input_tokens", 1_234_567_i64),
                KeyValue::new("negative", -5_i64),
                KeyValue::new("zero", 0_i64),
                KeyValue::new("empty", ""),
                KeyValue::new("gen_ai.request.stream", true),
                KeyValue::new("off", false),
                KeyValue::new("temperature", 0.25),
                KeyValue::new(
                    "gen_ai.response.finish_reasons",
                    Value::Array(Array::String(vec!["stop".into(), "length".into()])),
                ),
                KeyValue::new("ints", Value::Array(Array::I64(vec![1, -2]))),
                KeyValue::new("long", "é".repeat(200)),
            ],
            dropped_attributes_count: 4,
            events,
            links,
            status,
            instrumentation_scope: scope.clone(),
        }
    }

    /// What the SDK's exporter would send for `spans`, and what this one sends, decoded with the
    /// official definitions.
    fn both(
        spans: Vec<SpanData>,
        resource: &Resource,
    ) -> (ExportTraceServiceRequest, ExportTraceServiceRequest) {
        let sdk = ExportTraceServiceRequest {
            resource_spans: group_spans_by_resource_and_scope(
                spans.clone(),
                &ResourceAttributesWithSchema::from(resource),
            ),
        };
        let bytes = encode_request(
            &spans,
            &encode_resource(resource),
            resource.schema_url().unwrap_or_default(),
        );
        let ours = ExportTraceServiceRequest::decode(bytes.as_slice()).unwrap();
        (sdk, ours)
    }

    #[test]
    fn a_batch_decodes_to_what_the_sdks_exporter_sends() {
        let scope = InstrumentationScope::builder("promptgate").build();
        let other = InstrumentationScope::builder("other")
            .with_version("1.2")
            .with_schema_url("https://opentelemetry.io/schemas/1.41.0")
            .with_attributes([KeyValue::new("a", "b")])
            .build();
        let resource = Resource::builder()
            .with_service_name("promptgate")
            .with_schema_url([KeyValue::new("host", "h")], "https://example.com/schema")
            .build();
        let spans = vec![
            span("http_request", &scope, 0, Status::Unset),
            span("chat gpt-x", &other, 7, Status::error("")),
            span("execute_tool web_fetch", &scope, 2, Status::error("timed out")),
            span("invoke_agent promptgate", &scope, 3, Status::Ok),
        ];
        let (sdk, ours) = both(spans, &resource);
        assert_eq!(ours, sdk);
        assert_eq!(ours.resource_spans[0].scope_spans.len(), 2);
    }

    /// Captured message content can run to many kilobytes: lengths of two and three bytes go in
    /// front of a body written after the one byte kept for them.
    #[test]
    fn long_captured_content_decodes_to_the_same() {
        let scope = InstrumentationScope::builder("promptgate").build();
        let mut chat = span("chat gpt-x", &scope, 3, Status::Unset);
        chat.attributes
            .push(KeyValue::new("gen_ai.input.messages", "x".repeat(20_000)));
        chat.attributes
            .push(KeyValue::new("gen_ai.output.messages", "y".repeat(130)));
        let (sdk, ours) = both(vec![chat], &Resource::builder_empty().build());
        assert_eq!(ours, sdk);
    }

    #[test]
    fn spans_without_attributes_or_resource_decode_to_the_same() {
        let scope = InstrumentationScope::builder("promptgate").build();
        let mut bare = span("a", &scope, 0, Status::Unset);
        bare.attributes.clear();
        bare.events = SpanEvents::default();
        bare.links = SpanLinks::default();
        bare.dropped_attributes_count = 0;
        let (sdk, ours) = both(vec![bare], &Resource::builder_empty().build());
        assert_eq!(ours, sdk);
    }

    #[test]
    fn the_endpoint_headers_and_compression_are_read_as_the_sdk_reads_them() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| (*value).to_owned())
            }
        };
        let none = env(&[]);
        assert_eq!(traces_endpoint(None, &none), "http://localhost:4318/v1/traces");
        assert_eq!(
            traces_endpoint(Some("http://c:4318/"), &none),
            "http://c:4318/v1/traces"
        );
        let general = env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318/")]);
        assert_eq!(traces_endpoint(None, &general), "http://c:4318/v1/traces");
        let own = env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:4318/custom"),
        ]);
        assert_eq!(traces_endpoint(None, &own), "http://t:4318/custom");
        let empty = env(&[
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", ""),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c"),
        ]);
        assert_eq!(traces_endpoint(None, &empty), "http://c/v1/traces");

        let headers = parse_headers("api-key=s%20ecret , x-team = a=b,bad header=1,=v,k=");
        assert_eq!(headers.get("api-key").unwrap(), "s ecret");
        assert_eq!(headers.get("x-team").unwrap(), "a=b");
        assert_eq!(headers.len(), 2);

        assert!(handles(&none));
        assert!(!handles(&env(&[("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")])));
        assert!(!handles(&env(&[(
            "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
            "gzip"
        )])));
        assert!(handles(&env(&[("OTEL_EXPORTER_OTLP_COMPRESSION", "")])));
        assert!(handles(&env(&[("OTEL_EXPORTER_OTLP_COMPRESSION", "none")])));
    }
}
