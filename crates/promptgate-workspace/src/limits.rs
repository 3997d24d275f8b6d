//! The bounds of one thread's workspace, and of what one tool call over it may read, write or run.

use std::time::Duration;

/// Bounds on one thread's workspace and on each tool call over it. The defaults suit a chat model doing
/// data work; the send path may pass its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceLimits {
    /// Largest single file.
    pub max_file_bytes: usize,
    /// All file contents together.
    pub max_total_bytes: usize,
    /// Files and directories together (the always-present base directories not counted).
    pub max_entries: usize,
    /// Most bytes of stdout, and separately of stderr, that a `bash` call or a `read` returns to the
    /// model; the rest is cut with a note.
    pub max_output_bytes: usize,
    /// Most lines a `read` returns, and the default `limit`.
    pub max_output_lines: usize,
    /// Wall-clock cap on one `bash` call.
    pub bash_timeout: Duration,
    /// Commands one `bash` call may run (every builtin, function call and pipeline stage counts).
    pub max_commands: usize,
    /// Iterations of any one loop, and of all loops of one call together.
    pub max_loop_iterations: usize,
    pub max_total_loop_iterations: usize,
    /// Bytes the shell may hold in variables, arrays and function bodies.
    pub max_shell_memory_bytes: usize,
}

impl Default for WorkspaceLimits {
    fn default() -> Self {
        WorkspaceLimits {
            max_file_bytes: 4 * 1024 * 1024,
            max_total_bytes: 32 * 1024 * 1024,
            max_entries: 2_000,
            max_output_bytes: 50 * 1024,
            max_output_lines: 2_000,
            bash_timeout: Duration::from_secs(10),
            max_commands: 100_000,
            max_loop_iterations: 100_000,
            max_total_loop_iterations: 1_000_000,
            max_shell_memory_bytes: 16 * 1024 * 1024,
        }
    }
}
