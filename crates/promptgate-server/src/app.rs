//! Assembles the HTTP application: documented API routes, plain operational routes, and the layers every
//! request passes through.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use aide::axum::ApiRouter;
use aide::openapi::{Info, OpenApi};
use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tower::{Service, ServiceBuilder};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::PropagateRequestIdLayer;
use tower_http::timeout::TimeoutLayer;

use crate::boundary;
use crate::config::AuthMode;
use crate::error::{ApiError, ErrorCode};
use crate::routes;
use crate::state::AppState;
use crate::user_limits::UserLimits;

/// Every documented route.
fn api_routes() -> ApiRouter<AppState> {
    ApiRouter::new()
        .merge(routes::settings::routes())
        .merge(routes::usage::routes())
        .merge(routes::ledger::routes())
        .merge(routes::keys::routes())
        .merge(routes::admin::routes())
        .merge(routes::integrations::routes())
        .merge(
            routes::models::routes()
                .route_layer(axum::middleware::from_fn(routes::messages::api_key_as_bearer)),
        )
        .merge(routes::library::routes())
        .merge(routes::mcp_servers::routes())
        .merge(routes::threads::routes())
        .merge(routes::prompt::routes())
        .merge(routes::artifacts::routes())
        .merge(routes::responses::kept_routes())
}

/// Routes that stream; they are documented but not under the request timeout.
fn streaming_routes() -> ApiRouter<AppState> {
    ApiRouter::new()
        .merge(routes::chat::routes())
        .merge(routes::approvals::routes())
        .merge(routes::elicitations::routes())
        .merge(routes::completions::routes())
        .merge(routes::responses::routes())
}

/// The Anthropic Messages API: streaming too, and with errors in Anthropic's shape.
fn messages_routes() -> ApiRouter<AppState> {
    routes::messages::routes().merge(routes::messages::counting_routes())
}

