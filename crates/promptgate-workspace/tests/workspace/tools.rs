//! The workspace tools doing real work through the bashkit shell.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{call, sh, text, ws};
use promptgate_core::prompt::{ENVIRONMENT_BLOCK, WORKSPACE_COMMANDS};
use promptgate_workspace::{ToolOutcome, Workspace, command_names, help_text};
use serde_json::json;

const LOG: &str = "GET /a 200\nPOST /b 500\nGET /c 200\nGET /a 404\nPOST /b 500\nGET /d 500\n";

#[tokio::test]
async fn a_pipeline_counts_over_a_written_file() {
    let mut ws = ws();
    let wrote = call(
        &mut ws,
        "write",
        json!({"path": "logs/access.log", "content": LOG}),
    )
    .await;
    assert!(!wrote.is_error, "{wrote:?}");
    let (out, err, code) = sh(&mut ws, "grep ' 500' logs/access.log | sort | uniq | wc -l").await;
    assert_eq!((out.trim(), err.as_str(), code), ("2", "", 0));
    let (out, _, _) = sh(&mut ws, "grep -c GET /home/user/logs/access.log").await;
    assert_eq!(out, "4\n");
    let (out, _, _) = sh(
        &mut ws,
        "awk '{n[$3]++} END {for (k in n) print k, n[k]}' logs/access.log | sort",
    )
    .await;
    assert_eq!(out, "200 2\n404 1\n500 3\n");
}

/// One edit of `notes.md`.
async fn edit_notes(ws: &mut Workspace, old: &str, new: &str) -> ToolOutcome {
    call(
        ws,
        "edit",
        json!({"path": "notes.md", "edits": [{"oldText": old, "newText": new}]}),
    )
    .await
}

#[tokio::test]
async fn edit_then_read_sees_the_change_and_refuses_ambiguity() {
    let mut ws = ws();
    call(
        &mut ws,
        "write",
        json!({"path": "notes.md", "content": "alpha\nbeta\ngamma\nbeta\n"}),
    )
    .await;
    let ambiguous = edit_notes(&mut ws, "beta", "B").await;
    assert!(ambiguous.is_error);
    assert!(
        ambiguous.output["error"]
            .as_str()
            .unwrap()
            .contains("more than once")
    );
    let missing = edit_notes(&mut ws, "delta", "D").await;
    assert!(missing.is_error);

    let edited = call(
        &mut ws,
        "edit",
        json!({"path": "notes.md", "edits": [{"oldText": "alpha\nbeta", "newText": "ALPHA\nbeta"}, {"oldText": "gamma", "newText": "GAMMA"}]}),
    )
    .await;
    assert!(!edited.is_error, "{edited:?}");
    let read = call(&mut ws, "read", json!({"path": "notes.md"})).await;
    assert_eq!(text(&read), "ALPHA\nbeta\nGAMMA\nbeta\n");
    let page = call(
        &mut ws,
        "read",
        json!({"path": "/home/user/notes.md", "offset": 2, "limit": 2}),
    )
    .await;
    assert_eq!(
        text(&page),
        "beta\nGAMMA\n\n[lines 2-3 of 4; continue with offset 4]"
    );
    // The shell sees the edited file too.
    let (out, _, _) = sh(&mut ws, "sed -n '3p' notes.md").await;
    assert_eq!(out, "GAMMA\n");
}

#[tokio::test]
async fn the_shell_does_data_work_over_the_workspace() {
    let mut ws = ws();
    let script = r#"
mkdir -p data && cd data
for i in $(seq 1 5); do echo "row $i" >> rows.txt; done
n=$(wc -l < rows.txt)
if [ "$n" -eq 5 ] && test -f rows.txt; then echo "five rows"; else echo "wrong"; fi
echo '{"items":[{"name":"a","v":2},{"name":"b","v":3}]}' > d.json
jq '[.items[].v] | add' d.json
sed -i 's/row/line/' rows.txt && head -n 2 rows.txt | tail -n 1
printf '%s-%03d\n' x 7
cut -d' ' -f2 rows.txt | tr '\n' ',' ; echo
grep -rn 'line 4' . ; grep -E -i -v 'LINE [1-4]' rows.txt
find . -name '*.json'
tar -cf ../bundle.tar rows.txt d.json && tar -tf ../bundle.tar | sort
basename /a/b/c.txt .txt; dirname /a/b/c.txt
cp rows.txt copy.txt && mv copy.txt moved.txt && rm rows.txt && ls
date -u +%Y-%m-%d
false || echo recovered; true && echo chained
missing-command 2>&1 | grep -c 'not found'
"#;
    let (out, err, code) = sh(&mut ws, script).await;
    assert_eq!(
        out,
        "five rows\n5\nline 2\nx-007\n1,2,3,4,5,\n./rows.txt:4:line 4\nline 5\n./d.json\nd.json\nrows.txt\nc\n/a/b\nd.json\nmoved.txt\n2026-07-10\nrecovered\nchained\n1\n",
        "stderr: {err}"
    );
    assert_eq!(code, 0, "{err}");
    // Files made by the shell are workspace files.
    let read = call(&mut ws, "read", json!({"path": "data/moved.txt"})).await;
    assert_eq!(text(&read), "line 1\nline 2\nline 3\nline 4\nline 5\n");
    let (out, _, _) = sh(
        &mut ws,
        "mkdir x && cd x && tar -xf ../bundle.tar && cat rows.txt | wc -l",
    )
    .await;
    assert_eq!(out.trim(), "5");
}

#[tokio::test]
async fn the_prompt_help_and_the_shell_agree_on_the_commands() {
    let names = command_names();
    for command in WORKSPACE_COMMANDS {
        assert!(
            names.iter().any(|n| n == command),
            "{command} is promised but not registered"
        );
    }
    // Whatever else the interpreter answers to is shell syntax it dispatches itself.
    let syntax = [
        "builtin", "command", "declare", "exec", "getopts", "let", "readonly", "source", ".", "typeset",
        "bash", "sh",
    ];
    for name in &names {
        assert!(
            WORKSPACE_COMMANDS.contains(&name.as_str()) || syntax.contains(&name.as_str()),
            "{name} runs but is not listed"
        );
    }
    let (out, _, code) = sh(&mut ws(), "help").await;
    assert_eq!(code, 0);
    assert_eq!(out, help_text());
    assert!(out.contains(&WORKSPACE_COMMANDS.join(", ")));
    assert!(ENVIRONMENT_BLOCK.contains(&WORKSPACE_COMMANDS.join(", ")));
    // Commands the interpreter has but the list does not name are gone.
    for absent in ["curl", "wget", "sqlite3", "python", "ps", "kill", "sleep", "ln"] {
        let (_, err, code) = sh(&mut ws(), absent).await;
        assert_eq!(code, 127, "{absent}: {err}");
    }
}
