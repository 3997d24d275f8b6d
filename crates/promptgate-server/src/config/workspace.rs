//! The `[workspace]` section: the bounds of each thread's workspace and of the pool that runs `bash`.

use serde::Deserialize;

use super::{ConfigError, Env};

/// Bounds of each thread's workspace; every key defaults to `WorkspaceLimits::default()`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkspaceConfig {
    pub max_file_bytes: usize,
    pub max_total_bytes: usize,
    pub max_entries: usize,
    pub max_output_bytes: usize,
    pub max_output_lines: usize,
    pub bash_timeout_ms: u64,
    pub max_commands: usize,
    pub max_loop_iterations: usize,
    pub max_total_loop_iterations: usize,
    pub max_shell_memory_bytes: usize,
    /// `bash` calls running at once on this server, each on a thread of its own.
    pub shell_threads: usize,
    /// `bash` calls that may wait for a thread; past it a call is refused with a tool error.
    pub shell_queue: usize,
}

impl Default for WorkspaceConfig {
    fn default() -> Self {
        let limits = promptgate_service::deployment::WorkspaceLimits::default();
        let pool = promptgate_service::deployment::ShellPoolSize::default();
        Self {
            max_file_bytes: limits.max_file_bytes,
            max_total_bytes: limits.max_total_bytes,
            max_entries: limits.max_entries,
            max_output_bytes: limits.max_output_bytes,
            max_output_lines: limits.max_output_lines,
            bash_timeout_ms: u64::try_from(limits.bash_timeout.as_millis()).unwrap_or(u64::MAX),
            max_commands: limits.max_commands,
            max_loop_iterations: limits.max_loop_iterations,
            max_total_loop_iterations: limits.max_total_loop_iterations,
            max_shell_memory_bytes: limits.max_shell_memory_bytes,
            shell_threads: pool.threads,
            shell_queue: pool.queue,
        }
    }
}

impl WorkspaceConfig {
    pub fn limits(&self) -> promptgate_service::deployment::WorkspaceLimits {
        promptgate_service::deployment::WorkspaceLimits {
            max_file_bytes: self.max_file_bytes,
            max_total_bytes: self.max_total_bytes,
            max_entries: self.max_entries,
            max_output_bytes: self.max_output_bytes,
            max_output_lines: self.max_output_lines,
            bash_timeout: std::time::Duration::from_millis(self.bash_timeout_ms),
            max_commands: self.max_commands,
            max_loop_iterations: self.max_loop_iterations,
            max_total_loop_iterations: self.max_total_loop_iterations,
            max_shell_memory_bytes: self.max_shell_memory_bytes,
        }
    }

    /// The server's pool for `bash` calls.
    pub fn shell_pool(&self) -> promptgate_service::deployment::ShellPool {
        promptgate_service::deployment::ShellPool::new(promptgate_service::deployment::ShellPoolSize {
            threads: self.shell_threads,
            queue: self.shell_queue,
        })
    }

    /// The keys by name, for `PROMPTGATE_WORKSPACE_<KEY>` and the positivity check.
    fn fields(&mut self) -> [(&'static str, &mut dyn WorkspaceValue); 12] {
        [
            ("max_file_bytes", &mut self.max_file_bytes),
            ("max_total_bytes", &mut self.max_total_bytes),
            ("max_entries", &mut self.max_entries),
            ("max_output_bytes", &mut self.max_output_bytes),
            ("max_output_lines", &mut self.max_output_lines),
            ("bash_timeout_ms", &mut self.bash_timeout_ms),
            ("max_commands", &mut self.max_commands),
            ("max_loop_iterations", &mut self.max_loop_iterations),
            ("max_total_loop_iterations", &mut self.max_total_loop_iterations),
            ("max_shell_memory_bytes", &mut self.max_shell_memory_bytes),
            ("shell_threads", &mut self.shell_threads),
            ("shell_queue", &mut self.shell_queue),
        ]
    }

    pub(super) fn apply_env(&mut self, env: &dyn Env) -> Result<(), ConfigError> {
        for (key, value) in self.fields() {
            let name = format!("PROMPTGATE_WORKSPACE_{}", key.to_ascii_uppercase());
            if let Some(text) = env.var(&name) {
                value
                    .set(&text)
                    .map_err(|()| ConfigError::Invalid(format!("{name}={text} is not a whole number")))?;
            }
        }
        Ok(())
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let mut copy = self.clone();
        match copy.fields().into_iter().find(|(_, value)| value.is_zero()) {
            // A zero bound would make every workspace call fail, which reads as a broken model.
            Some((key, _)) => Err(ConfigError::Invalid(format!("workspace.{key} must be positive"))),
            None => Ok(()),
        }
    }
}

/// A workspace bound, whichever integer type it has.
trait WorkspaceValue {
    fn set(&mut self, text: &str) -> Result<(), ()>;
    fn is_zero(&self) -> bool;
}

impl WorkspaceValue for usize {
    fn set(&mut self, text: &str) -> Result<(), ()> {
        *self = text.trim().parse().map_err(|_| ())?;
        Ok(())
    }
    fn is_zero(&self) -> bool {
        *self == 0
    }
}

impl WorkspaceValue for u64 {
    fn set(&mut self, text: &str) -> Result<(), ()> {
        *self = text.trim().parse().map_err(|_| ())?;
        Ok(())
    }
    fn is_zero(&self) -> bool {
        *self == 0
    }
}
