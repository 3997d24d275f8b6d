//! The workspace itself: an in-memory tree of files and directories keyed by absolute path, with the
//! set of paths changed since it was loaded, so saving writes only what a run touched.

use std::collections::{BTreeMap, BTreeSet};

use promptgate_core::prompt::WORKSPACE_HOME;
use promptgate_core::storage::{WorkspaceChanges, WorkspaceEntry};

use crate::limits::WorkspaceLimits;

/// Directories every workspace has; they are never stored and cannot be removed for good.
pub(crate) const BASE_DIRS: &[&str] = &["/", "/home", WORKSPACE_HOME, "/tmp"];
/// The shell's device directory (`/dev/null` and friends): not part of the workspace.
pub(crate) const DEVICE_DIR: &str = "/dev";
const MAX_PATH_BYTES: usize = 4096;
const MAX_DEPTH: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Node {
    Dir,
    File(Vec<u8>),
}

/// A thread's files. Cheap to build from the store's rows; every write is checked against the limits.
#[derive(Debug, Clone)]
pub struct Workspace {
    nodes: BTreeMap<String, Node>,
    dirty: BTreeSet<String>,
    limits: WorkspaceLimits,
}

/// Why a path or a write was refused; the text goes back to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PathError(pub String);

/// Resolves a tool's path argument: relative paths start at the workspace home; `.` and `..` are
/// applied, and a path that climbs above the workspace root is refused rather than clamped.
pub fn resolve(path: &str) -> Result<String, PathError> {
    if path.is_empty() {
        return Err(PathError("path is empty".to_owned()));
    }
    if path.contains('\0') || path.len() > MAX_PATH_BYTES {
        return Err(PathError(format!("path {path:?} is not a valid workspace path")));
    }
    let joined = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("{WORKSPACE_HOME}/{path}")
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(PathError(format!("path {path:?} leaves the workspace")));
                }
            }
            other => parts.push(other),
        }
    }
    if parts.len() > MAX_DEPTH {
        return Err(PathError(format!("path {path:?} is nested too deeply")));
    }
    Ok(format!("/{}", parts.join("/")))
}

fn parent(path: &str) -> Option<&str> {
    if path == "/" {
        return None;
    }
    match path.rfind('/') {
        Some(0) => Some("/"),
        Some(i) => Some(&path[..i]),
        None => None,
    }
}

fn is_device_path(path: &str) -> bool {
    path == DEVICE_DIR || path.starts_with("/dev/")
}

impl Workspace {
    /// An empty workspace: only the base directories.
    pub fn new(limits: WorkspaceLimits) -> Workspace {
        let nodes = BASE_DIRS.iter().map(|d| ((*d).to_owned(), Node::Dir)).collect();
        Workspace {
            nodes,
            dirty: BTreeSet::new(),
            limits,
        }
    }

    /// The workspace as stored. Entries are taken as they are (missing parents are created), and the
    /// result starts with no pending changes. Fails when the rows break the limits.
    pub fn from_entries(
        entries: Vec<WorkspaceEntry>,
        limits: WorkspaceLimits,
    ) -> Result<Workspace, PathError> {
        let mut ws = Workspace::new(limits);
        for entry in entries {
            let path = resolve(&entry.path)?;
            if entry.is_dir {
                ws.make_dir(&path)?;
            } else {
                ws.write(&path, entry.content)?;
            }
        }
        ws.dirty.clear();
        Ok(ws)
    }

    pub fn limits(&self) -> &WorkspaceLimits {
        &self.limits
    }

    pub(crate) fn nodes(&self) -> &BTreeMap<String, Node> {
        &self.nodes
    }

    /// A file's bytes; an error naming what is there instead when it is not a file.
    pub fn read(&self, path: &str) -> Result<&[u8], PathError> {
        match self.nodes.get(path) {
            Some(Node::File(bytes)) => Ok(bytes),
            Some(Node::Dir) => Err(PathError(format!("{path} is a directory"))),
            None => Err(PathError(format!("{path}: no such file"))),
        }
    }

    pub fn is_dir(&self, path: &str) -> bool {
        matches!(self.nodes.get(path), Some(Node::Dir))
    }

    /// Total bytes of all files.
    pub fn total_bytes(&self) -> usize {
        self.nodes
            .values()
            .map(|n| match n {
                Node::File(b) => b.len(),
                Node::Dir => 0,
            })
            .sum()
    }

    fn entry_count(&self) -> usize {
        self.nodes.len() - BASE_DIRS.len()
    }

