//! Stability of the stable half and the harness signature built on it.

use crate::prompt_support::{Setup, july_10_noon};
use chrono::Duration;
use chrono_tz::Tz;
use promptgate_core::prompt::{HarnessKind, HarnessModel, create_parts, fnv1a_base36, harness_signature};

fn model<'a>() -> HarnessModel<'a> {
    HarnessModel {
        kind: HarnessKind::OpenAiCompat,
        provider_id: "local",
        model_id: "qwen3-32b",
        vendor: Some("alibaba"),
        base_url: "http://127.0.0.1:8080/v1",
        api_key: Some("sk-test-123"),
        reasoning: true,
        context_window: Some(32_768),
        supports_images: false,
        client_id: None,
    }
}

#[test]
fn stable_is_byte_identical_a_minute_later_and_in_another_zone() {
    let setup = Setup::everything();
    let a = create_parts(&setup.input(), july_10_noon(), Tz::UTC);
    let b = create_parts(
        &setup.input(),
        july_10_noon() + Duration::minutes(1),
        Tz::Asia__Tokyo,
    );
    assert_eq!(a.stable, b.stable);
    assert_ne!(a.volatile, b.volatile);
}

#[test]
fn signature_ignores_the_clock_but_follows_project_instructions() {
    let mut setup = Setup::everything();
    let now = create_parts(&setup.input(), july_10_noon(), Tz::UTC);
    let later = create_parts(&setup.input(), july_10_noon() + Duration::minutes(1), Tz::UTC);
    assert_eq!(
        harness_signature(&model(), "medium", &now.stable, 0),
        harness_signature(&model(), "medium", &later.stable, 0)
    );

    if let Some(project) = setup.project.as_mut() {
        project.instructions = Some("Plants must survive zone 5 winters.".to_owned());
    }
    let edited = create_parts(&setup.input(), july_10_noon(), Tz::UTC);
    assert_ne!(
        harness_signature(&model(), "medium", &now.stable, 0),
        harness_signature(&model(), "medium", &edited.stable, 0)
    );
}

#[test]
fn signature_follows_connection_thinking_level_and_regeneration() {
    let of_model = |changed: HarnessModel<'_>| harness_signature(&changed, "medium", "S", 0);
    let base = of_model(model());
    let variants = [
        of_model(HarnessModel {
            model_id: "qwen3-8b",
            ..model()
        }),
        of_model(HarnessModel {
            api_key: Some("sk-other"),
            ..model()
        }),
        of_model(HarnessModel {
            base_url: "http://127.0.0.1:9090/v1",
            ..model()
        }),
        of_model(HarnessModel {
            reasoning: false,
            ..model()
        }),
        of_model(HarnessModel {
            context_window: None,
            ..model()
        }),
        of_model(HarnessModel {
            supports_images: true,
            ..model()
        }),
        harness_signature(&model(), "high", "S", 0),
        harness_signature(&model(), "medium", "S2", 0),
        harness_signature(&model(), "medium", "S", 1),
    ];
    for variant in &variants {
        assert_ne!(variant, &base);
    }
}

#[test]
fn openai_compatible_signature_layout() {
    assert_eq!(
        harness_signature(&model(), "medium", "STABLE", 2),
        "openai-compat|local|qwen3-32b||http://127.0.0.1:8080/v1|1ez6ewj|true|32768|false||medium|STABLE|regenerate:2"
    );
}

#[test]
fn confidential_signature_includes_vendor_and_client_id() {
    let confidential = HarnessModel {
        kind: HarnessKind::Confidential,
        client_id: Some("a1b2c3d4"),
        context_window: None,
        api_key: None,
        ..model()
    };
    assert_eq!(
        harness_signature(&confidential, "off", "S", 0),
        "confidential|local|qwen3-32b|alibaba|http://127.0.0.1:8080/v1|ztntfp|true||false|a1b2c3d4|off|S|regenerate:0"
    );
}

#[test]
fn anthropic_signature_names_only_model_and_key_hash() {
    let anthropic = HarnessModel {
        kind: HarnessKind::Anthropic,
        model_id: "claude-sonnet-4-5",
        ..model()
    };
    assert_eq!(
        harness_signature(&anthropic, "low", "S", 0),
        "anthropic|claude-sonnet-4-5|1ez6ewj|low|S|regenerate:0"
    );
}

#[test]
fn the_plaintext_key_never_appears() {
    let secret = "sk-live-very-secret-key";
    let signature = harness_signature(
        &HarnessModel {
            api_key: Some(secret),
            ..model()
        },
        "medium",
        "S",
        0,
    );
    assert!(!signature.contains(secret));
    assert!(signature.contains(&fnv1a_base36(secret)));
}

#[test]
fn key_hash_matches_the_javascript_client() {
    // Values computed with the reference algorithm in Node (FNV-1a over UTF-16 code units, `>>> 0`, base 36).
    assert_eq!(fnv1a_base36(""), "ztntfp");
    assert_eq!(fnv1a_base36("a"), "1r9wi7g");
    assert_eq!(fnv1a_base36("foobar"), "1h5yxyg");
    assert_eq!(fnv1a_base36("é"), "tz86ys");
    assert_eq!(
        fnv1a_base36("😀"),
        "1kdnhdk",
        "astral characters hash as two UTF-16 units"
    );
}
