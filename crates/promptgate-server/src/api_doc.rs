//! What the generated OpenAPI document needs beyond what aide infers from handler types, so that
//! validators and client generators accept it: declared path parameters, a bearer security scheme,
//! documented 201/204 and error statuses, and operation ids.

use aide::OperationOutput;
use aide::generate::GenContext;
use aide::openapi::{
    Components, OpenApi, Operation, Parameter, ParameterData, ParameterSchemaOrContent, PathItem,
    ReferenceOr, Response as ApiResponse, SchemaObject, SecurityScheme, StatusCode as ApiStatus,
};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The name the bearer scheme has in `components.securitySchemes`.
pub const BEARER_SCHEME: &str = "bearer";
/// The `x-api-key` header, which the routes Anthropic's clients call accept too.
const API_KEY_SCHEME: &str = "x_api_key";
/// The component schema of an Anthropic-shaped error.
const ANTHROPIC_ERROR: &str = "AnthropicError";

/// Which error body a route answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Envelope {
    /// `{"error": {"code", "message", "request_id"}}`, every route's but:
    Ours,
    /// `{"type": "error", "error": {"type", "message"}, "request_id"}` on the Messages API's routes,
    /// which answer a malformed body with 400 as Anthropic does.
    Anthropic,
}

impl Envelope {
    fn of(path: &str) -> Self {
        if path.starts_with("/v1/messages") {
            Self::Anthropic
        } else {
            Self::Ours
        }
    }

    fn schema_ref(self) -> String {
        let name = match self {
            Self::Ours => "ErrorBody",
            Self::Anthropic => ANTHROPIC_ERROR,
        };
        format!("#/components/schemas/{name}")
    }
}

/// A handler answer that created something: `201 Created` with `T` as the body.
pub struct Created<T>(pub T);

impl<T: IntoResponse> IntoResponse for Created<T> {
    fn into_response(self) -> Response {
        (StatusCode::CREATED, self.0).into_response()
    }
}

impl<T: OperationOutput> OperationOutput for Created<T> {
    type Inner = T::Inner;

    fn operation_response(ctx: &mut GenContext, operation: &mut Operation) -> Option<ApiResponse> {
        T::operation_response(ctx, operation)
    }

    fn inferred_responses(
        ctx: &mut GenContext,
        operation: &mut Operation,
    ) -> Vec<(Option<ApiStatus>, ApiResponse)> {
        match T::operation_response(ctx, operation) {
            Some(mut res) => {
                if res.description.is_empty() {
                    res.description = "Created".into();
                }
                vec![(Some(ApiStatus::Code(201)), res)]
            }
            None => Vec::new(),
        }
    }
}

/// A handler answer with nothing to say: `204 No Content`.
pub struct NoContent;

impl IntoResponse for NoContent {
    fn into_response(self) -> Response {
        StatusCode::NO_CONTENT.into_response()
    }
}

impl OperationOutput for NoContent {
    type Inner = Self;

    fn operation_response(_: &mut GenContext, _: &mut Operation) -> Option<ApiResponse> {
        Some(ApiResponse {
            description: "Done; no body".into(),
            ..Default::default()
        })
    }

    fn inferred_responses(
        ctx: &mut GenContext,
        operation: &mut Operation,
    ) -> Vec<(Option<ApiStatus>, ApiResponse)> {
        answered_with(204, Self::operation_response(ctx, operation))
    }
}

/// The one documented answer of an output type whose response is `response`, under `code`; none
/// when it documents no response.
pub fn answered_with(code: u16, response: Option<ApiResponse>) -> Vec<(Option<ApiStatus>, ApiResponse)> {
    response
        .map(|res| vec![(Some(ApiStatus::Code(code)), res)])
        .unwrap_or_default()
}

/// The `200` of a facade that answers a JSON object, or SSE with `stream: true`; `description`
/// says what each holds.
pub fn json_or_event_stream(description: &str) -> Vec<(Option<ApiStatus>, ApiResponse)> {
    let mut res = ApiResponse {
        description: description.into(),
        ..Default::default()
    };
    for kind in ["application/json", "text/event-stream"] {
        res.content.insert(kind.into(), Default::default());
    }
    vec![(Some(ApiStatus::Code(200)), res)]
}