    /// Creates or replaces a file, creating its parent directories.
    pub fn write(&mut self, path: &str, content: Vec<u8>) -> Result<(), PathError> {
        if is_device_path(path) {
            return Err(PathError(format!(
                "{path} is a device path, not part of the workspace"
            )));
        }
        if content.len() > self.limits.max_file_bytes {
            return Err(PathError(format!(
                "{path}: a file may hold at most {} bytes, this would be {}",
                self.limits.max_file_bytes,
                content.len()
            )));
        }
        let old = match self.nodes.get(path) {
            Some(Node::Dir) => return Err(PathError(format!("{path} is a directory"))),
            Some(Node::File(b)) => b.len(),
            None => 0,
        };
        let total = self.total_bytes() - old + content.len();
        if total > self.limits.max_total_bytes {
            return Err(PathError(format!(
                "the workspace may hold at most {} bytes in all, this would make {total}",
                self.limits.max_total_bytes
            )));
        }
        if let Some(dir) = parent(path) {
            self.make_dir(dir)?;
        }
        if old == 0 && !self.nodes.contains_key(path) {
            self.check_room(1)?;
        }
        self.nodes.insert(path.to_owned(), Node::File(content));
        self.dirty.insert(path.to_owned());
        Ok(())
    }

    /// Creates a directory and its parents; fine when it exists.
    pub fn make_dir(&mut self, path: &str) -> Result<(), PathError> {
        if is_device_path(path) {
            return Err(PathError(format!(
                "{path} is a device path, not part of the workspace"
            )));
        }
        match self.nodes.get(path) {
            Some(Node::Dir) => return Ok(()),
            Some(Node::File(_)) => return Err(PathError(format!("{path} is a file, not a directory"))),
            None => {}
        }
        if let Some(dir) = parent(path) {
            self.make_dir(dir)?;
        }
        self.check_room(1)?;
        self.nodes.insert(path.to_owned(), Node::Dir);
        self.dirty.insert(path.to_owned());
        Ok(())
    }

    fn check_room(&self, more: usize) -> Result<(), PathError> {
        if self.entry_count() + more > self.limits.max_entries {
            return Err(PathError(format!(
                "the workspace may hold at most {} files and directories",
                self.limits.max_entries
            )));
        }
        Ok(())
    }

    /// Makes the tree equal to `target` (what the shell left behind), recording every difference as
    /// a change. The target must already respect the limits; it is checked again here.
    pub(crate) fn replace_with(&mut self, mut target: BTreeMap<String, Node>) -> Result<(), PathError> {
        for dir in BASE_DIRS {
            target.insert((*dir).to_owned(), Node::Dir);
        }
        let total: usize = target
            .values()
            .map(|n| match n {
                Node::File(b) => b.len(),
                Node::Dir => 0,
            })
            .sum();
        if total > self.limits.max_total_bytes {
            return Err(PathError(format!(
                "the workspace may hold at most {} bytes in all",
                self.limits.max_total_bytes
            )));
        }
        if target.len() - BASE_DIRS.len() > self.limits.max_entries {
            return Err(PathError(format!(
                "the workspace may hold at most {} files and directories",
                self.limits.max_entries
            )));
        }
        if let Some((path, _)) = target
            .iter()
            .find(|(_, n)| matches!(n, Node::File(b) if b.len() > self.limits.max_file_bytes))
        {
            return Err(PathError(format!(
                "{path}: a file may hold at most {} bytes",
                self.limits.max_file_bytes
            )));
        }
        for path in self.nodes.keys() {
            if !target.contains_key(path) {
                self.dirty.insert(path.clone());
            }
        }
        for (path, node) in &target {
            if self.nodes.get(path) != Some(node) {
                self.dirty.insert(path.clone());
            }
        }
        self.nodes = target;
        Ok(())
    }

    /// What changed since loading or the last [`Workspace::mark_saved`], in the store's terms.
    pub fn changes(&self) -> WorkspaceChanges {
        let mut changes = WorkspaceChanges::default();
        for path in &self.dirty {
            if BASE_DIRS.contains(&path.as_str()) {
                continue;
            }
            match self.nodes.get(path) {
                Some(Node::File(bytes)) => changes.written.push(WorkspaceEntry {
                    path: path.clone(),
                    is_dir: false,
                    content: bytes.clone(),
                }),
                Some(Node::Dir) => changes.written.push(WorkspaceEntry {
                    path: path.clone(),
                    is_dir: true,
                    content: Vec::new(),
                }),
                None => changes.removed.push(path.clone()),
            }
        }
        changes
    }

    /// Forgets the pending changes once the store has them.
    pub fn mark_saved(&mut self) {
        self.dirty.clear();
    }

    /// Every stored path and whether it is a directory, sorted; the base directories left out.
    pub fn paths(&self) -> Vec<(String, bool)> {
        self.nodes
            .iter()
            .filter(|(p, _)| !BASE_DIRS.contains(&p.as_str()))
            .map(|(p, n)| (p.clone(), matches!(n, Node::Dir)))
            .collect()
    }
}
