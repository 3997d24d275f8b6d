//! Upcoming Google Calendar events.

use chrono::{Duration, SecondsFormat, Utc};
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{CALENDAR, GoogleClient};
use crate::oauth::http::{JSON_RESPONSE_LIMIT, api_url, array_field, send_authorized, str_field};
use promptgate_core::tools::ToolError;

pub(crate) const DEFAULT_DAYS_AHEAD: u32 = 7;
const MAX_DAYS_AHEAD: u32 = 365;
const MAX_EVENTS: &str = "100";
const DESCRIPTION_CHAR_LIMIT: usize = 200;

impl GoogleClient {
    /// Events from now until `days_ahead` days ahead, as `{events, timezone}`. When the calendar
    /// cannot be read (403/404) the result says so in `error` instead of failing the call.
    pub async fn check_calendar(
        &self,
        days_ahead: Option<u32>,
        calendar_id: Option<&str>,
    ) -> Result<Value, ToolError> {
        let days = days_ahead.unwrap_or(DEFAULT_DAYS_AHEAD).clamp(1, MAX_DAYS_AHEAD);
        let calendar_id = calendar_id
            .map(str::trim)
            .filter(|id| !id.is_empty())
            .unwrap_or("primary");
        let now = Utc::now();
        let time_min = now.to_rfc3339_opts(SecondsFormat::Secs, true);
        let time_max = (now + Duration::days(i64::from(days))).to_rfc3339_opts(SecondsFormat::Secs, true);
        // The request path always names `primary`; the requested calendar travels only as a query
        // parameter. That is how the behaviour we mirror does it, so other calendars are not reached.
        let url = api_url(
            &self.calendar_base,
            &["calendars", "primary", "events"],
            &[
                ("calendarId", calendar_id),
                ("timeMin", &time_min),
                ("timeMax", &time_max),
                ("singleEvents", "true"),
                ("orderBy", "startTime"),
                ("maxResults", MAX_EVENTS),
            ],
        )?;
        let reply = send_authorized(&self.tokens, CALENDAR, JSON_RESPONSE_LIMIT, |token| {
            self.http.get(url.clone()).bearer_auth(token)
        })
        .await?;
        if reply.status == StatusCode::FORBIDDEN || reply.status == StatusCode::NOT_FOUND {
            return Ok(json!({
                "events": [],
                "timezone": "UTC",
                "error": "Calendar access is not available for this account: the calendar was not found or \
                          the granted permissions do not include it. Reconnecting Google may help.",
            }));
        }
        let listing = reply.json(CALENDAR)?;
        let events: Vec<Value> = array_field(&listing, "items").iter().map(event_summary).collect();
        let timezone = listing.get("timeZone").and_then(Value::as_str).unwrap_or("UTC");
        Ok(json!({ "events": events, "timezone": timezone }))
    }
}

fn event_summary(event: &Value) -> Value {
    let when = |field: &str| -> Value {
        let moment = event.get(field);
        moment
            .and_then(|m| m.get("dateTime").or_else(|| m.get("date")))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let all_day = event.get("start").and_then(|s| s.get("date")).is_some();
    let summary = Some(str_field(event, "summary"))
        .filter(|s| !s.trim().is_empty())
        .unwrap_or("No title");
    let mut out = json!({
        "id": str_field(event, "id"),
        "summary": summary,
        "start": when("start"),
        "end": when("end"),
        "all_day": all_day,
        "attendees_count": event.get("attendees").and_then(Value::as_array).map_or(0, Vec::len),
        "status": str_field(event, "status"),
    });
    if let Some(location) = event
        .get("location")
        .and_then(Value::as_str)
        .filter(|l| !l.is_empty())
    {
        out["location"] = json!(location);
    }
    if let Some(description) = event
        .get("description")
        .and_then(Value::as_str)
        .filter(|d| !d.is_empty())
    {
        let mut clipped: String = description.chars().take(DESCRIPTION_CHAR_LIMIT).collect();
        if clipped.len() < description.len() {
            clipped.push_str("...");
        }
        out["description"] = json!(clipped);
    }
    if let Some(link) = meeting_link(event) {
        out["meeting_link"] = json!(link);
    }
    out
}

/// The video link: the classic Meet field, else the first video entry point of the conference.
fn meeting_link(event: &Value) -> Option<&str> {
    event.get("hangoutLink").and_then(Value::as_str).or_else(|| {
        event
            .get("conferenceData")?
            .get("entryPoints")?
            .as_array()?
            .iter()
            .find(|e| e.get("entryPointType").and_then(Value::as_str) == Some("video"))?
            .get("uri")?
            .as_str()
    })
}
