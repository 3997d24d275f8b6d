//! How the prompt parts become the system prompt of each engine.

use super::sanitize::single_line;

/// Declares the commands of the workspace shell once: the list itself (the shell registers exactly these
/// and its `help` prints them) and the environment block that names them to the model, so the prompt
/// can never promise a command the shell lacks.
macro_rules! workspace_shell {
    ($($name:literal),+ $(,)?) => {
        /// Every command the harness workspace's `bash` runs, in the order the prompt names them.
        pub const WORKSPACE_COMMANDS: &[&str] = &[$($name),+];

        /// Rules for the harness engine's workspace tools. Only the harness composition includes it: the
        /// legacy engine has no workspace, and naming tools it cannot call would only mislead the model.
        pub const ENVIRONMENT_BLOCK: &str = concat!(
            "# Environment\n",
            "- `bash`, `read`, `write` and `edit` work inside a virtual workspace that belongs to this conversation alone; relative paths start at ",
            workspace_shell!(@home),
            ".\n",
            "- `bash` is a simulated shell without network access; `curl` and `wget` do not exist there, and nothing else can be installed or run.\n",
            "- The shell has pipes, redirects, `&&`, `||`, variables, `$(...)`, `for`, `while` and `if`, and only these commands, meant for computation and data processing: ",
            workspace_shell!(@join $($name),+),
            ".\n",
            "- For anything on the web, use the search and fetch tools when you have them, never `bash`.\n",
            "- The user cannot see workspace files: never say that output was saved to a file; deliver the content in the chat or with `render_html`."
        );
    };
    (@join $first:literal $(, $rest:literal)*) => { concat!($first $(, ", ", $rest)*) };
    (@home) => { "/home/user" };
}

workspace_shell!(
    "echo",
    "printf",
    "cat",
    "ls",
    "pwd",
    "cd",
    "mkdir",
    "rmdir",
    "rm",
    "cp",
    "mv",
    "touch",
    "find",
    "tree",
    "stat",
    "head",
    "tail",
    "wc",
    "sort",
    "uniq",
    "cut",
    "tr",
    "paste",
    "join",
    "comm",
    "diff",
    "nl",
    "tac",
    "rev",
    "fold",
    "column",
    "tee",
    "xargs",
    "grep",
    "rg",
    "sed",
    "awk",
    "jq",
    "tar",
    "gzip",
    "gunzip",
    "seq",
    "expr",
    "bc",
    "base64",
    "md5sum",
    "sha256sum",
    "basename",
    "dirname",
    "realpath",
    "date",
    "true",
    "false",
    "test",
    "[",
    "read",
    "export",
    "unset",
    "set",
    "local",
    "shift",
    "eval",
    "exit",
    "break",
    "continue",
    "return",
    "help",
);

/// Where the workspace shell starts and where relative tool paths resolve.
pub const WORKSPACE_HOME: &str = workspace_shell!(@home);

/// Longest app version echoed into the prompt; the value comes from a client header.
const MAX_VERSION_CHARS: usize = 64;

/// Legacy engine: the stable half followed by the per-send notes, each separated by a blank line.
pub fn compose_legacy(stable: &str, notes: &[String]) -> String {
    let len = stable.len() + notes.iter().map(|n| n.len() + 2).sum::<usize>();
    let mut out = String::with_capacity(len);
    out.push_str(stable);
    for note in notes {
        out.push_str("\n\n");
        out.push_str(note);
    }
    out
}

/// Harness engine: stable, client identity, the environment block when the model can call tools, then
/// the volatile date line.
pub fn compose_harness(stable: &str, identity: &str, supports_tools: bool, volatile: &str) -> String {
    let mut out =
        String::with_capacity(stable.len() + identity.len() + ENVIRONMENT_BLOCK.len() + volatile.len() + 8);
    out.push_str(stable);
    out.push_str("\n\n");
    out.push_str(identity);
    if supports_tools {
        out.push_str("\n\n");
        out.push_str(ENVIRONMENT_BLOCK);
    }
    out.push_str("\n\n");
    out.push_str(volatile);
    out
}

/// `Client environment: <env>` plus `App version: <v>` when known. `web`, `ios`, `android` and `cli`
/// are kept; any other value is a desktop build. The literal `undefined` (what a JS client sends for a
/// missing value) counts as no version.
pub fn client_identity_block(env: &str, version: Option<&str>) -> String {
    let env = match env {
        "web" | "ios" | "android" | "cli" => env,
        _ => "desktop",
    };
    let mut out = format!("Client environment: {env}");
    let version = version.map(|v| single_line(v, MAX_VERSION_CHARS));
    if let Some(version) = version.filter(|v| !v.is_empty() && v != "undefined") {
        out.push_str("\nApp version: ");
        out.push_str(&version);
    }
    out
}
