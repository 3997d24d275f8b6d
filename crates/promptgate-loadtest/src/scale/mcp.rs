//! MCP servers and projects at scale: a send's time to its first answer token for a user with 0, 10
//! and 50 MCP servers, and for a send in a project of 100 to 100,000 chats, on SQLite and (given a
//! URL) on Postgres.
//!
//! The MCP servers are in-process rmcp servers on loopback that speak the session era (as most
//! servers in use do), seven tools each, so fifty of them list more tools than a request's 128. The
//! gateway runs with `[mcp] liveness_interval_ms = 100` and the sends come 250 ms apart: they stand
//! in for human-paced sends further apart than the default interval, so a build that checks liveness
//! on the send path does it on every send here. Besides the time, each point counts the requests the
//! MCP servers received per send (listings, pings, new sessions), in the background or not.

use std::fmt::Write;
use std::sync::atomic::Ordering;
use std::time::Duration;

use promptgate_llm::scripted::{rendered, text};
use promptgate_mcp::testing::{McpTestServer, ServerOptions};
use reqwest::Client;
use serde_json::{Value, json};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::ScaleShape;
use crate::error::LoadError;
use crate::gateway::{BENCH_MODEL, GatewayProcess, Placement};
use crate::report::{mib, ms_tenths};
use crate::stats::Percentiles;
use crate::wire::BenchUpstream;

/// What the gateway runs with beyond the driver's usual configuration (see the module header).
/// The project curve fills up to 100,000 chats for one user, past the default thread quota.
const EXTRA_TOML: &str = "[mcp]\nliveness_interval_ms = 100\n[quotas]\nmax_threads = 0\n";
const SERVER_COUNTS: [usize; 3] = [0, 10, 50];
const CHAT_COUNTS: [usize; 4] = [100, 1_000, 10_000, 100_000];
/// Chats created at once while a project is filled.
const FILLERS: usize = 16;
/// Unmeasured sends before each point's measured ones.
const WARM_UP_SENDS: usize = 2;
const QUESTION: &str = "Say hello.";

/// What one point of a curve varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    McpServers(usize),
    ProjectChats(usize),
}

/// One point of a curve.
#[derive(Debug, Clone)]
pub struct Point {
    pub store: &'static str,
    pub axis: Axis,
    pub first_token: Percentiles,
    /// Requests every MCP server together received per measured send.
    pub mcp_requests_per_send: f64,
    pub rss_kib: u64,
}

#[derive(Debug, Clone, Default)]
pub struct McpScaleReport {
    pub shape: ScaleShape,
    pub points: Vec<Point>,
}

/// Runs both curves on SQLite, then on Postgres when `postgres_url` is given.
pub async fn run(
    http: &Client,
    postgres_url: Option<&str>,
    placement: &Placement,
    shape: ScaleShape,
) -> Result<McpScaleReport, LoadError> {
    let (sse, completion) =
        rendered(&text(["Hello", " from", " the", " upstream."])).ok_or(LoadError::UnplayableScript)?;
    let upstream = BenchUpstream::start(&sse, &completion)
        .await
        .map_err(LoadError::Upstream)?;
    let mut report = McpScaleReport {
        shape,
        points: Vec::new(),
    };
    let stores = [("SQLite", None)]
        .into_iter()
        .chain(postgres_url.map(|url| ("Postgres", Some(url))));
    for (store, url) in stores {
        let gateway =
            GatewayProcess::start_with(http, &upstream.base_url(), url, placement, EXTRA_TOML).await?;
        tracing::info!(store, pid = gateway.pid(), "scale: gateway is ready");
        let user = User {
            http,
            gateway: &gateway,
            shape,
            run: uuid::Uuid::new_v4().simple().to_string(),
        };
        let mut points = user.mcp_curve().await?;
        points.extend(user.project_curve().await?);
        report
            .points
            .extend(points.into_iter().map(|(axis, measured)| Point {
                store,
                axis,
                first_token: measured.first_token,
                mcp_requests_per_send: measured.mcp_requests_per_send,
                rss_kib: measured.rss_kib,
            }));
    }
    Ok(report)
}

