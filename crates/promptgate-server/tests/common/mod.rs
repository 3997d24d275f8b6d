//! A real promptgate on 127.0.0.1:0 over a real store, and a small client for it.

#![allow(dead_code)]

use std::net::SocketAddr;

use promptgate_server::config::{AuthMode, Config, EMBEDDED_DEFAULT};
use promptgate_server::state::AppState;
use promptgate_store::testing::TestDb;
use reqwest::{Method, StatusCode};
use serde_json::Value;

pub enum Backend {
    Sqlite,
    Postgres,
}

pub struct Gateway {
    pub addr: SocketAddr,
    pub state: AppState,
    pub http: reqwest::Client,
    _db: TestDb,
    _server: tokio::task::JoinHandle<()>,
}

pub fn init() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

pub fn test_config(mode: AuthMode) -> Config {
    let mut config = Config::parse(EMBEDDED_DEFAULT).unwrap();
    config.auth.mode = mode;
    config
}

impl Gateway {
    pub async fn start(backend: Backend, config: Config) -> Gateway {
        init();
        let db = match backend {
            Backend::Sqlite => TestDb::sqlite().await,
            Backend::Postgres => TestDb::postgres().await,
        };
        let state = promptgate_server::cli::prepare_with(config, db.store().clone()).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = promptgate_server::app::build(state.clone());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Gateway {
            addr,
            state,
            http: reqwest::Client::new(),
            _db: db,
            _server: server,
        }
    }

    pub async fn single_user(backend: Backend) -> Gateway {
        Self::start(backend, test_config(AuthMode::SingleUser)).await
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Sends a JSON request (or none) and returns the status and the JSON body (Null when empty).
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        token: Option<&str>,
    ) -> (StatusCode, Value) {
        let mut req = self.http.request(method, self.url(path));
        if let Some(body) = body {
            req = req.json(&body);
        }
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        let res = req.send().await.unwrap();
        let status = res.status();
        let bytes = res.bytes().await.unwrap();
        let value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        (status, value)
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::GET, path, None, None).await
    }

    pub async fn put(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::PUT, path, Some(body), None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::POST, path, Some(body), None).await
    }

    pub async fn delete(&self, path: &str) -> (StatusCode, Value) {
        self.call(Method::DELETE, path, None, None).await
    }

    /// A raw request with an arbitrary body and content type (for malformed input).
    pub async fn raw(
        &self,
        method: Method,
        path: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> (StatusCode, Value) {
        let res = self
            .http
            .request(method, self.url(path))
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .unwrap();
        let status = res.status();
        let value = res.json::<Value>().await.unwrap_or(Value::Null);
        (status, value)
    }
}

/// Asserts the error envelope and returns its code.
pub fn error_code(body: &Value) -> &str {
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(!message.is_empty(), "error without a message: {body}");
    body["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("not an error body: {body}"))
}
