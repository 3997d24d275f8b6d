//! Readable prompt inputs shared by the prompt tests. `Setup` owns everything a `PromptInput` borrows.
#![allow(dead_code)]

use chrono::{DateTime, TimeZone, Utc};
use promptgate_core::prompt::{ProjectContext, PromptInput};
use promptgate_core::settings::{
    AppLanguage, DistanceUnit, IntegrationState, IntegrationStatus, Localization, Location, ModelProfile,
    Project, Skill, TemperatureUnit, TimeFormat, UserSettings,
};

#[derive(Debug, Clone)]
pub struct Setup {
    pub model_name: String,
    pub profile: ModelProfile,
    pub settings: UserSettings,
    pub integrations: IntegrationStatus,
    pub has_web_tools: bool,
    pub mcp_summary: Option<String>,
    pub skills: Vec<Skill>,
    pub supports_tools: bool,
    pub project: Option<Project>,
    pub siblings: usize,
}

impl Setup {
    /// A new user who changed nothing, on a tool-capable model without web tools.
    pub fn bare() -> Self {
        Self {
            model_name: "Demo Model".to_owned(),
            profile: ModelProfile::default(),
            settings: UserSettings::default(),
            integrations: IntegrationStatus::default(),
            has_web_tools: false,
            mcp_summary: None,
            skills: Vec::new(),
            supports_tools: true,
            project: None,
            siblings: 0,
        }
    }

    /// Every conditional fragment present, with realistic values.
    pub fn everything() -> Self {
        Self {
            model_name: "GPT-OSS 120B".to_owned(),
            profile: ModelProfile {
                tools_override: Some("Prefer the calendar tools for anything about meetings.".to_owned()),
                link_previews_override: Some("Never preview links to paywalled news sites.".to_owned()),
                chat_mode_addendum: Some("Keep greetings to a single short line.".to_owned()),
                ..ModelProfile::default()
            },
            settings: UserSettings {
                preferred_name: "Ada".to_owned(),
                location: Location {
                    name: Some("New York, NY".to_owned()),
                    lat: Some(40.7),
                    lng: Some(-74.0),
                },
                localization: Localization {
                    distance_unit: DistanceUnit::Metric,
                    temperature_unit: TemperatureUnit::C,
                    time_format: TimeFormat::H24,
                    currency: "EUR".to_owned(),
                },
                ..UserSettings::default()
            },
            integrations: IntegrationStatus {
                google: IntegrationState {
                    connected: true,
                    enabled: false,
                },
                microsoft: IntegrationState {
                    connected: true,
                    enabled: true,
                },
                do_not_ask: false,
            },
            has_web_tools: true,
            mcp_summary: Some("- github: issues, pull requests and repository search".to_owned()),
            skills: default_skills(),
            supports_tools: true,
            project: Some(Project {
                id: "p1".to_owned(),
                name: "Garden redesign".to_owned(),
                instructions: Some("Plants must survive zone 6 winters.\nBudget is 2,000 EUR.".to_owned()),
            }),
            siblings: 3,
        }
    }

    pub fn input(&self) -> PromptInput<'_> {
        PromptInput {
            model_name: &self.model_name,
            profile: &self.profile,
            settings: &self.settings,
            integration_status: &self.integrations,
            has_web_tools: self.has_web_tools,
            mcp_summary: self.mcp_summary.as_deref(),
            skills: &self.skills,
            supports_tools: self.supports_tools,
            project: self.project.as_ref().map(|project| ProjectContext {
                project,
                has_searchable_chats: self.supports_tools && self.siblings > 0,
            }),
        }
    }
}

pub fn skill(slug: &str, description: &str, instructions: &str, renders_widgets: bool) -> Skill {
    Skill {
        id: format!("skill-{slug}"),
        slug: slug.to_owned(),
        name: slug.replace('-', " "),
        description: description.to_owned(),
        instructions: instructions.to_owned(),
        enabled: true,
        renders_widgets,
    }
}

/// A research skill, two widget skills and a disabled one.
pub fn default_skills() -> Vec<Skill> {
    let mut disabled = skill(
        "haiku",
        "Answers only in haiku.",
        "Write every answer as a haiku.",
        false,
    );
    disabled.enabled = false;
    vec![
        skill(
            "research",
            "Deep research:   several searches,\n   then a cited synthesis.",
            "Plan sub-questions, search each, fetch the best sources, then synthesise with [N] citations.",
            false,
        ),
        skill(
            "weather",
            "Shows a weather card for a place.",
            "Emit <widget:weather location=\"...\"/>.",
            true,
        ),
        skill(
            "link-preview",
            "Shows a preview card for a URL.",
            "Emit <widget:link-preview url=\"...\"/>.",
            true,
        ),
        disabled,
    ]
}

pub fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, s)
        .single()
        .unwrap_or_default()
}

/// The reference instant of the specification's examples: Friday, July 10, 2026, 12:00 UTC.
pub fn july_10_noon() -> DateTime<Utc> {
    at(2026, 7, 10, 12, 0, 0)
}

/// The top-level headings (`# ...` lines) in order, with the project's name cut off.
pub fn top_level_headings(prompt: &str) -> Vec<String> {
    prompt
        .lines()
        .filter(|line| line.starts_with("# "))
        .map(|line| {
            if line.starts_with("# Project: ") {
                "# Project:".to_owned()
            } else {
                line.to_owned()
            }
        })
        .collect()
}

pub fn languages() -> [AppLanguage; 7] {
    AppLanguage::ALL
}
