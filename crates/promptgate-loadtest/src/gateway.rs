//! promptgate as a child process (this same executable, in its `serve-gateway` mode), so its memory
//! can be read apart from the driver's and the upstream's.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use promptgate_server::config::Config;

use crate::error::LoadError;

/// The id of the model the gateway offers; it maps to the scripted upstream.
pub const BENCH_MODEL: &str = "bench";
/// The model name the gateway sends upstream, and what direct requests name too.
pub const UPSTREAM_MODEL: &str = "upstream-model";
const READY_WITHIN: Duration = Duration::from_secs(60);

/// The gateway's configuration: single user on loopback, one `openai` provider pointing at the upstream.
pub fn config_text(listen: &str, database_url: &str, upstream_base_url: &str) -> String {
    format!(
        r#"listen = "{listen}"
database_url = "{database_url}"
default_model = "{BENCH_MODEL}"

[auth]
mode = "single_user"

[limits]
body_bytes = 1048576
request_timeout_secs = 30

[[providers]]
name = "bench"
kind = "openai"
base_url = "{upstream_base_url}"

[[models]]
id = "{BENCH_MODEL}"
name = "Bench (scripted upstream)"
provider = "bench"
upstream_model = "{UPSTREAM_MODEL}"
"#
    )
}

/// Where the gateway process runs: which CPUs, and how many runtime worker threads it starts.
#[derive(Debug, Clone, Default)]
pub struct Placement {
    /// A `taskset -c` list such as `1`; every CPU when absent.
    pub cpus: Option<String>,
    /// Worker threads of the gateway's async runtime; one per CPU when absent.
    pub workers: Option<usize>,
    /// Run [`crate::bare_proxy`] in the gateway's place: the floor under the facade's cost.
    pub bare_proxy: bool,
    /// Run [`crate::bare_refuser`] in the gateway's place: the floor under a refusal.
    pub bare_refuser: Option<crate::bare_refuser::RefuserStack>,
    /// Run this `promptgate` executable (`serve --config`) instead of this driver's own build, to
    /// measure another build (an earlier commit, say) the same way.
    pub exe: Option<PathBuf>,
}

/// A running gateway; the process is killed when this is dropped.
pub struct GatewayProcess {
    child: Child,
    base_url: String,
    scratch: PathBuf,
}

/// Resident memory of the gateway process, from /proc.
#[derive(Debug, Clone, Copy, Default)]
pub struct Memory {
    pub rss_kib: u64,
    pub peak_kib: u64,
}

impl GatewayProcess {
    /// Starts the gateway over `database_url` (None: a fresh SQLite file in a scratch directory)
    /// and waits until it answers `/readyz`.
    pub async fn start(
        client: &reqwest::Client,
        upstream_base_url: &str,
        database_url: Option<&str>,
        placement: &Placement,
    ) -> Result<Self, LoadError> {
        Self::start_with(client, upstream_base_url, database_url, placement, "").await
    }

