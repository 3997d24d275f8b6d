//! docs/architecture.md draws the crate graph a newcomer reads first; these tests hold it to the graph
//! cargo resolves, so an edge added to a Cargo.toml without a word in the doc fails here.

// Helpers in test files fail the test loudly; that is their job.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// Each workspace crate and the workspace crates it depends on, without their `promptgate-` prefix.
type Graph = BTreeMap<String, Vec<String>>;

fn repo_root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The graph as `cargo tree` resolves it for one kind of edge (`normal` or `dev`).
fn resolved(edges: &str) -> Graph {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .current_dir(repo_root())
        .args([
            "tree",
            "--workspace",
            "--offline",
            "--edges",
            edges,
            "--depth",
            "1",
            "--no-dedupe",
        ])
        .args(["--prefix", "depth", "--format", "{p}"])
        .output()
        .expect("cargo runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "cargo tree failed: {stderr}");
    let mut graph = Graph::new();
    let mut current = None;
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Some((depth, rest)) = line.split_at_checked(1) else {
            continue;
        };
        let Some(name) = rest
            .split_whitespace()
            .next()
            .filter(|n| n.starts_with("promptgate-"))
        else {
            continue;
        };
        match depth {
            "0" => {
                graph.entry(name.to_owned()).or_default();
                current = Some(name.to_owned());
            }
            "1" => {
                let crate_name = current.clone().expect("a dependency follows its crate");
                let dependency = name.trim_start_matches("promptgate-").to_owned();
                graph.entry(crate_name).or_default().push(dependency);
            }
            _ => {}
        }
    }
    for dependencies in graph.values_mut() {
        dependencies.sort();
        dependencies.dedup();
    }
    graph
}

/// The graph the doc draws in the text block after `<!-- crate-graph: {edges} -->`.
fn documented(edges: &str) -> Graph {
    let doc = std::fs::read_to_string(repo_root().join("docs/architecture.md")).unwrap();
    let marker = format!("<!-- crate-graph: {edges} -->");
    let after = doc
        .split_once(&marker)
        .unwrap_or_else(|| panic!("docs/architecture.md has no {marker}"))
        .1;
    let block = after
        .split_once("```text\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(block, _)| block)
        .unwrap_or_else(|| panic!("no text block after {marker}"));
    block
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let (name, dependencies) = line
                .split_once(':')
                .unwrap_or_else(|| panic!("{line:?} is not `crate: dependencies`"));
            let mut dependencies: Vec<String> = match dependencies.trim() {
                "(none)" => Vec::new(),
                list => list.split(',').map(|d| d.trim().to_owned()).collect(),
            };
            dependencies.sort();
            (name.trim().to_owned(), dependencies)
        })
        .collect()
}

fn assert_same(edges: &str) {
    let real = resolved(edges);
    let doc = documented(edges);
    let differences: Vec<String> = real
        .keys()
        .chain(doc.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter(|name| real.get(*name) != doc.get(*name))
        .map(|name| {
            format!(
                "{name}: cargo has {:?}, the doc has {:?}",
                real.get(name),
                doc.get(name)
            )
        })
        .collect();
    assert!(
        differences.is_empty(),
        "docs/architecture.md's {edges} crate graph differs from `cargo tree`:\n{}",
        differences.join("\n")
    );
}

#[test]
fn the_crate_graph_in_the_architecture_doc_is_the_one_cargo_resolves() {
    assert_same("normal");
}

#[test]
fn the_test_edges_of_the_crate_graph_in_the_architecture_doc_are_the_ones_cargo_resolves() {
    assert_same("dev");
}
