//! `bash`: a simulated shell over the workspace. The interpreter is bashkit, which reimplements the
//! shell and its commands in-process: nothing is spawned, no host file is opened, and without its HTTP
//! feature (not enabled) there is no network. Each call gets a fresh shell over a copy of the
//! workspace; what the call leaves in the filesystem becomes the workspace.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bashkit::{
    Bash, BuiltinContext, ExecResult, ExecutionLimits, FsLimits, InMemoryFs, VfsEntryKind, async_trait,
};
use chrono::{DateTime, Utc};
use promptgate_core::prompt::{WORKSPACE_COMMANDS, WORKSPACE_HOME};

use crate::pool::{PoolRefusal, ShellPool};
use crate::tree::{BASE_DIRS, DEVICE_DIR, Node, Workspace};

/// What one `bash` call produced, already cut to the output limits.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BashOutcome {
    pub stdout: String,
    pub stderr: String,
    pub exit_code: i32,
}

/// The shell's `help`: the same list the prompt's environment block names.
pub fn help_text() -> String {
    format!(
        "Commands in this shell: {}.\nNo network and no other programs. Files persist between calls; \
         variables and the working directory do not (each call starts in {WORKSPACE_HOME}).\n",
        WORKSPACE_COMMANDS.join(", ")
    )
}

struct Help;

#[async_trait]
impl bashkit::Builtin for Help {
    async fn execute(&self, _ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        Ok(ExecResult::ok(help_text()))
    }
}

/// Names the shell answers to, as the interpreter registered them (shell keywords such as `for` are
/// syntax, not names).
pub fn command_names() -> Vec<String> {
    let ws = Workspace::new(crate::WorkspaceLimits::default());
    let (bash, _) = build_shell(&ws, DateTime::<Utc>::UNIX_EPOCH, Duration::from_secs(1));
    let mut names = bash.builtin_names();
    names.sort();
    names
}

fn fs_limits(ws: &Workspace) -> FsLimits {
    let l = ws.limits();
    // The shell's own device files count against its totals; leave them room.
    let entries = (l.max_entries + BASE_DIRS.len() + 16) as u64;
    FsLimits::new()
        .max_file_size(l.max_file_bytes as u64)
        .max_total_bytes(l.max_total_bytes as u64)
        .max_file_count(entries)
        .max_dir_count(entries)
        .max_path_depth(64)
}

fn build_shell(ws: &Workspace, now: DateTime<Utc>, timeout: Duration) -> (Bash, Arc<InMemoryFs>) {
    let fs = Arc::new(InMemoryFs::with_limits(fs_limits(ws)));
    for (path, node) in ws.nodes() {
        match node {
            Node::Dir => fs.add_dir(path, 0o755),
            Node::File(bytes) => fs.add_file(path, bytes, 0o644),
        }
    }
    let l = ws.limits();
    let limits = ExecutionLimits::new()
        .max_commands(l.max_commands)
        .max_loop_iterations(l.max_loop_iterations)
        .max_total_loop_iterations(l.max_total_loop_iterations)
        .timeout(timeout)
        .max_stdout_bytes(l.max_output_bytes + 1)
        .max_stderr_bytes(l.max_output_bytes + 1)
        .max_background_jobs(4);
    let bash = Bash::builder()
        .fs(fs.clone())
        .limits(limits)
        .max_memory(l.max_shell_memory_bytes)
        .builtin_filter(|name| WORKSPACE_COMMANDS.contains(&name))
        .builtin("help", Box::new(Help))
        .rootfs(false)
        .username("user")
        .hostname("workspace")
        .cwd(WORKSPACE_HOME)
        .env("HOME", WORKSPACE_HOME)
        .env("PWD", WORKSPACE_HOME)
        .fixed_epoch(now.timestamp())
        .build();
    (bash, fs)
}

