//! The reference web app (web/) in a real browser: Playwright drives the system's Chromium against
//! this crate's `promptgate` binary, with the demo model, a scripted upstream and the official MCP
//! "everything" server, all on loopback (web/tests/global-setup.ts starts them). It needs
//! `npm ci` in web/, Debian's `chromium`, and the MCP peers
//! (`crates/promptgate-mcp/tests/peers/install.sh`); `.ci/run` installs all three. Without them the
//! test fails under CI and is skipped with a note elsewhere.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn chromium() -> PathBuf {
    std::env::var_os("CHROMIUM_PATH").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from)
}

fn peers_dir(repo: &Path) -> PathBuf {
    std::env::var_os("PROMPTGATE_TEST_NODE_PEERS_DIR")
        .map_or_else(|| repo.join("crates/promptgate-mcp/tests/peers"), PathBuf::from)
}

/// The web folder when everything the suite needs is installed.
fn web_dir() -> Option<PathBuf> {
    let repo = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let web = repo.join("web");
    let missing: Vec<String> = [
        (web.join("node_modules/@playwright/test"), "run `npm ci` in web/"),
        (
            chromium(),
            "install Chromium (`apt-get install chromium`) or set CHROMIUM_PATH",
        ),
        (
            peers_dir(&repo).join("node_modules/@modelcontextprotocol/server-everything"),
            "run crates/promptgate-mcp/tests/peers/install.sh",
        ),
    ]
    .into_iter()
    .filter(|(path, _)| !path.exists())
    .map(|(path, fix)| format!("{} is missing: {fix}", path.display()))
    .collect();
    if missing.is_empty() {
        return Some(web);
    }
    assert!(std::env::var_os("CI").is_none(), "{}", missing.join("\n"));
    eprintln!(
        "note: skipping the browser tests of the web app:\n  {}",
        missing.join("\n  ")
    );
    None
}

fn run(dir: &Path, program: &str, args: &[&str], envs: &[(&str, &Path)]) {
    let mut command = Command::new(program);
    command.current_dir(dir).args(args);
    for (key, value) in envs {
        command.env(key, value);
    }
    let mut out = command
        .output()
        .unwrap_or_else(|e| panic!("{program} does not run: {e}"));
    // Playwright lists every passed test before the failures' errors; without those lines a failed
    // run's errors stay within what a shortened CI log keeps.
    out.stdout = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|line| !line.trim_start().starts_with('✓'))
        .flat_map(|line| [line, "\n"])
        .collect::<String>()
        .into_bytes();
    crate::common::assert_succeeded(&out, &format!("{program} {args:?}"));
}

#[test]
fn the_web_app_works_in_a_real_browser() {
    let Some(web) = web_dir() else { return };
    // The suite tests the app as built from the current sources.
    run(&web, "npm", &["run", "build", "--silent"], &[]);
    let screenshots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser-screenshots");
    eprintln!("browser test screenshots: {}", screenshots.display());
    run(
        &web,
        "node",
        &["node_modules/@playwright/test/cli.js", "test"],
        &[
            ("PROMPTGATE_BIN", Path::new(env!("CARGO_BIN_EXE_promptgate"))),
            ("PROMPTGATE_SCREENSHOTS", &screenshots),
            ("CHROMIUM_PATH", &chromium()),
        ],
    );
    for screen in [
        "chat-with-tool",
        "citations",
        "artifact",
        "settings",
        "inspector",
        "mcp-servers",
    ] {
        for project in ["desktop-light", "phone-dark"] {
            let file = screenshots.join(format!("{screen}-{project}.png"));
            assert!(file.is_file(), "{} was not written", file.display());
        }
    }
    eprintln!(
        "browser tests passed; screenshots of the main screens are in {}",
        screenshots.display()
    );
}

/// The web app's API types are generated from openapi.yaml and committed; the generated file names
/// the openapi.yaml it came from by its hash.
#[test]
fn the_web_apps_api_types_match_openapi_yaml() {
    use sha2::{Digest, Sha256};
    let repo = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let spec = std::fs::read(repo.join("openapi.yaml")).unwrap();
    let hash: String = Sha256::digest(&spec)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let generated = std::fs::read_to_string(repo.join("web/src/generated/openapi.d.ts")).unwrap();
    let first = generated.lines().next().unwrap_or_default();
    assert!(
        first.contains(&hash),
        "web/src/generated/openapi.d.ts was made from another openapi.yaml: run `npm run api-types` in web/ \
         (first line: {first}, openapi.yaml sha256 {hash})"
    );
}