/// What one point measured.
struct Measured {
    first_token: Percentiles,
    mcp_requests_per_send: f64,
    rss_kib: u64,
}

/// The gateway's single user, as the driver acts for it.
struct User<'a> {
    http: &'a Client,
    gateway: &'a GatewayProcess,
    shape: ScaleShape,
    /// Names this run's chats apart from any earlier run's on the same database.
    run: String,
}

impl User<'_> {
    async fn mcp_curve(&self) -> Result<Vec<(Axis, Measured)>, LoadError> {
        self.forget_mcp_servers().await?;
        let thread = format!("scale-mcp-{}", self.run);
        self.post("/v1/threads", json!({"id": thread})).await?;
        let mut servers: Vec<McpTestServer> = Vec::new();
        let mut points = Vec::new();
        for count in SERVER_COUNTS {
            while servers.len() < count {
                let server = McpTestServer::start(ServerOptions {
                    legacy_only: true,
                    ..ServerOptions::default()
                })
                .await;
                let name = format!("Scale {}", servers.len());
                self.post("/v1/mcp-servers", json!({"name": name, "url": server.url()}))
                    .await?;
                servers.push(server);
            }
            let contacts = || servers.iter().map(requests_seen).sum::<usize>();
            points.push((Axis::McpServers(count), self.measure(&thread, &contacts).await?));
        }
        // The project curve measures chats alone.
        self.forget_mcp_servers().await?;
        Ok(points)
    }

    async fn project_curve(&self) -> Result<Vec<(Axis, Measured)>, LoadError> {
        let project = self.post("/v1/projects", json!({"name": "Scale"})).await?;
        let project = project["id"].as_str().unwrap_or_default().to_owned();
        let thread = format!("scale-project-{}", self.run);
        self.post("/v1/threads", json!({"id": thread, "project_id": project}))
            .await?;
        let mut chats = 1;
        let mut points = Vec::new();
        for count in CHAT_COUNTS.into_iter().filter(|c| *c <= self.shape.max_threads) {
            self.fill(&project, chats, count).await?;
            chats = count;
            tracing::info!(chats, "scale: project filled");
            points.push((Axis::ProjectChats(count), self.measure(&thread, &|| 0).await?));
        }
        Ok(points)
    }

    /// Adds chats `from..to` to the project, [`FILLERS`] at a time.
    async fn fill(&self, project: &str, from: usize, to: usize) -> Result<(), LoadError> {
        let mut fillers = JoinSet::new();
        for filler in 0..FILLERS {
            let (http, url) = (self.http.clone(), self.gateway.url("/v1/threads"));
            let (project, run) = (project.to_owned(), self.run.clone());
            fillers.spawn(async move {
                for n in (from + filler..to).step_by(FILLERS) {
                    let body = json!({"id": format!("scale-{run}-{n}"), "project_id": project});
                    checked(http.post(&url).json(&body).send().await).await?;
                }
                Ok::<_, LoadError>(())
            });
        }
        while let Some(done) = fillers.join_next().await {
            done??;
        }
        Ok(())
    }

    /// Two unmeasured sends, then `shape.sends` measured ones, each after `shape.pace`.
    async fn measure(&self, thread: &str, contacts: &dyn Fn() -> usize) -> Result<Measured, LoadError> {
        for _ in 0..WARM_UP_SENDS {
            tokio::time::sleep(self.shape.pace).await;
            self.timed_send(thread).await?;
        }
        let before = contacts();
        let mut times = Vec::with_capacity(self.shape.sends);
        for _ in 0..self.shape.sends {
            tokio::time::sleep(self.shape.pace).await;
            times.push(self.timed_send(thread).await?);
        }
        let sends = self.shape.sends.max(1) as f64;
        Ok(Measured {
            first_token: Percentiles::of(times),
            mcp_requests_per_send: contacts().saturating_sub(before) as f64 / sends,
            rss_kib: self.gateway.memory().rss_kib,
        })
    }

    /// One send to `thread`: the time until the answer's first text arrives, the whole answer read.
    async fn timed_send(&self, thread: &str) -> Result<Duration, LoadError> {
        let message = uuid::Uuid::new_v4().simple().to_string();
        let body = json!({
            "id": thread,
            "messages": [{"id": message, "role": "user", "parts": [{"type": "text", "text": QUESTION}]}],
            "trigger": "submit-message",
            "model": BENCH_MODEL,
        });
        let begun = Instant::now();
        let sent = self
            .http
            .post(self.gateway.url("/v1/chat"))
            .json(&body)
            .send()
            .await;
        let mut response = checked_status(sent).await?;
        let mut first_token = None;
        while let Some(chunk) = response.chunk().await.map_err(scale_error)? {
            if first_token.is_none() && chunk.windows(10).any(|w| w == b"text-delta") {
                first_token = Some(begun.elapsed());
            }
        }
        first_token.ok_or_else(|| LoadError::Scale("a send's answer had no text".to_owned()))
    }

    async fn post(&self, path: &str, body: Value) -> Result<Value, LoadError> {
        let sent = self.http.post(self.gateway.url(path)).json(&body).send().await;
        checked(sent).await
    }

    /// Deletes every MCP server the user has (an earlier run's, on a reused database).
    async fn forget_mcp_servers(&self) -> Result<(), LoadError> {
        let listed = checked(self.http.get(self.gateway.url("/v1/mcp-servers")).send().await).await?;
        let ids = listed
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s["id"].as_str());
        for id in ids {
            let path = format!("/v1/mcp-servers/{id}");
            checked_status(self.http.delete(self.gateway.url(&path)).send().await).await?;
        }
        Ok(())
    }
}