/// Cuts text to `max_bytes` on a character boundary, saying how much was left out.
pub(crate) fn cut(text: &str, max_bytes: usize, max_lines: usize) -> String {
    let mut end = text.len().min(max_bytes);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if let Some((i, _)) = text[..end].match_indices('\n').nth(max_lines) {
        end = i + 1;
    }
    if end == text.len() {
        return text.to_owned();
    }
    format!(
        "{}\n[output cut: {} of {} bytes shown]",
        &text[..end],
        end,
        text.len()
    )
}

/// Runs `command` over the workspace on `pool`, off the async workers. The filesystem the shell
/// leaves behind replaces the workspace unless the interpreter aborted the call (a limit, a
/// timeout) or the result breaks the workspace limits; then nothing changes. `Err` when the pool
/// refused the call without running it.
pub async fn run(
    ws: &mut Workspace,
    pool: &ShellPool,
    command: &str,
    now: DateTime<Utc>,
    timeout: Option<Duration>,
) -> Result<BashOutcome, PoolRefusal> {
    let (max_bytes, max_lines) = (ws.limits().max_output_bytes, ws.limits().max_output_lines);
    let limit = ws.limits().bash_timeout;
    let timeout = timeout.map_or(limit, |t| t.min(limit));
    let (mut bash, fs) = build_shell(ws, now, timeout);
    let cancel = bash.cancellation_token();
    let command = command.to_owned();
    let work = async move {
        let ran = bash.exec(&command).await;
        // The files are read only from a call that ran to its end.
        let files = ran.is_ok().then(|| collect(&fs));
        (ran, files)
    };
    // bashkit checks its own deadline between steps; this outer one also ends a call stuck
    // waiting (a read from a pipe that never closes) after the interpreter failed to.
    let (ran, files) = match pool.run(timeout + timeout / 2, cancel, work).await {
        Ok(done) => done,
        Err(PoolRefusal::TimedOut(_)) => return Ok(stopped(timeout)),
        Err(refused) => return Err(refused),
    };
    let result = match ran {
        Err(err) => {
            let stopped = matches!(err, bashkit::Error::ResourceLimit(_) | bashkit::Error::Cancelled);
            return Ok(BashOutcome {
                stdout: String::new(),
                stderr: if stopped {
                    format!("bash: {err}; nothing was changed\n")
                } else {
                    format!("bash: {err}\n")
                },
                exit_code: if stopped { 124 } else { 2 },
            });
        }
        Ok(result) => result,
    };
    let mut stderr = cut(&result.stderr.text_lossy(), max_bytes, max_lines);
    let stdout = cut(&result.stdout.text_lossy(), max_bytes, max_lines);
    let mut exit_code = result.exit_code;
    if let Err(err) = ws.replace_with(files.unwrap_or_default()) {
        stderr.push_str(&format!("bash: {err}; the files were not changed\n"));
        if exit_code == 0 {
            exit_code = 1;
        }
    }
    Ok(BashOutcome {
        stdout,
        stderr,
        exit_code,
    })
}

/// A call its deadline ended: nothing of it is kept.
fn stopped(timeout: Duration) -> BashOutcome {
    BashOutcome {
        stdout: String::new(),
        stderr: format!(
            "bash: stopped after {:.1} seconds; nothing was changed\n",
            timeout.as_secs_f64()
        ),
        exit_code: 124,
    }
}

/// The shell's filesystem as workspace nodes: device files and links left out (links cannot be made
/// with the commands offered, and a workspace holds only files and directories).
fn collect(fs: &InMemoryFs) -> BTreeMap<String, Node> {
    let mut nodes = BTreeMap::new();
    for entry in fs.snapshot().entries() {
        let Some(path) = entry.path.to_str() else { continue };
        if Path::new(path).starts_with(DEVICE_DIR) {
            continue;
        }
        match &entry.kind {
            VfsEntryKind::File { content } => {
                nodes.insert(path.to_owned(), Node::File(content.clone()));
            }
            VfsEntryKind::Directory => {
                nodes.insert(path.to_owned(), Node::Dir);
            }
            VfsEntryKind::Symlink { .. } | VfsEntryKind::Fifo => {}
        }
    }
    nodes
}
