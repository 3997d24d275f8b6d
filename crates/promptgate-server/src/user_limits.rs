//! Per-user limits in `tokens` mode: turns running at once and sends started per minute, so one token
//! cannot take the whole server's turn capacity. Past either, a send gets 429 with `Retry-After`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{FromRequestParts, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::auth::CurrentUser;
use crate::config::Limits;
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;

/// Past this many remembered users, entries with nothing running and a full allowance are dropped.
const PRUNE_ABOVE: usize = 10_000;

/// The counters of every user who sent recently.
pub struct UserLimits {
    turns: usize,
    per_minute: f64,
    users: Mutex<HashMap<String, Usage>>,
}

struct Usage {
    running: usize,
    /// Sends still allowed now; refills at `per_minute` a minute up to `per_minute`.
    allowance: f64,
    refilled_at: Instant,
}

/// Why a send was refused, and when trying again makes sense.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    TooManyRunning,
    TooManySends { retry_after: Duration },
}

impl UserLimits {
    pub fn new(limits: &Limits) -> Arc<Self> {
        Arc::new(Self {
            turns: limits.user_turns_in_flight.max(1),
            per_minute: f64::from(limits.user_sends_per_minute.max(1)),
            users: Mutex::new(HashMap::new()),
        })
    }

    /// Counts a send for `user`; the returned permit holds one of the user's turn slots until dropped.
    pub fn admit(self: &Arc<Self>, user: &str, now: Instant) -> Result<TurnPermit, Refusal> {
        let mut users = self
            .users
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if users.len() > PRUNE_ABOVE {
            let full = self.per_minute;
            users.retain(|_, u| u.running > 0 || u.refilled(now, full) < full);
        }
        let usage = users.entry(user.to_owned()).or_insert(Usage {
            running: 0,
            allowance: self.per_minute,
            refilled_at: now,
        });
        usage.allowance = usage.refilled(now, self.per_minute);
        usage.refilled_at = now;
        if usage.running >= self.turns {
            return Err(Refusal::TooManyRunning);
        }
        if usage.allowance < 1.0 {
            let missing = 1.0 - usage.allowance;
            let retry_after = Duration::from_secs_f64(missing * 60.0 / self.per_minute);
            return Err(Refusal::TooManySends { retry_after });
        }
        usage.allowance -= 1.0;
        usage.running += 1;
        Ok(TurnPermit {
            limits: Arc::clone(self),
            user: user.to_owned(),
        })
    }

    fn release(&self, user: &str) {
        let mut users = self
            .users
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(usage) = users.get_mut(user) {
            usage.running = usage.running.saturating_sub(1);
        }
    }
}

impl Usage {
    fn refilled(&self, now: Instant, per_minute: f64) -> f64 {
        let minutes = now.saturating_duration_since(self.refilled_at).as_secs_f64() / 60.0;
        (self.allowance + minutes * per_minute).min(per_minute)
    }
}

/// One of a user's turn slots, given back when dropped.
pub struct TurnPermit {
    limits: Arc<UserLimits>,
    user: String,
}

impl Drop for TurnPermit {
    fn drop(&mut self) {
        self.limits.release(&self.user);
    }
}

/// The endpoints that start a turn.
pub(crate) fn is_send(method: &Method, path: &str) -> bool {
    if *method != Method::POST {
        return false;
    }
    path == "/v1/chat/completions"
        || path == "/v1/messages"
        || path == "/v1/responses"
        || stores_answer(method, path)
}

/// Whether a request is a send whose answer is stored in a thread (the facades keep none).
pub(crate) fn stores_answer(method: &Method, path: &str) -> bool {
    if *method != Method::POST {
        return false;
    }
    path == "/v1/chat"
        || path
            .strip_prefix("/v1/threads/")
            .and_then(|rest| rest.strip_suffix("/messages"))
            .is_some_and(|id| !id.is_empty() && !id.contains('/'))
}

