//! The core crate's integration tests, one binary: the prompt, tool catalogue, web budget, sources,
//! citations and send composition through the public API.

mod budget;
mod citation_markers;
mod citation_support;
mod citations;
mod compose;
mod mcp_merge;
mod prompt_date_line;
mod prompt_notes;
mod prompt_properties;
mod prompt_signature;
mod prompt_skills;
mod prompt_snapshots;
mod prompt_structure;
mod prompt_support;
mod sources;
mod tool_display;
mod tools;