/// Requests a test server has answered: listings, pings and new sessions.
fn requests_seen(server: &McpTestServer) -> usize {
    let state = &server.state;
    let sessions = state.peers.lock().map_or(0, |peers| peers.len());
    state.list_calls.load(Ordering::SeqCst) + state.pings.load(Ordering::SeqCst) + sessions
}

fn scale_error(error: reqwest::Error) -> LoadError {
    LoadError::Scale(error.to_string())
}

/// The response, when it came and its status is a success; else what went wrong, with the body.
async fn checked_status(sent: reqwest::Result<reqwest::Response>) -> Result<reqwest::Response, LoadError> {
    let response = sent.map_err(scale_error)?;
    if response.status().is_success() {
        return Ok(response);
    }
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    Err(LoadError::Scale(format!("HTTP {status}: {body}")))
}

/// The JSON body of a successful response (`null` when it has none).
async fn checked(sent: reqwest::Result<reqwest::Response>) -> Result<Value, LoadError> {
    let bytes = checked_status(sent).await?.bytes().await.map_err(scale_error)?;
    Ok(serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// The report's section: one table, both curves, each store.
pub fn markdown(report: &McpScaleReport, out: &mut String) {
    let _ = writeln!(
        out,
        "### Scale: a send's time to its first answer token (ms)\n\n\
         Sends one at a time, {} ms apart, {} measured per point after {WARM_UP_SENDS} unmeasured; \
         `[mcp] liveness_interval_ms = 100`. MCP servers speak the session era, seven tools each.\n\n\
         | store | the user has | first token p50 | p90 | max | MCP requests per send | gateway RSS (MiB) |\n\
         |---|---|---|---|---|---|---|",
        report.shape.pace.as_millis(),
        report.shape.sends,
    );
    for point in &report.points {
        let has = match point.axis {
            Axis::McpServers(n) => format!("{n} MCP servers"),
            Axis::ProjectChats(n) => format!("a project of {n} chats"),
        };
        let _ = writeln!(
            out,
            "| {} | {has} | {} | {} | {} | {:.1} | {} |",
            point.store,
            ms_tenths(point.first_token.p50),
            ms_tenths(point.first_token.p90),
            ms_tenths(point.first_token.max),
            point.mcp_requests_per_send,
            mib(point.rss_kib),
        );
    }
    out.push('\n');
}
