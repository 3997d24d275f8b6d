//! The configuration as a file and an environment give it: defaults, overrides, and what is refused.

use std::collections::HashMap;

use super::*;

struct FakeEnv(HashMap<&'static str, &'static str>);

impl Env for FakeEnv {
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).map(|v| (*v).to_owned())
    }
}

/// Why `validate` refuses the config file `text` (which parses).
fn refused(text: &str) -> String {
    Config::parse(text).unwrap().validate().unwrap_err().to_string()
}

#[test]
fn embedded_default_is_single_user_on_loopback_with_the_demo_model() {
    let config = Config::load(None, &FakeEnv(HashMap::new())).unwrap();
    assert_eq!(config.listen.to_string(), "127.0.0.1:8080");
    assert_eq!(config.auth.mode, AuthMode::SingleUser);
    assert_eq!(config.default_model, "demo");
    assert!(config.database_url.starts_with("sqlite://data/"));
    assert_eq!(config.models[0].to_model().provider, "demo");
}

#[test]
fn environment_overrides_listen_and_database() {
    let env = FakeEnv(HashMap::from([
        ("PROMPTGATE_LISTEN", "127.0.0.1:9999"),
        ("DATABASE_URL", "postgres://x@127.0.0.1/db"),
    ]));
    let config = Config::load(None, &env).unwrap();
    assert_eq!(config.listen.port(), 9999);
    assert_eq!(config.database_url, "postgres://x@127.0.0.1/db");
}

#[test]
fn budget_promotion_can_be_switched_from_the_environment() {
    let off = FakeEnv(HashMap::from([("PROMPTGATE_WEB_BUDGET_PROMOTION", "off")]));
    assert!(!Config::load(None, &off).unwrap().web.budget_promotion);
    let bad = FakeEnv(HashMap::from([("PROMPTGATE_WEB_BUDGET_PROMOTION", "maybe")]));
    let err = Config::load(None, &bad).unwrap_err().to_string();
    assert!(err.contains("PROMPTGATE_WEB_BUDGET_PROMOTION"), "{err}");
    assert!(
        Config::load(None, &FakeEnv(HashMap::new()))
            .unwrap()
            .web
            .budget_promotion
    );
}

#[test]
fn workspace_limits_default_to_the_workspace_crate_and_follow_file_and_environment() {
    let config = Config::load(None, &FakeEnv(HashMap::new())).unwrap();
    assert_eq!(
        config.workspace.limits(),
        promptgate_service::deployment::WorkspaceLimits::default()
    );
    let mut config = Config::parse(&format!(
        "{EMBEDDED_DEFAULT}\n[workspace]\nmax_file_bytes = 1024\nbash_timeout_ms = 2500\n"
    ))
    .unwrap();
    let env = FakeEnv(HashMap::from([("PROMPTGATE_WORKSPACE_MAX_ENTRIES", "50")]));
    config.apply_env(&env).unwrap();
    let limits = config.workspace.limits();
    assert_eq!(limits.max_file_bytes, 1024);
    assert_eq!(limits.bash_timeout, std::time::Duration::from_millis(2500));
    assert_eq!(limits.max_entries, 50);

    let bad = FakeEnv(HashMap::from([("PROMPTGATE_WORKSPACE_MAX_COMMANDS", "lots")]));
    let err = Config::load(None, &bad).unwrap_err().to_string();
    assert!(err.contains("PROMPTGATE_WORKSPACE_MAX_COMMANDS"), "{err}");
    let zero = FakeEnv(HashMap::from([("PROMPTGATE_WORKSPACE_MAX_TOTAL_BYTES", "0")]));
    let err = Config::load(None, &zero).unwrap_err().to_string();
    assert!(
        err.contains("workspace.max_total_bytes must be positive"),
        "{err}"
    );
}

#[test]
fn responses_kept_for_zero_days_is_refused() {
    let mut config =
        Config::parse(&format!("{EMBEDDED_DEFAULT}\n[responses]\nretention_days = 0\n")).unwrap();
    config.apply_env(&FakeEnv(HashMap::new())).unwrap();
    let err = config.validate().unwrap_err().to_string();
    assert!(err.contains("responses.retention_days must be positive"), "{err}");
}

