//! Prompt assembly for one send: `create_parts` plus the legacy composition, with a realistic user.

use std::hint::black_box;

use chrono::{TimeZone, Utc};
use chrono_tz::Tz;
use criterion::{Criterion, criterion_group, criterion_main};
use promptgate_core::prompt::{
    NotesInput, ProjectContext, PromptInput, compose_legacy, create_parts, volatile_notes,
};
use promptgate_core::settings::{
    IntegrationState, IntegrationStatus, Location, ModelProfile, Project, Skill, UserSettings,
};

fn skill(slug: &str, description: &str, renders_widgets: bool) -> Skill {
    Skill {
        id: format!("skill-{slug}"),
        slug: slug.to_owned(),
        name: slug.to_owned(),
        description: description.to_owned(),
        instructions: format!("Full instructions for {slug}, loaded through the skill tool."),
        enabled: true,
        renders_widgets,
    }
}

fn bench_prompt_assembly(c: &mut Criterion) {
    let profile = ModelProfile {
        tools_override: Some("Prefer the calendar tools for anything about meetings.".to_owned()),
        link_previews_override: Some("Never preview links to paywalled news sites.".to_owned()),
        chat_mode_addendum: Some("Keep greetings to a single short line.".to_owned()),
        ..ModelProfile::default()
    };
    let settings = UserSettings {
        preferred_name: "Ada Lovelace".to_owned(),
        location: Location {
            name: Some("Berlin, Germany".to_owned()),
            lat: Some(52.52),
            lng: Some(13.405),
        },
        time_zone: "Europe/Berlin".to_owned(),
        ..UserSettings::default()
    };
    let integrations = IntegrationStatus {
        google: IntegrationState {
            connected: true,
            enabled: true,
        },
        microsoft: IntegrationState {
            connected: true,
            enabled: false,
        },
        do_not_ask: false,
    };
    let skills = vec![
        skill(
            "research",
            "Deep research: several searches, then a cited synthesis.",
            false,
        ),
        skill(
            "meeting-notes",
            "Turns a transcript into decisions, owners and deadlines.",
            false,
        ),
        skill("weather", "Shows a weather card for a place.", true),
        skill("link-preview", "Shows a preview card for a URL.", true),
        skill("map", "Shows places on an interactive map.", true),
    ];
    let project = Project {
        id: "p1".to_owned(),
        name: "Garden redesign".to_owned(),
        instructions: Some(
            "Plants must survive zone 6 winters.\nBudget is 2,000 EUR, including tools.\n\
             Prefer native species and avoid anything invasive in Central Europe.\n\
             # Always answer with a short plan first."
                .to_owned(),
        ),
    };
    let mcp_summary = "- github: issues, pull requests and repository search\n- linear: tickets and cycles";
    let input = PromptInput {
        model_name: "GPT-OSS 120B",
        profile: &profile,
        settings: &settings,
        integration_status: &integrations,
        has_web_tools: true,
        mcp_summary: Some(mcp_summary),
        skills: &skills,
        supports_tools: true,
        project: Some(ProjectContext {
            project: &project,
            has_searchable_chats: true,
        }),
    };
    let now = Utc
        .with_ymd_and_hms(2026, 7, 10, 12, 0, 0)
        .single()
        .unwrap_or_default();
    let tz: Tz = settings.time_zone.parse().unwrap_or(Tz::UTC);

    c.bench_function("prompt_assembly", |b| {
        b.iter(|| {
            let parts = create_parts(black_box(&input), black_box(now), tz);
            let notes = volatile_notes(NotesInput {
                date_line: &parts.volatile,
                voice_mode: false,
                skill_instructions: Vec::new(),
                ask_responses: &[],
            });
            black_box(compose_legacy(&parts.stable, &notes))
        })
    });
}

criterion_group!(benches, bench_prompt_assembly);
criterion_main!(benches);
