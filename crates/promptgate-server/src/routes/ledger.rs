//! `GET /v1/usage`: the usage ledger summed over a time range, by user, key, model or day (and
//! within those by a second of them, for charts over time), as JSON or CSV. A user sees their own requests; an admin ([`may_see_everyone`]) everyone's. (What a user
//! keeps in the database is `GET /v1/usage/storage`, in `usage`.)

use aide::OperationOutput;
use aide::axum::ApiRouter;
use aide::axum::routing::get_with;
use aide::generate::GenContext;
use aide::openapi::{MediaType, Operation, Response as ApiResponse};
use axum::Json;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, NaiveDate, Utc};
use promptgate_service::records::{UsageGroup, UsageGrouping, UsageQuery};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::auth::{Caller, CurrentUser};
use crate::config::AuthMode;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::extract::ApiQuery;
use crate::state::{AppState, LOCAL_USER_ID};

/// The range a report covers when the query names no start: the thirty days before its end.
const DEFAULT_DAYS: i64 = 30;
const DAY_MS: i64 = 86_400_000;

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new().api_route(
        "/v1/usage",
        get_with(usage, |op| {
            op.summary("Tokens and cost, by user, key, model, day or status")
                .description(
                    "Sums the usage ledger: one record per turn of a thread and per facade request \
                 (chat completions, Responses, Messages), written when its answer is stored. A user \
                 sees their own requests; an admin everyone's. `cost` is in the currency of the \
                 server's price table and leaves out requests of models without a price \
                 (`unpriced_requests`); it is `null` when none had one. `format=csv` answers the same \
                 rows as CSV. `then_by` groups each group again (`group_by=day&then_by=user`: each \
                 day's usage by user), named in `subgroup`.",
                )
        }),
    )
}