#[test]
fn single_user_mode_refuses_a_public_address() {
    let env = FakeEnv(HashMap::from([("PROMPTGATE_LISTEN", "0.0.0.0:8080")]));
    let err = Config::load(None, &env).unwrap_err().to_string();
    assert!(err.contains("loopback"), "{err}");
    let env = FakeEnv(HashMap::from([
        ("PROMPTGATE_LISTEN", "0.0.0.0:8080"),
        ("PROMPTGATE_AUTH_MODE", "tokens"),
    ]));
    assert!(Config::load(None, &env).is_ok());
}

#[test]
fn a_model_must_name_a_defined_provider() {
    let text = EMBEDDED_DEFAULT.replace(
        "provider = \"demo\"\nupstream_model",
        "provider = \"nope\"\nupstream_model",
    );
    let err = refused(&text);
    assert!(err.contains("provider nope"), "{err}");
}

#[test]
fn an_anthropic_provider_needs_no_base_url_and_alone_takes_max_tokens_and_thinking() {
    let anthropic = format!(
        "{EMBEDDED_DEFAULT}\n[[providers]]\nname = \"claude\"\nkind = \"anthropic\"\n\
         api_key_env = \"ANTHROPIC_API_KEY\"\nmax_tokens = 4096\nthinking = \"budget\"\n"
    );
    let config = Config::parse(&anthropic).unwrap();
    assert!(config.validate().is_ok());
    let entry = config.provider("claude").unwrap();
    assert_eq!(entry.kind, ProviderKind::Anthropic);
    assert_eq!(entry.base_url, None);
    assert_eq!(entry.max_tokens, Some(4096));
    assert_eq!(entry.thinking, Some(ThinkingStyle::Budget));

    let misplaced = format!(
        "{EMBEDDED_DEFAULT}\n[[providers]]\nname = \"local\"\nkind = \"openai\"\n\
         base_url = \"http://127.0.0.1:1/v1\"\nthinking = \"adaptive\"\n"
    );
    let err = refused(&misplaced);
    assert!(err.contains("anthropic"), "{err}");
    let unknown = format!(
        "{EMBEDDED_DEFAULT}\n[[providers]]\nname = \"claude\"\nkind = \"anthropic\"\nthinking = \"lots\"\n"
    );
    assert!(Config::parse(&unknown).is_err());
}

#[test]
fn mcp_loopback_follows_the_auth_mode_unless_set() {
    let config = Config::load(None, &FakeEnv(HashMap::new())).unwrap();
    assert!(config.mcp.address_policy(AuthMode::SingleUser).allow_loopback);
    assert!(!config.mcp.address_policy(AuthMode::Tokens).allow_loopback);
    assert!(!config.mcp.address_policy(AuthMode::SingleUser).allow_private);

    let text = format!(
        "{EMBEDDED_DEFAULT}\n[mcp]\nallow_loopback = false\nallow_private = true\nallowed_addrs = [\"10.1.2.3:8000\"]\n"
    );
    let config = Config::parse(&text).unwrap();
    let single = config.mcp.address_policy(AuthMode::SingleUser);
    assert!(!single.allow_loopback, "an explicit setting wins over the mode");
    assert!(single.allow_private);
    assert_eq!(single.allowed_addrs, vec!["10.1.2.3:8000".parse().unwrap()]);
    let opened = Config::parse(&format!("{EMBEDDED_DEFAULT}\n[mcp]\nallow_loopback = true\n")).unwrap();
    assert!(opened.mcp.address_policy(AuthMode::Tokens).allow_loopback);
}

#[test]
fn mcp_timings_must_be_usable() {
    let zero = format!("{EMBEDDED_DEFAULT}\n[mcp]\nreconnect_initial_backoff_ms = 0\n");
    let err = refused(&zero);
    assert!(err.contains("mcp.reconnect_initial_backoff_ms"), "{err}");
    let inverted = format!(
        "{EMBEDDED_DEFAULT}\n[mcp]\nreconnect_initial_backoff_ms = 500\nreconnect_max_backoff_ms = 100\n"
    );
    let err = refused(&inverted);
    assert!(err.contains("mcp.reconnect_max_backoff_ms"), "{err}");
    // Liveness is checked in the background now: a zero interval would ping without pause.
    let zero = format!("{EMBEDDED_DEFAULT}\n[mcp]\nliveness_interval_ms = 0\n");
    let err = refused(&zero);
    assert!(err.contains("mcp.liveness_interval_ms"), "{err}");
    let none = format!("{EMBEDDED_DEFAULT}\n[mcp]\nmax_sessions = 0\n");
    let err = refused(&none);
    assert!(err.contains("mcp.max_sessions"), "{err}");
    let tuned = format!(
        "{EMBEDDED_DEFAULT}\n[mcp]\ndiscovery_timeout_ms = 500\nliveness_interval_ms = 50\nmax_servers_per_user = 3\n"
    );
    let config = Config::parse(&tuned).unwrap();
    assert_eq!(config.mcp.max_servers_per_user, 3);
    assert!(config.validate().is_ok());
    assert_eq!(config.mcp.discovery_timeout_ms, 500);
    assert_eq!(
        config.mcp.probe_timeout_ms, 10_000,
        "unset keys keep their defaults"
    );
}

