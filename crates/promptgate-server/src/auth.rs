//! Resolves the user a request acts for.

use aide::OperationInput;
use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

use crate::config::AuthMode;
use crate::error::ApiError;
use crate::state::{AppState, LOCAL_USER_ID};

/// The authenticated user. Every handler that touches user data takes this, and passes its id to
/// every use case it calls, so no request can reach another user's rows.
#[derive(Debug, Clone)]
pub struct CurrentUser {
    pub id: String,
    /// The key the request came with; `None` in single-user mode.
    pub key_id: Option<String>,
}

impl FromRequestParts<AppState> for CurrentUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        // A middleware that had to know the user first (per-user limits) left it here.
        if let Some(user) = parts.extensions.get::<CurrentUser>() {
            return Ok(user.clone());
        }
        if state.config.auth.mode == AuthMode::SingleUser {
            return Ok(Self {
                id: LOCAL_USER_ID.to_owned(),
                key_id: None,
            });
        }
        let header = parts
            .headers
            .get(AUTHORIZATION)
            .ok_or_else(|| ApiError::unauthorized("send `Authorization: Bearer <token>`"))?;
        let token = header
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| ApiError::unauthorized("the Authorization header must be `Bearer <token>`"))?;
        match state.service.caller_by_token(token).await? {
            Some(caller) => Ok(Self {
                id: caller.user.id,
                key_id: Some(caller.key_id),
            }),
            None => Err(ApiError::unauthorized(
                "the token is unknown or revoked, has expired, or belongs to a disabled user",
            )),
        }
    }
}

impl OperationInput for CurrentUser {}

/// An authenticated user who is an admin now: the role is read from the store on every request,
/// so a role taken away on one instance holds on every other at once.
#[derive(Debug, Clone)]
pub struct AdminUser {
    pub id: String,
}

impl FromRequestParts<AppState> for AdminUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let user = CurrentUser::from_request_parts(parts, state).await?;
        if state.service.is_admin(&user.id).await? {
            Ok(Self { id: user.id })
        } else {
            Err(promptgate_service::ServiceError::NotAdmin.into())
        }
    }
}

impl OperationInput for AdminUser {}

/// What nearly every handler starts from: the app's state and the user who calls (a
/// [`CurrentUser`], or an [`AdminUser`] for the admin routes). One extractor instead of the same two
/// in every signature; the user is resolved exactly as its own extractor does, so a request without
/// a valid token is refused the same way.
pub struct Caller<U = CurrentUser> {
    pub state: AppState,
    pub user: U,
}

impl<U> FromRequestParts<AppState> for Caller<U>
where
    U: FromRequestParts<AppState, Rejection = ApiError> + Send,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let user = U::from_request_parts(parts, state).await?;
        Ok(Self {
            state: state.clone(),
            user,
        })
    }
}

impl<U> OperationInput for Caller<U> {}