fn api_info() -> OpenApi {
    OpenApi {
        info: Info {
            title: "promptgate".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            description: Some(
                "A prompt-and-tools gateway for AI chat frontends. Errors are always \
                 `{\"error\": {\"code\", \"message\"}}`."
                    .into(),
            ),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// The OpenAPI document, generated from the routes themselves.
pub fn openapi() -> OpenApi {
    let mut api = api_info();
    let _router: Router<AppState> = api_routes()
        .merge(streaming_routes())
        .merge(messages_routes())
        .finish_api(&mut api);
    crate::api_doc::complete(&mut api);
    api
}

/// What serves every request: the routes inside the layers every request passes. A named type of
/// its own would spell out every layer; a plain `Router` around it cost each request a route
/// lookup that always missed and a boxed clone of the whole stack (about 5k instructions).
pub trait App:
    Service<Request, Response = Response, Error = Infallible, Future: Send + 'static>
    + Clone
    + Send
    + Sync
    + Unpin
    + 'static
{
}

impl<S> App for S where
    S: Service<Request, Response = Response, Error = Infallible, Future: Send + 'static>
        + Clone
        + Send
        + Sync
        + Unpin
        + 'static
{
}

pub fn build(state: AppState) -> impl App {
    let limits = state.config.limits.clone();
    crate::observe::prometheus();
    let mut api = api_info();
    let documented = api_routes().finish_api(&mut api);
    // The served document describes every route, the streaming ones included: the same as
    // `promptgate openapi` prints.
    let spec = Arc::new(openapi());

    let timeout = TimeoutLayer::with_status_code(
        StatusCode::GATEWAY_TIMEOUT,
        Duration::from_secs(limits.request_timeout_secs),
    );
    let rest = documented.layer(timeout);
    // Streams are bounded by the turn's own limits, not by the request timeout.
    let mut streaming_api = api_info();
    let mut streaming = streaming_routes().finish_api(&mut streaming_api);
    let mut messages = routes::messages::routes().finish_api(&mut streaming_api);
    let counting = routes::messages::counting_routes()
        .finish_api(&mut streaming_api)
        .layer(timeout);
    if state.config.auth.mode == AuthMode::Tokens {
        let per_user = UserLimits::new(&limits);
        let limit =
            axum::middleware::from_fn_with_state((state.clone(), per_user), crate::user_limits::limit_sends);
        streaming = streaming.route_layer(limit.clone());
        messages = messages.route_layer(limit);
    }
    // Outside the per-user limits, so their refusals take Anthropic's shape too (the admission
    // gate's refusals, answered before routing, take it in the gate).
    let messages = messages
        .merge(counting)
        .route_layer(axum::middleware::from_fn(routes::messages::anthropic_boundary));
    let policy = boundary::Policy::new(&state.config);
    let cors = boundary::cors(&state.config);
    // Outside everything but the request id, so a refusal costs next to nothing (see the layer).
    let admission = crate::admission::Gate::new(&state.config, state.service.write_waits()).map(|gate| {
        gate.start_probe(state.config.admission.probe_interval());
        crate::admission::AdmissionLayer::new(gate, cors.clone())
    });
    let body_times = crate::body_time::BodyTimes {
        stall: Duration::from_secs(state.config.server.body_timeout_secs),
        whole: Duration::from_secs(state.config.server.body_deadline_secs),
    };
    let request_id_max_len = state.config.server.request_id_max_len;

    let mut routes = Router::new()
        .merge(rest)
        .merge(streaming)
        .merge(messages)
        .route("/healthz", get(routes::health::healthz))
        .route("/readyz", get(routes::health::readyz));
    if state.config.server.metrics_listen.is_none() {
        routes = routes.route("/metrics", get(crate::observe::metrics_endpoint));
    }
    let routes = routes
        .route(
            "/openapi.json",
            get(move || {
                let spec = Arc::clone(&spec);
                async move { axum::Json(spec.as_ref().clone()) }
            }),
        )
        // Runs after routing, so it knows the route's template; cheap: it copies that label and
        // logs what an error response says failed on our side.
        .route_layer(axum::middleware::from_fn(crate::observe::after_route))
        .fallback(unknown_route)
        .method_not_allowed_fallback(wrong_method)
        .with_state(state);
    // The layers every request passes wrap the router once. Added with `Router::layer` they would
    // wrap each route, and axum clones a route's whole boxed stack for every request it serves.
    ServiceBuilder::new()
        .map_response(IntoResponse::into_response)
        // A client's x-request-id is kept when it is short and plain, else one is made; it is
        // echoed, logged with every line of the request and its turn, and put into error bodies
        // (the ones the boundary rewrites too, so it sits inside the request's scope).
        .map_request(crate::observe::assign_request_id(request_id_max_len))
        .layer(PropagateRequestIdLayer::x_request_id())
        .option_layer(admission)
        // One access line per request, at INFO whatever the status: a refusal under overload is
        // the gate doing its job, and a per-failure ERROR line would flood the log when it does.
        .layer(axum::middleware::from_fn(crate::observe::track_request))
        .layer(CatchPanicLayer::custom(|_: Box<dyn std::any::Any + Send>| {
            tracing::error!("a request handler panicked");
            ApiError::internal().into_response()
        }))
        .layer(axum::middleware::from_fn(move |req, next| {
            boundary::admit(Arc::clone(&policy), req, next)
        }))
        .layer(cors)
        .map_request(move |req| body_times.apply(req))
        .layer(DefaultBodyLimit::max(limits.body_bytes))
        .service(routes)
}

/// The web app for page paths when one is built; the JSON 404 for everything else.
async fn unknown_route(
    axum::extract::State(state): axum::extract::State<AppState>,
    method: axum::http::Method,
    uri: axum::http::Uri,
) -> Response {
    if let Some(root) = state.config.ui.root()
        && let Some(res) =
            crate::ui::serve(&root, &method, &uri, state.config.artifacts.public_url.as_deref()).await
    {
        return res;
    }
    ApiError::new(ErrorCode::NotFound, "no such endpoint; see /openapi.json").into_response()
}

async fn wrong_method() -> Response {
    ApiError::new(
        ErrorCode::MethodNotAllowed,
        "this endpoint does not take that method",
    )
    .into_response()
}
