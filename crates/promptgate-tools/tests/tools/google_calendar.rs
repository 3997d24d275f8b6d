//! Google Calendar through a loopback server speaking the Calendar v3 JSON.
// Helpers outside #[test] functions panic on purpose: a broken fixture should fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, Duration};
use promptgate_tools::google::GoogleClient;
use serde_json::json;
use support::*;

async fn calendar_client(router: Router) -> (GoogleClient, FakeServer) {
    let server = serve(router).await;
    (google_client(&server, "t").await, server)
}

fn events() -> Router {
    Router::new().route(
        "/calendar/v3/calendars/primary/events",
        get(|| async {
            Json(json!({
                "kind": "calendar#events", "timeZone": "Europe/Berlin",
                "items": [
                    {"id": "e1", "status": "confirmed", "summary": "Standup",
                     "start": {"dateTime": "2026-12-03T09:00:00+01:00"}, "end": {"dateTime": "2026-12-03T09:15:00+01:00"},
                     "location": "Room 4", "hangoutLink": "https://meet.google.com/abc-defg-hij",
                     "attendees": [{"email": "a@example.com"}, {"email": "b@example.com"}, {"email": "c@example.com"}]},
                    {"id": "e2", "status": "tentative",
                     "start": {"date": "2026-12-05"}, "end": {"date": "2026-12-06"},
                     "description": "x".repeat(300),
                     "conferenceData": {"entryPoints": [
                         {"entryPointType": "phone", "uri": "tel:+1-555"},
                         {"entryPointType": "video", "uri": "https://zoom.example.com/j/1"}]}}
                ]
            }))
        }),
    )
}

#[tokio::test]
async fn upcoming_events_are_summarised_with_the_calendars_time_zone() {
    let (client, server) = calendar_client(events()).await;
    let result = client.check_calendar(None, None).await.unwrap();
    assert_eq!(result["timezone"], "Europe/Berlin");
    let events = result["events"].as_array().unwrap();
    assert_eq!(
        events[0],
        json!({
            "id": "e1", "summary": "Standup", "start": "2026-12-03T09:00:00+01:00", "end": "2026-12-03T09:15:00+01:00",
            "all_day": false, "location": "Room 4", "attendees_count": 3,
            "meeting_link": "https://meet.google.com/abc-defg-hij", "status": "confirmed"
        })
    );
    assert_eq!(events[1]["summary"], "No title");
    assert_eq!(events[1]["all_day"], true);
    assert_eq!(events[1]["start"], "2026-12-05");
    assert_eq!(events[1]["attendees_count"], 0);
    assert_eq!(events[1]["meeting_link"], "https://zoom.example.com/j/1");
    assert_eq!(
        events[1]["description"].as_str().unwrap(),
        format!("{}...", "x".repeat(200))
    );

    let request = &server.log.to_path("/calendar/v3/calendars/primary/events")[0];
    assert_eq!(request.query_value("calendarId"), Some("primary"));
    assert_eq!(request.query_value("singleEvents"), Some("true"));
    assert_eq!(request.query_value("orderBy"), Some("startTime"));
    let min = DateTime::parse_from_rfc3339(request.query_value("timeMin").unwrap()).unwrap();
    let max = DateTime::parse_from_rfc3339(request.query_value("timeMax").unwrap()).unwrap();
    assert_eq!(max - min, Duration::days(7), "a week ahead by default");
}

#[tokio::test]
async fn another_calendar_id_travels_as_a_query_parameter_on_the_primary_path() {
    let (client, server) = calendar_client(events()).await;
    client
        .check_calendar(Some(3), Some("team@group.calendar.google.com"))
        .await
        .unwrap();
    let requests = server.log.all();
    assert_eq!(requests[0].path, "/calendar/v3/calendars/primary/events");
    assert_eq!(
        requests[0].query_value("calendarId"),
        Some("team@group.calendar.google.com")
    );
    let min = DateTime::parse_from_rfc3339(requests[0].query_value("timeMin").unwrap()).unwrap();
    let max = DateTime::parse_from_rfc3339(requests[0].query_value("timeMax").unwrap()).unwrap();
    assert_eq!(max - min, Duration::days(3));
}

#[tokio::test]
async fn a_calendar_without_access_gives_an_empty_result_with_an_explanation() {
    for status in [StatusCode::FORBIDDEN, StatusCode::NOT_FOUND] {
        let router = Router::new().route(
            "/calendar/v3/calendars/primary/events",
            get(move || async move {
                (
                    status,
                    Json(json!({"error": {"code": status.as_u16(), "message": "Insufficient Permission"}})),
                )
            }),
        );
        let (client, _server) = calendar_client(router).await;
        let result = client.check_calendar(None, None).await.unwrap();
        assert_eq!(result["events"], json!([]));
        assert_eq!(result["timezone"], "UTC");
        assert!(
            result["error"]
                .as_str()
                .unwrap()
                .starts_with("Calendar access is not available")
        );
    }
}

#[tokio::test]
async fn other_calendar_errors_fail_the_call() {
    let router = Router::new().route(
        "/calendar/v3/calendars/primary/events",
        get(|| async {
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                Json(json!({"error": {"code": 500, "message": "Backend Error"}})),
            )
                .into_response()
        }),
    );
    let (client, _server) = calendar_client(router).await;
    let err = client.check_calendar(None, None).await.unwrap_err().to_string();
    assert_eq!(
        err,
        "Google Calendar had an internal problem (HTTP 500): Backend Error"
    );
}