/// Documents a facade's answer type as [`json_or_event_stream`] with `$description`: the answer is
/// bytes the handler wrote, which aide cannot infer a schema from.
macro_rules! json_or_event_stream_output {
    ($answer:ty, $description:expr) => {
        impl aide::OperationOutput for $answer {
            type Inner = serde_json::Value;

            fn inferred_responses(
                _ctx: &mut aide::generate::GenContext,
                _op: &mut aide::openapi::Operation,
            ) -> Vec<(Option<aide::openapi::StatusCode>, aide::openapi::Response)> {
                $crate::api_doc::json_or_event_stream($description)
            }
        }
    };
}
pub(crate) use json_or_event_stream_output;

/// Documents `$answer` as an output whose one answer is a `200` with the response `$response`
/// builds (a `fn(&mut GenContext, &mut Operation) -> Option<Response>`); `$inner` is the type its
/// examples would show.
macro_rules! ok_output {
    ($answer:ty, $inner:ty, $response:expr) => {
        impl aide::OperationOutput for $answer {
            type Inner = $inner;

            fn operation_response(
                ctx: &mut aide::generate::GenContext,
                op: &mut aide::openapi::Operation,
            ) -> Option<aide::openapi::Response> {
                $response(ctx, op)
            }

            fn inferred_responses(
                ctx: &mut aide::generate::GenContext,
                op: &mut aide::openapi::Operation,
            ) -> Vec<(Option<aide::openapi::StatusCode>, aide::openapi::Response)> {
                $crate::api_doc::answered_with(200, Self::operation_response(ctx, op))
            }
        }
    };
}
pub(crate) use ok_output;

/// Routes Anthropic's clients call: the Messages API and the model list.
fn takes_api_key(path: &str) -> bool {
    Envelope::of(path) == Envelope::Anthropic || path.starts_with("/v1/models")
}

/// Routes that must be reachable without a token: the browser arrives at a callback from the
/// provider, and an authorization server fetches the client metadata document.
fn is_public(path: &str) -> bool {
    path.ends_with("/callback") || path == crate::runtime::MCP_CLIENT_METADATA_PATH
}

/// Fills in what the handler types cannot say. Runs on every generated document, so routes added
/// later get the same treatment.
pub fn complete(api: &mut OpenApi) {
    let components = api.components.get_or_insert_with(Default::default);
    components.security_schemes.insert(
        BEARER_SCHEME.into(),
        ReferenceOr::Item(SecurityScheme::Http {
            scheme: "bearer".into(),
            bearer_format: None,
            description: Some(
                "A token from `promptgate users create NAME`. A server in single-user mode (loopback \
                 only) needs none."
                    .into(),
            ),
            extensions: Default::default(),
        }),
    );
    components.security_schemes.insert(
        API_KEY_SCHEME.into(),
        ReferenceOr::Item(SecurityScheme::ApiKey {
            location: aide::openapi::ApiKeyLocation::Header,
            name: crate::routes::messages::API_KEY.into(),
            description: Some("The same token, as Anthropic's clients send it (Messages API only).".into()),
            extensions: Default::default(),
        }),
    );
    if let Ok(json_schema) = serde_json::from_value(anthropic_error_schema()) {
        components.schemas.insert(
            ANTHROPIC_ERROR.into(),
            SchemaObject {
                json_schema,
                external_docs: None,
                example: None,
            },
        );
    }
    let has_error_schema = components.schemas.contains_key("ErrorBody");
    api.security = vec![bearer_requirement()];

    let Some(paths) = api.paths.as_mut() else {
        return;
    };
    for (path, item) in paths.paths.iter_mut() {
        let ReferenceOr::Item(item) = item else {
            continue;
        };
        let names = template_names(path);
        for (method, op) in operations(item) {
            declare_path_parameters(op, &names);
            drop_null_defaults(op);
            if op.operation_id.is_none() {
                op.operation_id = Some(operation_id(method, path));
            }
            if is_public(path) {
                op.security = vec![aide::openapi::SecurityRequirement::default()];
            }
            if takes_api_key(path) {
                let mut key: aide::openapi::SecurityRequirement = Default::default();
                key.insert(API_KEY_SCHEME.to_owned(), Vec::new());
                op.security = vec![bearer_requirement(), key];
            }
            if has_error_schema {
                document_errors(op, path, !names.is_empty(), components);
            }
        }
    }
}

fn bearer_requirement() -> aide::openapi::SecurityRequirement {
    let mut bearer: aide::openapi::SecurityRequirement = Default::default();
    bearer.insert(BEARER_SCHEME.to_owned(), Vec::new());
    bearer
}