#[test]
fn turns_in_flight_must_be_positive() {
    let zero = format!("{EMBEDDED_DEFAULT}\n[turn]\nmax_in_flight = 0\n");
    let err = refused(&zero);
    assert!(err.contains("turn.max_in_flight"), "{err}");
    let two = Config::parse(&format!("{EMBEDDED_DEFAULT}\n[turn]\nmax_in_flight = 2\n")).unwrap();
    assert!(two.validate().is_ok());
    assert_eq!(two.turn.max_in_flight, 2);
    assert_eq!(
        Config::parse(EMBEDDED_DEFAULT).unwrap().turn.max_in_flight,
        promptgate_service::deployment::DEFAULT_TURNS_IN_FLIGHT
    );
}

#[test]
fn unknown_keys_are_rejected_with_their_name() {
    let err = Config::parse(&format!("{EMBEDDED_DEFAULT}\nlisten_port = 3\n"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("listen_port"), "{err}");
}

#[test]
fn a_missing_config_file_is_a_clear_error() {
    let err = Config::load(
        Some(Path::new("/nonexistent/promptgate.toml")),
        &FakeEnv(HashMap::new()),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("/nonexistent/promptgate.toml"), "{err}");
}

/// The commented `[integrations]` example of the embedded file, uncommented.
fn integrations_example() -> String {
    EMBEDDED_DEFAULT
        .lines()
        .skip_while(|l| !l.starts_with("# [integrations]"))
        .filter_map(|l| l.strip_prefix("# "))
        .filter(|l| l.starts_with('[') || l.contains(" = "))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_documented_integrations_example_parses_and_needs_its_secrets() {
    let config = Config::parse(&format!("{EMBEDDED_DEFAULT}\n{}", integrations_example())).unwrap();
    let section = config.integrations.clone().unwrap();
    assert_eq!(section.token_key_env, "PROMPTGATE_TOKEN_KEY");
    let google = section.google.unwrap();
    assert_eq!(google.client_secret_env, "GOOGLE_CLIENT_SECRET");
    assert_eq!(
        google.calendar_base_url.as_deref(),
        Some("https://www.googleapis.com/calendar/v3")
    );
    assert!(section.microsoft.is_some());

    let err = crate::runtime::integrations(&config, &FakeEnv(HashMap::new()))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("PROMPTGATE_TOKEN_KEY"), "{err}");
    let short_key = FakeEnv(HashMap::from([("PROMPTGATE_TOKEN_KEY", "c2hvcnQ=")]));
    let err = format!(
        "{:#}",
        crate::runtime::integrations(&config, &short_key).err().unwrap()
    );
    assert!(err.contains("32 bytes"), "{err}");
    let no_secret = FakeEnv(HashMap::from([(
        "PROMPTGATE_TOKEN_KEY",
        "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=",
    )]));
    let err = crate::runtime::integrations(&config, &no_secret)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("GOOGLE_CLIENT_SECRET"), "{err}");
}

#[test]
fn held_history_has_a_bound_and_zero_holds_nothing() {
    let too_much = format!("{EMBEDDED_DEFAULT}\n[context]\nheld_history_mib = 70000\n");
    let err = refused(&too_much);
    assert!(
        err.contains("context.held_history_mib must be at most 65536"),
        "{err}"
    );
    let off = Config::parse(&format!("{EMBEDDED_DEFAULT}\n[context]\nheld_history_mib = 0\n")).unwrap();
    off.validate().unwrap();
    assert_eq!(off.context.settings().held_history_bytes, 0);
    let default = Config::parse(EMBEDDED_DEFAULT).unwrap();
    assert_eq!(default.context.settings().held_history_bytes, 64 << 20);
}
