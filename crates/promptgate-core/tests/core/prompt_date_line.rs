//! The volatile date line: English ICU's rendering in the user's zone, to the minute.

use crate::prompt_support::{Setup, at, july_10_noon};
use chrono::DateTime;
use chrono_tz::Tz;
use promptgate_core::prompt::{create_parts, date_line};

/// Named zones and moments against what English ICU prints: UTC under both its names, a GMT offset
/// where the zone has no English abbreviation, daylight and standard time, half-hour offsets, Shanghai
/// not mistaken for US Central, minute precision, and 12 for midnight and noon.
#[test]
fn named_zones_print_as_english_icu_does() {
    let cases = [
        (july_10_noon(), Tz::UTC, "Friday, July 10, 2026 at 12:00 PM UTC"),
        (
            july_10_noon(),
            Tz::Etc__UTC,
            "Friday, July 10, 2026 at 12:00 PM UTC",
        ),
        (
            july_10_noon(),
            Tz::America__Sao_Paulo,
            "Friday, July 10, 2026 at 9:00 AM GMT-3",
        ),
        (
            july_10_noon(),
            Tz::America__New_York,
            "Friday, July 10, 2026 at 8:00 AM EDT",
        ),
        (
            at(2026, 1, 15, 12, 0, 0),
            Tz::America__New_York,
            "Thursday, January 15, 2026 at 7:00 AM EST",
        ),
        (
            july_10_noon(),
            Tz::Asia__Kolkata,
            "Friday, July 10, 2026 at 5:30 PM GMT+5:30",
        ),
        (
            july_10_noon(),
            Tz::Asia__Shanghai,
            "Friday, July 10, 2026 at 8:00 PM GMT+8",
        ),
        (
            at(2026, 7, 10, 12, 1, 0),
            Tz::UTC,
            "Friday, July 10, 2026 at 12:01 PM UTC",
        ),
        (
            at(2026, 7, 10, 0, 5, 0),
            Tz::UTC,
            "Friday, July 10, 2026 at 12:05 AM UTC",
        ),
        (
            at(2026, 7, 10, 23, 59, 0),
            Tz::UTC,
            "Friday, July 10, 2026 at 11:59 PM UTC",
        ),
    ];
    for (now, tz, expected) in cases {
        assert_eq!(
            date_line(now, tz),
            format!("Current date/time: {expected}"),
            "{tz} at {now}"
        );
    }
}

#[test]
fn precision_is_the_minute() {
    let line = |s| date_line(at(2026, 7, 10, 12, 0, s), Tz::UTC);
    assert_eq!(line(1), line(59));
    assert_eq!(line(0), line(59));
}

#[test]
fn the_volatile_part_is_the_date_line_in_the_given_zone() {
    let parts = create_parts(&Setup::bare().input(), july_10_noon(), Tz::Asia__Kolkata);
    assert_eq!(parts.volatile, date_line(july_10_noon(), Tz::Asia__Kolkata));
}

/// Every zone chrono-tz knows, in January and July, against what Node's ICU printed (see the file's
/// header). Catches zone-naming rules that only hold for the handful of zones above.
#[test]
fn every_zone_matches_english_icu() {
    let fixture = include_str!("prompt_fixtures/icu_date_lines.tsv");
    let mut checked = 0;
    let mut mismatches = Vec::new();
    for line in fixture.lines().filter(|l| !l.starts_with('#')) {
        let fields: Vec<&str> = line.split('\t').collect();
        let [zone, seconds, expected] = fields[..] else {
            panic!("malformed fixture line {line:?}")
        };
        let tz: Tz = zone.parse().unwrap();
        let now = DateTime::from_timestamp(seconds.parse().unwrap(), 0).unwrap();
        let got = date_line(now, tz);
        if got.strip_prefix("Current date/time: ") != Some(expected) {
            mismatches.push(format!("{zone}: got {got:?}, ICU {expected:?}"));
        }
        checked += 1;
    }
    assert!(checked > 1000, "fixture too small: {checked}");
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn the_settings_zone_falls_back_to_utc_when_unknown() {
    use promptgate_core::prompt::resolve_time_zone;
    assert_eq!(resolve_time_zone("America/Sao_Paulo"), Tz::America__Sao_Paulo);
    assert_eq!(resolve_time_zone(" Europe/Berlin "), Tz::Europe__Berlin);
    assert_eq!(resolve_time_zone("Mars/Olympus_Mons"), Tz::UTC);
    assert_eq!(resolve_time_zone(""), Tz::UTC);
}