/// Anthropic's error body (docs.claude.com/en/api/errors).
fn anthropic_error_schema() -> Value {
    json!({
        "type": "object",
        "required": ["type", "error"],
        "properties": {
            "type": {"type": "string", "enum": ["error"]},
            "error": {
                "type": "object",
                "required": ["type", "message"],
                "properties": {
                    "type": {"type": "string", "description": "`invalid_request_error`, `authentication_error`, `not_found_error`, `rate_limit_error`, `api_error`, …"},
                    "message": {"type": "string"}
                }
            },
            "request_id": {"type": "string"}
        }
    })
}

fn operations(item: &mut PathItem) -> impl Iterator<Item = (&'static str, &mut Operation)> {
    [
        ("get", item.get.as_mut()),
        ("put", item.put.as_mut()),
        ("post", item.post.as_mut()),
        ("delete", item.delete.as_mut()),
        ("patch", item.patch.as_mut()),
    ]
    .into_iter()
    .filter_map(|(method, op)| op.map(|op| (method, op)))
}

/// `{id}` and `{provider}` in `/v1/integrations/{provider}/...`, in order.
fn template_names(path: &str) -> Vec<String> {
    path.split('{')
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(name, _)| name.to_owned()))
        .collect()
}

/// `GET /v1/threads/{id}/messages` → `get_v1_threads_id_messages`.
fn operation_id(method: &str, path: &str) -> String {
    let mut id = method.to_owned();
    for segment in path.split('/').filter(|s| !s.is_empty()) {
        id.push('_');
        id.extend(
            segment
                .chars()
                .filter(|c| !matches!(c, '{' | '}'))
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }),
        );
    }
    id
}

/// aide declares a path parameter only when the extractor is a named struct; a `Path<String>` leaves
/// the template's name undeclared, which validators reject.
fn declare_path_parameters(op: &mut Operation, names: &[String]) {
    for name in names {
        let declared = op.parameters.iter().any(|p| {
            matches!(p, ReferenceOr::Item(Parameter::Path { parameter_data, .. }) if &parameter_data.name == name)
        });
        if declared {
            continue;
        }
        let schema: schemars::Schema = match serde_json::from_value(json!({"type": "string"})) {
            Ok(schema) => schema,
            Err(_) => continue,
        };
        op.parameters.push(ReferenceOr::Item(Parameter::Path {
            parameter_data: ParameterData {
                name: name.clone(),
                description: None,
                required: true,
                deprecated: None,
                format: ParameterSchemaOrContent::Schema(SchemaObject {
                    json_schema: schema,
                    external_docs: None,
                    example: None,
                }),
                example: None,
                examples: Default::default(),
                explode: None,
                extensions: Default::default(),
            },
            style: Default::default(),
        }));
    }
}

/// An optional query field's schema says `default: null` while its parameter schema is a plain
/// string: the default then contradicts the type. Absent is what null meant.
fn drop_null_defaults(op: &mut Operation) {
    for param in &mut op.parameters {
        let ReferenceOr::Item(param) = param else {
            continue;
        };
        let data = match param {
            Parameter::Query { parameter_data, .. }
            | Parameter::Header { parameter_data, .. }
            | Parameter::Path { parameter_data, .. }
            | Parameter::Cookie { parameter_data, .. } => parameter_data,
        };
        if let ParameterSchemaOrContent::Schema(schema) = &mut data.format
            && let Some(object) = schema.json_schema.as_object_mut()
            && object.get("default") == Some(&Value::Null)
        {
            object.remove("default");
        }
    }
}

/// An error answer a client must be ready for. Each is published once per envelope under
/// `components.responses` and referenced from the operations that can give it, so the document (and
/// the client types generated from it) says each one once rather than on every operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ErrorAnswer {
    Unauthorized,
    NotFound,
    /// 422 with our envelope, 400 with Anthropic's.
    Invalid,
    Internal,
    /// Any other error status: the operation's `default` answer.
    Other,
}

impl ErrorAnswer {
    /// The status it is documented under; `None` for the `default` answer.
    fn status(self, shape: Envelope) -> Option<u16> {
        match (self, shape) {
            (Self::Unauthorized, _) => Some(401),
            (Self::NotFound, _) => Some(404),
            (Self::Invalid, Envelope::Ours) => Some(422),
            (Self::Invalid, Envelope::Anthropic) => Some(400),
            (Self::Internal, _) => Some(500),
            (Self::Other, _) => None,
        }
    }