/// Whether `user` may read everyone's usage rather than their own: an admin (the role read now,
/// as every admin route reads it), or the one user of a single-user deployment, its operator.
async fn may_see_everyone(state: &AppState, user: &CurrentUser) -> ApiResult<bool> {
    if state.config.auth.mode == AuthMode::SingleUser && user.id == LOCAL_USER_ID {
        return Ok(true);
    }
    Ok(state.service.is_admin(&user.id).await?)
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    User,
    Key,
    #[default]
    Model,
    Day,
    /// How the requests ended: `complete`, `stopped`, `error`, `interrupted` (the process died
    /// mid-turn), `unfinished` (the turn runs still).
    Status,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    #[default]
    Json,
    Csv,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct UsageParams {
    /// Start of the range, included: an RFC 3339 time or a UTC date (`2026-12-01`). Default: 30
    /// days before `to`.
    pub from: Option<String>,
    /// End of the range, excluded: an RFC 3339 time or a UTC date (the start of that day).
    /// Default: now, with every request recorded so far included.
    pub to: Option<String>,
    /// What the rows add up by (default `model`); `day` is the UTC day.
    pub group_by: GroupBy,
    /// A second grouping within each group (`user`, `key`, `model` or `day`), named in each row's
    /// `subgroup`: `group_by=day&then_by=model` is each day's usage by model.
    pub then_by: Option<GroupBy>,
    /// `json` (default) or `csv`.
    pub format: Format,
}

/// The ledger summed over a range.
#[derive(Debug, Serialize, JsonSchema)]
pub struct UsageReport {
    /// Always `usage`.
    pub object: &'static str,
    /// The range, RFC 3339: `from` included, `to` excluded.
    pub from: String,
    pub to: String,
    pub group_by: &'static str,
    /// The second grouping, when the query asked for one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub then_by: Option<&'static str>,
    /// `own` (your requests) or `all` (everyone's).
    pub scope: &'static str,
    pub data: Vec<UsageRow>,
}

/// One group's sums.
#[derive(Debug, Serialize, JsonSchema)]
pub struct UsageRow {
    /// The user id, key id (`null` for requests without a key), model id or day (`2026-12-05`).
    pub group: Option<String>,
    /// The group within `group` by `then_by`, named the same way; only with `then_by`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subgroup: Option<Option<String>>,
    pub requests: u64,
    /// Prompt tokens, cached or not.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's cache (part of `input_tokens`).
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's cache (part of `input_tokens`).
    pub cache_write_tokens: u64,
    pub reasoning_tokens: u64,
    /// Calls of the server's tools.
    pub tool_calls: u64,
    /// Of `tool_calls`, web searches and fetches.
    pub web_calls: u64,
    pub duration_ms: u64,
    /// The priced requests' cost; `null` when none had a price.
    pub cost: Option<f64>,
    /// Requests whose model has no price, left out of `cost`.
    pub unpriced_requests: u64,
}

/// The CSV columns, in order; the same names as the JSON rows' fields.
const CSV_HEADER: &str = "group,requests,input_tokens,output_tokens,cache_read_tokens,cache_write_tokens,\
reasoning_tokens,tool_calls,web_calls,duration_ms,cost,unpriced_requests";

async fn usage(
    Caller { state, user }: Caller,
    ApiQuery(params): ApiQuery<UsageParams>,
) -> ApiResult<UsageAnswer> {
    let to = match params.to.as_deref() {
        Some(text) => parse_time("to", text)?,
        None => Utc::now().timestamp_millis(),
    };
    // Without an end the range is open: the store stamps rows from a clock that never repeats a
    // millisecond, so under a burst its stamps run a little ahead of the wall clock, and a row
    // recorded just before this request would fall past `now`.
    let to_ms = if params.to.is_some() { to } else { i64::MAX };
    let from = match params.from.as_deref() {
        Some(text) => parse_time("from", text)?,
        None => to.saturating_sub(DEFAULT_DAYS * DAY_MS),
    };
    if from > to {
        return Err(ApiError::new(ErrorCode::InvalidQuery, "`from` is after `to`"));
    }
    let everyone = may_see_everyone(&state, &user).await?;
    if params.then_by == Some(params.group_by) {
        return Err(ApiError::new(
            ErrorCode::InvalidQuery,
            "`then_by` must differ from `group_by`",
        ));
    }
    let (group_by, first) = grouping(params.group_by);
    let then_by = params.then_by.map(grouping);
    let query = UsageQuery {
        user: (!everyone).then(|| user.id.clone()),
        from_ms: from,
        to_ms,
        group_by: first,
        then_by: then_by.map(|(_, g)| g),
    };
    let groups = state.service.usage_report(&query).await?;
    let data = groups.into_iter().map(|g| row(g, first, query.then_by)).collect();
    let report = UsageReport {
        object: "usage",
        from: rfc3339(from),
        to: rfc3339(to),
        group_by,
        then_by: then_by.map(|(name, _)| name),
        scope: if everyone { "all" } else { "own" },
        data,
    };
    Ok(match params.format {
        Format::Json => UsageAnswer::Json(Json(report)),
        Format::Csv => UsageAnswer::Csv(csv(&report.data, report.then_by.is_some())),
    })
}

/// The name a report gives a grouping, and the store's grouping.
fn grouping(by: GroupBy) -> (&'static str, UsageGrouping) {
    match by {
        GroupBy::User => ("user", UsageGrouping::User),
        GroupBy::Key => ("key", UsageGrouping::Key),
        GroupBy::Model => ("model", UsageGrouping::Model),
        GroupBy::Day => ("day", UsageGrouping::Day),
        GroupBy::Status => ("status", UsageGrouping::Status),
    }
}

/// Epoch milliseconds of an RFC 3339 time or a UTC date.
fn parse_time(name: &str, text: &str) -> ApiResult<i64> {
    if let Ok(time) = DateTime::parse_from_rfc3339(text) {
        return Ok(time.timestamp_millis());
    }
    if let Some(midnight) = NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|date| date.and_hms_opt(0, 0, 0))
    {
        return Ok(midnight.and_utc().timestamp_millis());
    }
    Err(ApiError::new(
        ErrorCode::InvalidQuery,
        format!(
            "`{name}` must be an RFC 3339 time or a date (YYYY-MM-DD), not {}",
            crate::error::preview(text)
        ),
    ))
}

