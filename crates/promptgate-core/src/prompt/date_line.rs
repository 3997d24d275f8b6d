//! The volatile half of the prompt: one line with the user's local date and time.
//!
//! The text matches what English ICU prints for `toLocaleString('en', {weekday: 'long', year: 'numeric',
//! month: 'long', day: 'numeric', hour: 'numeric', minute: '2-digit', timeZoneName: 'short'})`, so prompts
//! (and the harness cache keyed on them) agree with the reference client down to the byte.

use std::fmt::Write as _;

use chrono::{DateTime, Datelike, Offset, Timelike, Utc};
use chrono_tz::{OffsetName, Tz};

pub(crate) const DATE_LINE_PREFIX: &str = "Current date/time: ";

const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// The zone named in the user's settings; an unknown or empty name falls back to UTC, so a stale or
/// hand-edited setting degrades the date line instead of failing the send.
pub fn resolve_time_zone(name: &str) -> Tz {
    name.trim().parse().unwrap_or(Tz::UTC)
}

/// `Current date/time: Friday, July 10, 2026 at 12:00 PM UTC`, in `tz`, to the minute.
pub fn date_line(now: DateTime<Utc>, tz: Tz) -> String {
    let local = now.with_timezone(&tz);
    let (is_pm, hour) = local.hour12();
    let mut out = String::with_capacity(64);
    out.push_str(DATE_LINE_PREFIX);
    let _ = write!(
        out,
        "{}, {} {}, {} at {}:{:02} {} ",
        WEEKDAYS[local.weekday().num_days_from_monday() as usize],
        MONTHS[local.month0() as usize],
        local.day(),
        local.year(),
        hour,
        local.minute(),
        if is_pm { "PM" } else { "AM" },
    );
    let offset = local.offset();
    write_zone_name(
        &mut out,
        tz,
        offset.abbreviation(),
        offset.fix().local_minus_utc(),
    );
    out
}

/// English ICU's short zone name: `UTC` for the UTC aliases, a North American metazone abbreviation
/// where English has one, otherwise the GMT offset (`GMT`, `GMT-3`, `GMT+5:30`). tzdata abbreviations
/// are not used as such: they collide (`CST` is also China and Cuba) and ICU ignores most of them. The
/// tables below were checked against Node's ICU for every zone chrono-tz knows (see the date-line tests).
fn write_zone_name(out: &mut String, tz: Tz, abbreviation: Option<&str>, offset_seconds: i32) {
    let name = tz.name();
    if is_utc_alias(name) {
        out.push_str("UTC");
        return;
    }
    if let Some(short) = abbreviation.and_then(|abbr| north_american_short_name(name, abbr)) {
        out.push_str(short);
        return;
    }
    out.push_str("GMT");
    if offset_seconds == 0 {
        // Only zones of ICU's "GMT" metazone say plain `GMT` at offset zero; Western European and Azores
        // zones spell the offset out.
        if is_western_european(name) {
            out.push_str("+0");
        }
        return;
    }
    write_offset(out, offset_seconds);
}

fn is_utc_alias(name: &str) -> bool {
    matches!(
        name,
        "UTC"
            | "Etc/UTC"
            | "Etc/UCT"
            | "UCT"
            | "Etc/Universal"
            | "Universal"
            | "Etc/Zulu"
            | "Zulu"
            | "Etc/GMT"
            | "GMT"
            | "GMT+0"
            | "GMT-0"
            | "GMT0"
    )
}

fn is_western_european(name: &str) -> bool {
    matches!(
        name,
        "Europe/Lisbon"
            | "Portugal"
            | "WET"
            | "Atlantic/Canary"
            | "Atlantic/Faeroe"
            | "Atlantic/Faroe"
            | "Atlantic/Madeira"
            | "Atlantic/Azores"
    )
}

/// Zones English ICU names with US-style abbreviations (Eastern, Central, Mountain, Pacific, Alaska,
/// Hawaii, Atlantic metazones).
fn uses_north_american_names(zone: &str) -> bool {
    let in_region = ["America/", "US/", "Canada/", "Mexico/"]
        .iter()
        .any(|p| zone.starts_with(p))
        || matches!(
            zone,
            "Pacific/Honolulu"
                | "Pacific/Johnston"
                | "Atlantic/Bermuda"
                | "EST"
                | "MST"
                | "HST"
                | "EST5EDT"
                | "CST6CDT"
                | "MST7MDT"
                | "PST8PDT"
                | "Jamaica"
                | "Navajo"
        );
    // Cuba writes CST/CDT in tzdata; Yukon and north-western Mexico write MST. ICU has metazones of
    // their own for them without English short names.
    let own_metazone = matches!(
        zone,
        "America/Havana"
            | "America/Dawson"
            | "America/Whitehorse"
            | "Canada/Yukon"
            | "America/Hermosillo"
            | "America/Mazatlan"
            | "Mexico/BajaSur"
    );
    in_region && !own_metazone
}

fn north_american_short_name(zone: &str, abbreviation: &str) -> Option<&'static str> {
    if !uses_north_american_names(zone) {
        return None;
    }
    // The Aleutians share Hawaii's tzdata abbreviation but ICU names them after their own metazone.
    if matches!(zone, "America/Adak" | "America/Atka" | "US/Aleutian") {
        return match abbreviation {
            "HST" => Some("HAST"),
            "HDT" => Some("HADT"),
            _ => None,
        };
    }
    Some(match abbreviation {
        "EST" => "EST",
        "EDT" => "EDT",
        "CST" => "CST",
        "CDT" => "CDT",
        "MST" => "MST",
        "MDT" => "MDT",
        "PST" => "PST",
        "PDT" => "PDT",
        "AKST" => "AKST",
        "AKDT" => "AKDT",
        "HST" => "HST",
        "AST" => "AST",
        "ADT" => "ADT",
        _ => return None,
    })
}

fn write_offset(out: &mut String, offset_seconds: i32) {
    let sign = if offset_seconds < 0 { '-' } else { '+' };
    let total_minutes = offset_seconds.unsigned_abs() / 60;
    let (hours, minutes) = (total_minutes / 60, total_minutes % 60);
    let _ = if minutes == 0 {
        write!(out, "{sign}{hours}")
    } else {
        write!(out, "{sign}{hours}:{minutes:02}")
    };
}