    fn description(self, shape: Envelope) -> &'static str {
        match (self, shape) {
            (Self::Unauthorized, _) => "No valid bearer token (`unauthorized`)",
            (Self::NotFound, _) => "No such record of yours (`not_found`)",
            (Self::Invalid, Envelope::Ours) => {
                "The body or query is malformed or breaks a rule (`invalid_body` and friends)"
            }
            (Self::Invalid, Envelope::Anthropic) => {
                "The body is malformed or breaks a rule (`invalid_request_error`)"
            }
            (Self::Internal, _) => "A failure on the server's side (`internal`)",
            (Self::Other, Envelope::Ours) => "An error: `{\"error\": {\"code\", \"message\"}}`",
            (Self::Other, Envelope::Anthropic) => {
                "An error: `{\"type\": \"error\", \"error\": {\"type\", \"message\"}}`"
            }
        }
    }

    /// Its name under `components.responses`: `NotFound`, `AnthropicNotFound`, ….
    fn component_name(self, shape: Envelope) -> String {
        let name = match self {
            Self::Unauthorized => "Unauthorized",
            Self::NotFound => "NotFound",
            Self::Invalid => "Invalid",
            Self::Internal => "Internal",
            Self::Other => "Error",
        };
        match shape {
            Envelope::Ours => name.to_owned(),
            Envelope::Anthropic => format!("Anthropic{name}"),
        }
    }

    /// The answer itself: its description and the envelope's schema.
    fn response(self, shape: Envelope) -> ApiResponse {
        let mut res = ApiResponse {
            description: self.description(shape).into(),
            ..Default::default()
        };
        let schema: Option<schemars::Schema> =
            serde_json::from_value(json!({"$ref": shape.schema_ref()})).ok();
        if let Some(schema) = schema {
            res.content.insert(
                "application/json".to_owned(),
                aide::openapi::MediaType {
                    schema: Some(SchemaObject {
                        json_schema: schema,
                        external_docs: None,
                        example: None,
                    }),
                    ..Default::default()
                },
            );
        }
        res
    }

    /// A reference to it, publishing it in `components` the first time.
    fn reference(self, shape: Envelope, components: &mut Components) -> ReferenceOr<ApiResponse> {
        let name = self.component_name(shape);
        let reference = format!("#/components/responses/{name}");
        components
            .responses
            .entry(name)
            .or_insert_with(|| ReferenceOr::Item(self.response(shape)));
        ReferenceOr::Reference {
            reference,
            summary: None,
            description: None,
        }
    }
}

/// The statuses a client must be ready for, each with the error envelope.
fn document_errors(op: &mut Operation, path: &str, has_path_params: bool, components: &mut Components) {
    let shape = Envelope::of(path);
    let has_input = op.request_body.is_some() || !op.parameters.is_empty();
    let responses = op.responses.get_or_insert_with(Default::default);
    let answers = [
        (ErrorAnswer::Unauthorized, !is_public(path)),
        (ErrorAnswer::NotFound, has_path_params),
        (ErrorAnswer::Invalid, shape == Envelope::Anthropic || has_input),
        (ErrorAnswer::Internal, true),
    ];
    for (answer, applies) in answers {
        let Some(code) = answer.status(shape).filter(|_| applies) else {
            continue;
        };
        let status = ApiStatus::Code(code);
        if !responses.responses.contains_key(&status) {
            responses
                .responses
                .insert(status, answer.reference(shape, components));
        }
    }
    // The handler's error type documents our envelope inline (and the Messages API's routes rewrite
    // it into Anthropic's); the shared answer says the same once.
    responses.default = Some(ErrorAnswer::Other.reference(shape, components));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_names_in_order() {
        assert_eq!(
            template_names("/v1/integrations/{provider}/x/{id}"),
            vec!["provider".to_owned(), "id".to_owned()]
        );
        assert!(template_names("/v1/threads").is_empty());
    }

    #[test]
    fn operation_ids_follow_method_and_path() {
        assert_eq!(
            operation_id("get", "/v1/threads/{id}/messages"),
            "get_v1_threads_id_messages"
        );
        assert_eq!(operation_id("post", "/v1/mcp-servers"), "post_v1_mcp_servers");
    }
}