    /// Like [`GatewayProcess::start`], with `extra_toml` appended to the configuration. The
    /// configuration ends with the bench model's table, so bare keys (`context_window = 32000`)
    /// extend the model and new tables add sections.
    pub async fn start_with(
        client: &reqwest::Client,
        upstream_base_url: &str,
        database_url: Option<&str>,
        placement: &Placement,
        extra_toml: &str,
    ) -> Result<Self, LoadError> {
        let scratch = std::env::temp_dir().join(format!("promptgate-loadtest-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&scratch).map_err(LoadError::Files)?;
        let database_url = match database_url {
            Some(url) => url.to_owned(),
            None => format!("sqlite://{}?mode=rwc", scratch.join("bench.db").display()),
        };
        let listen = free_loopback_port().map_err(LoadError::Files)?;
        let text = format!(
            "{}\n{extra_toml}",
            config_text(&listen, &database_url, upstream_base_url)
        );
        Config::parse(&text).map_err(|e| LoadError::Config(e.to_string()))?;
        let config_path = scratch.join("promptgate.toml");
        std::fs::write(&config_path, text).map_err(LoadError::Files)?;

        let exe = match &placement.exe {
            Some(exe) => exe.clone(),
            None => std::env::current_exe().map_err(LoadError::Spawn)?,
        };
        let mut command = match placement.cpus.as_deref() {
            Some(cpus) => {
                let mut pinned = Command::new("taskset");
                pinned.arg("-c").arg(cpus).arg(exe);
                pinned
            }
            None => Command::new(exe),
        };
        if placement.bare_proxy {
            command
                .arg("serve-bare-proxy")
                .arg(&listen)
                .arg(upstream_base_url);
        } else if let Some(stack) = placement.bare_refuser {
            command.arg("serve-bare-refuser").arg(&listen).arg(stack.name());
        } else if placement.exe.is_some() {
            command.arg("serve").arg("--config").arg(&config_path);
        } else {
            command.arg("serve-gateway").arg(&config_path);
        }
        // The runtime reads this when it is built; without it, it starts one worker per CPU.
        match placement.workers {
            Some(workers) => command.env("TOKIO_WORKER_THREADS", workers.to_string()),
            None => command.env_remove("TOKIO_WORKER_THREADS"),
        };
        let child = command
            // The environment must not redirect the gateway elsewhere.
            .env_remove("DATABASE_URL")
            .env_remove("PROMPTGATE_CONFIG")
            .env_remove("PROMPTGATE_LISTEN")
            .env_remove("HTTP_PROXY")
            .env_remove("HTTPS_PROXY")
            .env_remove("ALL_PROXY")
            .env_remove("http_proxy")
            .env_remove("https_proxy")
            .env_remove("all_proxy")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .map_err(LoadError::Spawn)?;
        let mut gateway = Self {
            child,
            base_url: format!("http://{listen}"),
            scratch,
        };
        gateway.wait_ready(client).await?;
        Ok(gateway)
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn memory(&self) -> Memory {
        read_memory(self.child.id()).unwrap_or_default()
    }

    /// CPU time the process has used so far, all its threads, user and kernel; `None` without /proc.
    pub fn cpu_time(&self) -> Option<Duration> {
        let stat = std::fs::read_to_string(Path::new("/proc").join(self.child.id().to_string()).join("stat"))
            .ok()?;
        cpu_time_of(&stat)
    }

    /// Runs `work`, and says the CPU time `gateways` spent meanwhile, when /proc tells it for each.
    pub async fn cpu_spent_during<T>(
        gateways: &[&GatewayProcess],
        work: impl std::future::Future<Output = T>,
    ) -> (T, Option<Duration>) {
        let cpu = || gateways.iter().map(|g| g.cpu_time()).sum::<Option<Duration>>();
        let before = cpu();
        let done = work.await;
        let spent = cpu()
            .zip(before)
            .map(|(after, before)| after.saturating_sub(before));
        (done, spent)
    }

    async fn wait_ready(&mut self, client: &reqwest::Client) -> Result<(), LoadError> {
        let step = Duration::from_millis(50);
        let attempts = READY_WITHIN.as_millis() / step.as_millis();
        for _ in 0..attempts {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(LoadError::GatewayExited(status.to_string()));
            }
            let ready = client.get(self.url("/readyz")).send().await;
            if ready.is_ok_and(|r| r.status().is_success()) {
                return Ok(());
            }
            tokio::time::sleep(step).await;
        }
        Err(LoadError::GatewayNotReady(READY_WITHIN))
    }
}

impl Drop for GatewayProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

/// A loopback address nothing listens on right now (the gateway binds it a moment later).
fn free_loopback_port() -> std::io::Result<String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.to_string())
}

/// `utime + stime` of a `/proc/PID/stat` line. The command name may hold spaces and parentheses, so
/// the fields are counted after its last `)`. The kernel reports them in `USER_HZ` ticks, 1/100 s on
/// every Linux (independent of the kernel's own tick rate).
fn cpu_time_of(stat: &str) -> Option<Duration> {
    const USER_HZ: u64 = 100;
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace();
    // After the name: state(3) ... utime(14), stime(15), i.e. the 12th and 13th from here.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    let ticks = utime + stime;
    Some(Duration::from_millis(ticks * 1000 / USER_HZ))
}

fn read_memory(pid: u32) -> Option<Memory> {
    let status = std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse().ok())
    };
    Some(Memory {
        rss_kib: field("VmRSS:")?,
        peak_kib: field("VmHWM:")?,
    })
}

/// Runs promptgate in this process from a config file (the child side of [`GatewayProcess`]).
pub async fn serve(config_path: &Path) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(config_path)?;
    promptgate_server::cli::serve(Config::parse(&text)?).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_is_user_plus_kernel_ticks_after_the_command_name() {
        let stat = "4242 (promptgate (x) y) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 75 0 0 20 0 3 0 100 0";
        assert_eq!(cpu_time_of(stat), Some(Duration::from_millis(3_250)));
        assert_eq!(cpu_time_of("4242 (short) S 1"), None);
    }
}
