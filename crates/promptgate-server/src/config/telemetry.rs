//! The `[telemetry]` section: OpenTelemetry traces, exported over OTLP/HTTP (protobuf) or OTLP/gRPC.
//!
//! The standard OpenTelemetry variables work as they do everywhere else: setting
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) turns export on,
//! `OTEL_EXPORTER_OTLP_PROTOCOL` (or `..._TRACES_PROTOCOL`) picks the protocol,
//! `OTEL_SDK_DISABLED=true` turns export off whatever the file says, and the exporter and sampler
//! read the rest of `OTEL_EXPORTER_OTLP_*`, `OTEL_SERVICE_NAME` and `OTEL_TRACES_SAMPLER*` themselves.

use serde::Deserialize;

use super::Env;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetryConfig {
    /// Export traces. Off by default, and then no tracing layer is installed at all.
    pub enabled: bool,
    /// Where the collector listens: for OTLP/HTTP its base URL (`http://host:4318`; `/v1/traces`
    /// is added), for gRPC its address (`http://host:4317`). Unset: the `OTEL_EXPORTER_OTLP_*`
    /// variables, else the protocol's port on localhost.
    pub endpoint: Option<String>,
    /// How spans travel to the collector.
    pub protocol: OtlpProtocol,
    /// `service.name` of every span, unless `OTEL_SERVICE_NAME` says otherwise.
    pub service_name: String,
    /// Link the web app's answers to their trace: a URL with `{trace_id}` in it, such as
    /// `http://localhost:16686/trace/{trace_id}` for Jaeger.
    pub trace_ui_url: Option<String>,
    /// Record what was said on the spans: prompts, answers, tool arguments and results. Off by
    /// default: a trace backend is rarely a place for users' words.
    pub capture_content: bool,
}

/// The OTLP transports promptgate speaks, named as `OTEL_EXPORTER_OTLP_PROTOCOL` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum OtlpProtocol {
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
    #[serde(rename = "grpc")]
    Grpc,
}

impl OtlpProtocol {
    /// A variable's value; `None` for one we do not speak (`http/json`), which leaves the file's.
    fn parse(value: &str) -> Option<Self> {
        match value.trim() {
            "http/protobuf" => Some(Self::HttpProtobuf),
            "grpc" => Some(Self::Grpc),
            _ => None,
        }
    }
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            endpoint: None,
            protocol: OtlpProtocol::HttpProtobuf,
            service_name: "promptgate".to_owned(),
            trace_ui_url: None,
            capture_content: false,
        }
    }
}

impl TelemetryConfig {
    pub(super) fn apply_env(&mut self, env: &dyn Env) {
        let endpoint_set = [
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        ]
        .iter()
        .any(|name| env.var(name).is_some());
        if endpoint_set {
            // The variables win over the file, as every PROMPTGATE_* override does; the exporter
            // reads them itself.
            self.enabled = true;
            self.endpoint = None;
        }
        // The traces' own variable wins over the one for every signal, as the exporters read them.
        let protocol = [
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ]
        .iter()
        .find_map(|name| env.var(name));
        if let Some(protocol) = protocol.as_deref().and_then(OtlpProtocol::parse) {
            self.protocol = protocol;
        }
        if let Some(name) = env.var("OTEL_SERVICE_NAME") {
            self.service_name = name;
        }
        // The variable the OpenTelemetry GenAI instrumentations read for the same choice.
        if let Some(value) = env.var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT") {
            self.capture_content = value.trim().eq_ignore_ascii_case("true");
        }
        if env
            .var("OTEL_SDK_DISABLED")
            .is_some_and(|value| value.trim().eq_ignore_ascii_case("true"))
        {
            self.enabled = false;
        }
    }

    /// The trace UI link of a trace, when one is configured.
    pub fn trace_url(&self, trace_id: &str) -> Option<String> {
        self.trace_ui_url
            .as_deref()
            .map(|template| template.replace("{trace_id}", trace_id))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    struct Vars(HashMap<&'static str, &'static str>);

    impl Env for Vars {
        fn var(&self, name: &str) -> Option<String> {
            self.0.get(name).map(|v| (*v).to_owned())
        }
    }

    /// The section `file` as the environment `vars` leaves it.
    fn with_env(mut file: TelemetryConfig, vars: &[(&'static str, &'static str)]) -> TelemetryConfig {
        file.apply_env(&Vars(vars.iter().copied().collect()));
        file
    }

    fn after(vars: &[(&'static str, &'static str)], enabled: bool) -> bool {
        let file = TelemetryConfig {
            enabled,
            ..TelemetryConfig::default()
        };
        with_env(file, vars).enabled
    }

    #[test]
    fn the_genai_variable_decides_whether_content_is_recorded() {
        let capture = |vars: &[(&'static str, &'static str)], capture_content: bool| {
            let file = TelemetryConfig {
                capture_content,
                ..TelemetryConfig::default()
            };
            with_env(file, vars).capture_content
        };
        let name = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";
        assert!(!capture(&[], false));
        assert!(capture(&[], true));
        assert!(capture(&[(name, "True")], false));
        assert!(!capture(&[(name, "false")], true));
    }

    #[test]
    fn the_protocol_variables_pick_grpc_over_the_file() {
        let protocol = |vars: &[(&'static str, &'static str)], protocol: OtlpProtocol| {
            let file = TelemetryConfig {
                protocol,
                ..TelemetryConfig::default()
            };
            with_env(file, vars).protocol
        };
        use OtlpProtocol::{Grpc, HttpProtobuf};
        assert_eq!(protocol(&[], HttpProtobuf), HttpProtobuf);
        assert_eq!(protocol(&[], Grpc), Grpc);
        assert_eq!(
            protocol(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")], HttpProtobuf),
            Grpc
        );
        assert_eq!(
            protocol(
                &[
                    ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                    ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
                ],
                Grpc
            ),
            HttpProtobuf
        );
        // A transport we do not speak leaves the file's choice.
        assert_eq!(
            protocol(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")], Grpc),
            Grpc
        );
        let parsed: TelemetryConfig = toml::from_str("protocol = \"grpc\"").unwrap();
        assert_eq!(parsed.protocol, Grpc);
    }

    #[test]
    fn the_standard_variables_turn_export_on_and_off() {
        assert!(!after(&[], false));
        assert!(after(&[], true));
        assert!(after(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")], false));
        assert!(after(
            &[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c:4318/v1/traces")],
            false
        ));
        assert!(!after(&[("OTEL_SDK_DISABLED", "true")], true));
        assert!(!after(
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_SDK_DISABLED", "TRUE")
            ],
            false
        ));
    }
}
