//! The `# Context` lines: who the user is, where, in which units, and which integrations are usable.

use std::fmt::Write as _;

use super::sanitize::{SHORT_FIELD_MAX_CHARS, single_line};
use crate::settings::{IntegrationStatus, Location, UserSettings};

/// Said when no location is known, so the model asks instead of guessing a city.
const UNKNOWN_LOCATION: &str = "Unknown (ask before using location-based features)";

/// Appends the context lines (no trailing newline) to `out`.
pub(crate) fn write_context_lines(
    out: &mut String,
    settings: &UserSettings,
    integrations: &IntegrationStatus,
) {
    let name = single_line(&settings.preferred_name, SHORT_FIELD_MAX_CHARS);
    if !name.is_empty() {
        out.push_str("User name: ");
        out.push_str(&name);
        out.push('\n');
    }
    write_location_line(out, &settings.location);
    let l = &settings.localization;
    out.push_str("User preferences: ");
    out.push_str(l.distance_unit.as_str());
    out.push_str(", ");
    out.push_str(l.temperature_unit.as_str());
    out.push_str(", ");
    out.push_str(l.time_format.as_str());
    out.push_str(", ");
    let currency = single_line(&l.currency, 16);
    out.push_str(if currency.is_empty() { "USD" } else { &currency });
    out.push_str("\nIntegration status: ");
    out.push_str(&integrations.render());
}

fn write_location_line(out: &mut String, location: &Location) {
    out.push_str("User location: ");
    let name = location
        .name
        .as_deref()
        .map(|n| single_line(n, SHORT_FIELD_MAX_CHARS));
    match name {
        Some(name) if !name.is_empty() => {
            out.push_str(&name);
            // A zero coordinate is what an unset form field stores, so both must be real, non-zero values.
            if let (Some(lat), Some(lng)) = (usable_coordinate(location.lat), usable_coordinate(location.lng))
            {
                out.push_str(" (");
                write_js_number(out, lat);
                out.push_str(", ");
                write_js_number(out, lng);
                out.push(')');
            }
        }
        _ => out.push_str(UNKNOWN_LOCATION),
    }
    out.push('\n');
}

fn usable_coordinate(value: Option<f64>) -> Option<f64> {
    value.filter(|v| v.is_finite() && *v != 0.0)
}

/// Prints a finite number the way JavaScript's `String(number)` does: shortest round-trip digits, no
/// trailing `.0`, exponent form below 1e-6 and from 1e21 on.
pub(crate) fn write_js_number(out: &mut String, value: f64) {
    let magnitude = value.abs();
    if magnitude != 0.0 && !(1e-6..1e21).contains(&magnitude) {
        let exp = format!("{value:e}");
        match exp.split_once('e') {
            Some((mantissa, power)) if !power.starts_with('-') => {
                let _ = write!(out, "{mantissa}e+{power}");
            }
            _ => out.push_str(&exp),
        }
    } else if value == 0.0 {
        out.push('0');
    } else {
        let _ = write!(out, "{value}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn js(value: f64) -> String {
        let mut s = String::new();
        write_js_number(&mut s, value);
        s
    }

    #[test]
    fn numbers_print_like_javascript() {
        assert_eq!(js(-74.0), "-74");
        assert_eq!(js(40.7), "40.7");
        assert_eq!(js(-23.5505), "-23.5505");
        assert_eq!(js(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(js(1.5e-7), "1.5e-7");
        assert_eq!(js(2e21), "2e+21");
        assert_eq!(js(-0.0), "0");
    }
}