/// Middleware for the streaming routes: authenticates a send once (the handler reuses the user),
/// applies the user's limits, and keeps the turn slot until the answer has been written.
pub async fn limit_sends(
    State((state, limits)): State<(AppState, Arc<UserLimits>)>,
    req: Request,
    next: Next,
) -> Response {
    if !is_send(req.method(), req.uri().path()) {
        return next.run(req).await;
    }
    let (mut parts, body) = req.into_parts();
    let user = match CurrentUser::from_request_parts(&mut parts, &state).await {
        Ok(user) => user,
        Err(rejection) => return rejection.into_response(),
    };
    let permit = match limits.admit(&user.id, Instant::now()) {
        Ok(permit) => permit,
        Err(refusal) => return refused(&refusal),
    };
    parts.extensions.insert(user);
    let res = next.run(Request::from_parts(parts, body)).await;
    res.map(|body| crate::listen::hold_until_body_ends(body, permit))
}

fn refused(refusal: &Refusal) -> Response {
    let (retry_after, message) = match refusal {
        Refusal::TooManyRunning => (
            Duration::from_secs(1),
            "you have as many turns running as this server allows per user (limits.user_turns_in_flight); \
             wait for one to finish"
                .to_owned(),
        ),
        Refusal::TooManySends { retry_after } => (
            *retry_after,
            "you have sent as many messages this minute as this server allows (limits.user_sends_per_minute)"
                .to_owned(),
        ),
    };
    ApiError::new(ErrorCode::RateLimited, message)
        .with_retry_after_wait(retry_after)
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(turns: usize, per_minute: u32) -> Arc<UserLimits> {
        UserLimits::new(&Limits {
            user_turns_in_flight: turns,
            user_sends_per_minute: per_minute,
            ..Limits::default()
        })
    }

    #[test]
    fn running_turns_are_capped_per_user_and_freed_on_drop() {
        let l = limits(2, 100);
        let now = Instant::now();
        let a = l.admit("alice", now).unwrap();
        let _b = l.admit("alice", now).unwrap();
        assert_eq!(l.admit("alice", now).err(), Some(Refusal::TooManyRunning));
        assert!(l.admit("bob", now).is_ok(), "another user is not affected");
        drop(a);
        assert!(l.admit("alice", now).is_ok());
    }

    #[test]
    fn sends_per_minute_refill_over_time() {
        let l = limits(100, 2);
        let now = Instant::now();
        drop(l.admit("alice", now).unwrap());
        drop(l.admit("alice", now).unwrap());
        let Err(Refusal::TooManySends { retry_after }) = l.admit("alice", now) else {
            panic!("a third send in the same instant must be refused");
        };
        assert_eq!(retry_after, Duration::from_secs(30));
        assert!(l.admit("alice", now + Duration::from_secs(31)).is_ok());
    }

    #[test]
    fn only_turn_starting_requests_count() {
        assert!(is_send(&Method::POST, "/v1/chat"));
        assert!(is_send(&Method::POST, "/v1/chat/completions"));
        assert!(is_send(&Method::POST, "/v1/responses"));
        assert!(is_send(&Method::POST, "/v1/messages"));
        assert!(!is_send(&Method::POST, "/v1/messages/count_tokens"));
        assert!(!is_send(&Method::DELETE, "/v1/responses/resp_1"));
        assert!(is_send(&Method::POST, "/v1/threads/t1/messages"));
        assert!(stores_answer(&Method::POST, "/v1/threads/t1/messages"));
        assert!(stores_answer(&Method::POST, "/v1/chat"));
        assert!(!stores_answer(&Method::POST, "/v1/chat/completions"));
        assert!(!stores_answer(&Method::POST, "/v1/responses"));
        assert!(!is_send(&Method::GET, "/v1/threads/t1/messages"));
        assert!(!is_send(&Method::POST, "/v1/chat/t1/stop"));
        assert!(!is_send(&Method::POST, "/v1/threads"));
    }
}