fn rfc3339(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .map(|time| time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

/// A group's name as the report shows it: a day as its date, no key as `null`.
fn group_name(group: String, grouping: UsageGrouping) -> Option<String> {
    match grouping {
        UsageGrouping::Day => group
            .parse::<i64>()
            .ok()
            .and_then(|day| DateTime::<Utc>::from_timestamp_millis(day.saturating_mul(DAY_MS)))
            .map(|time| time.format("%Y-%m-%d").to_string()),
        _ => Some(group).filter(|name| !name.is_empty()),
    }
}

fn row(group: UsageGroup, grouping: UsageGrouping, then_by: Option<UsageGrouping>) -> UsageRow {
    let subgroup = then_by.map(|then_by| group_name(group.subgroup.unwrap_or_default(), then_by));
    UsageRow {
        group: group_name(group.group, grouping),
        subgroup,
        requests: group.requests,
        input_tokens: group.tokens.input,
        output_tokens: group.tokens.output,
        cache_read_tokens: group.tokens.cache_read,
        cache_write_tokens: group.tokens.cache_write,
        reasoning_tokens: group.tokens.reasoning,
        tool_calls: group.tool_calls,
        web_calls: group.web_calls,
        duration_ms: group.duration_ms,
        cost: group.cost,
        unpriced_requests: group.unpriced_requests,
    }
}

/// The rows as CSV; with a second grouping, its `subgroup` column follows `group`.
fn csv(rows: &[UsageRow], then_by: bool) -> String {
    let mut out = match CSV_HEADER.split_once(',') {
        Some((group, rest)) if then_by => format!("{group},subgroup,{rest}"),
        _ => CSV_HEADER.to_owned(),
    };
    out.push('\n');
    for r in rows {
        let cost = r.cost.map(|c| c.to_string()).unwrap_or_default();
        let mut fields = vec![csv_field(r.group.as_deref().unwrap_or(""))];
        if then_by {
            fields.push(csv_field(r.subgroup.clone().flatten().as_deref().unwrap_or("")));
        }
        fields.extend([
            r.requests.to_string(),
            r.input_tokens.to_string(),
            r.output_tokens.to_string(),
            r.cache_read_tokens.to_string(),
            r.cache_write_tokens.to_string(),
            r.reasoning_tokens.to_string(),
            r.tool_calls.to_string(),
            r.web_calls.to_string(),
            r.duration_ms.to_string(),
            cost,
            r.unpriced_requests.to_string(),
        ]);
        out.push_str(&fields.join(","));
        out.push('\n');
    }
    out
}

/// A text field as CSV holds it: quoted when it has a comma, quote or line break, and with a
/// leading quote mark when a spreadsheet would read it as a formula.
fn csv_field(text: &str) -> String {
    let guarded = if text.starts_with(['=', '+', '-', '@']) {
        format!("'{text}")
    } else {
        text.to_owned()
    };
    if guarded.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", guarded.replace('"', "\"\""))
    } else {
        guarded
    }
}

/// The report as its `format` asks.
pub enum UsageAnswer {
    Json(Json<UsageReport>),
    Csv(String),
}

impl IntoResponse for UsageAnswer {
    fn into_response(self) -> Response {
        match self {
            Self::Json(json) => json.into_response(),
            Self::Csv(text) => {
                let mut res = text.into_response();
                res.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/csv; charset=utf-8"),
                );
                res
            }
        }
    }
}

/// How the report is published: JSON, or CSV on request.
fn documented_usage(ctx: &mut GenContext, op: &mut Operation) -> Option<ApiResponse> {
    let mut res = Json::<UsageReport>::operation_response(ctx, op)?;
    res.description = "The report; as CSV (the rows' fields as columns) with `format=csv`".into();
    res.content.insert("text/csv".into(), MediaType::default());
    Some(res)
}

crate::api_doc::ok_output!(UsageAnswer, UsageReport, documented_usage);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_and_formulas_defused() {
        assert_eq!(csv_field("gpt"), "gpt");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("=1+1"), "'=1+1");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn times_are_rfc_3339_or_utc_dates() {
        assert_eq!(parse_time("from", "1970-01-02").ok(), Some(DAY_MS));
        assert_eq!(parse_time("from", "1970-01-01T00:00:01Z").ok(), Some(1000));
        assert!(parse_time("from", "yesterday").is_err());
    }
}
