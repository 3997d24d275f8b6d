//! `/v1/admin/...`: users and budgets, for admins. Whether the caller is an admin is read from the
//! store on every request. An admin cannot disable, demote or delete themselves, so a server always
//! keeps the admin who is using it.

use aide::axum::ApiRouter;
use aide::axum::routing::{get_with, put_with};
use axum::Json;
use axum::extract::Path;
use promptgate_service::records::{self, BudgetScope, MAX_PERIOD_SECS};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::keys::KeyBody;
use super::summary;
use super::validate::required_text;
use crate::api_doc::{Created, NoContent};
use crate::auth::{AdminUser, Caller};
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::state::AppState;

pub fn routes() -> ApiRouter<AppState> {
    ApiRouter::new()
        .api_route(
            "/v1/admin/users",
            get_with(list_users, summary("Every user (admins)")).post_with(create_user, |op| {
                op.summary("Create a user with a first key (admins)").description(
                    "The answer carries the first key's `secret`, this once; hand it to the user.",
                )
            }),
        )
        .api_route(
            "/v1/admin/users/{id}",
            get_with(get_user, summary("One user (admins)"))
                .patch_with(update_user, |op| {
                    op.summary("Disable or enable a user, or change their role (admins)").description(
                        "A disabled user's keys are refused at once, on every instance; their data stays.",
                    )
                })
                .delete_with(
                    delete_user,
                    summary("Delete a user and everything they keep (admins)"),
                ),
        )
        .api_route(
            "/v1/admin/users/{id}/budget",
            put_with(set_budget::<OfUser>, |op| {
                op.summary("Set a user's budget and token limit (admins)")
                    .description(
                        "Every limit is optional; all of them off removes the budget. Past a limit a send \
                     gets 429 `budget_exceeded`, `cost_budget_exceeded` or `tokens_per_minute_exceeded` \
                     with `Retry-After`. Under a money limit, a send to a model without a price is \
                     refused with 403 `unpriced_model`.",
                    )
            })
            .get_with(get_budget::<OfUser>, summary("A user's budget (admins)")),
        )
        .api_route(
            "/v1/admin/keys/{id}/budget",
            put_with(set_budget::<OfKey>, |op| {
                op.summary("Set one key's budget and token limit (admins)")
                    .description("A key's limits hold beside its user's: a send must be within both.")
            })
            .get_with(get_budget::<OfKey>, summary("One key's budget (admins)")),
        )
}

/// A user as an admin sees it.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct UserBody {
    pub id: String,
    pub name: String,
    pub admin: bool,
    /// When the user was disabled (epoch milliseconds); `null` while enabled.
    pub disabled_at: Option<i64>,
    pub created_at: i64,
    /// How many keys the user holds.
    pub keys: i64,
}

impl From<records::Account> for UserBody {
    fn from(account: records::Account) -> Self {
        Self {
            id: account.user.id,
            name: account.user.name,
            admin: account.admin,
            disabled_at: account.disabled_at,
            created_at: account.user.created_at,
            keys: account.keys,
        }
    }
}

#[derive(Serialize, JsonSchema)]
pub struct UserList {
    pub data: Vec<UserBody>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewUser {
    /// 1-200 characters.
    pub name: String,
    #[serde(default)]
    pub admin: bool,
}

/// A new user and their first key, whose `secret` is shown this once.
#[derive(Serialize, JsonSchema)]
pub struct CreatedUser {
    pub user: UserBody,
    pub key: KeyBody,
}

/// The fields to change; absent ones stay.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UserUpdate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin: Option<bool>,
}

/// The largest money budget per period, in the price table's currency.
const MAX_PERIOD_COST: f64 = 1.0e12;

/// The limits on a user or key; `null` or absent is off.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct BudgetBody {
    /// Tokens (input and output, as the provider reports them) per period.
    pub period_tokens: Option<i64>,
    /// Money per period, in the currency of the price table (`[[prices]]`): what the tokens cost
    /// at the answering model's price (counted to the millionth).
    pub period_cost: Option<f64>,
    /// The period's length in seconds (86400: a day from 00:00 UTC); windows start at whole
    /// multiples of it since the epoch. Required with `period_tokens` or `period_cost`, which
    /// share it.
    pub period_secs: Option<i64>,
    /// Tokens per minute (whole minutes).
    pub tokens_per_minute: Option<i64>,
}

impl From<records::Budget> for BudgetBody {
    fn from(budget: records::Budget) -> Self {
        Self {
            period_tokens: budget.period_tokens,
            period_cost: budget.period_cost_micros.map(promptgate_service::money),
            period_secs: budget.period_secs,
            tokens_per_minute: budget.tokens_per_minute,
        }
    }
}

impl BudgetBody {
    fn checked(&self) -> ApiResult<records::Budget> {
        let positive = |field: &str, value: Option<i64>| match value {
            Some(v) if v <= 0 => Err(ApiError::invalid(format!("{field} must be at least 1"))),
            _ => Ok(()),
        };
        positive("period_tokens", self.period_tokens)?;
        positive("tokens_per_minute", self.tokens_per_minute)?;
        let period_cost_micros = match self.period_cost {
            Some(cost) => match promptgate_service::to_micros(cost) {
                Some(micros) if micros > 0 && cost <= MAX_PERIOD_COST => Some(micros),
                _ => {
                    return Err(ApiError::invalid(format!(
                        "period_cost must be at least 0.000001 and at most {MAX_PERIOD_COST}"
                    )));
                }
            },
            None => None,
        };
        let per_period = self.period_tokens.is_some() || period_cost_micros.is_some();
        match (per_period, self.period_secs) {
            (true, Some(secs)) if (1..=MAX_PERIOD_SECS).contains(&secs) => {}
            (true, _) => {
                return Err(ApiError::invalid(format!(
                    "period_tokens and period_cost need period_secs between 1 and {MAX_PERIOD_SECS}"
                )));
            }
            (false, Some(_)) => {
                return Err(ApiError::invalid(
                    "period_secs needs period_tokens or period_cost",
                ));
            }
            (false, None) => {}
        }
        Ok(records::Budget {
            period_tokens: self.period_tokens,
            period_cost_micros,
            period_secs: self.period_secs,
            tokens_per_minute: self.tokens_per_minute,
        })
    }
}

async fn list_users(Caller { state, user: _admin }: Caller<AdminUser>) -> ApiResult<Json<UserList>> {
    let accounts = state.service.accounts_list().await?;
    Ok(Json(UserList {
        data: accounts.into_iter().map(UserBody::from).collect(),
    }))
}

async fn create_user(
    Caller { state, user: _admin }: Caller<AdminUser>,
    ApiJson(body): ApiJson<NewUser>,
) -> ApiResult<Created<Json<CreatedUser>>> {
    required_text("name", &body.name, 200)?;
    let (account, key) = state.service.create_account(body.name.trim(), body.admin).await?;
    Ok(Created(Json(CreatedUser {
        user: account.into(),
        key: key.into(),
    })))
}

async fn get_user(
    Caller { state, user: _admin }: Caller<AdminUser>,
    Path(id): Path<String>,
) -> ApiResult<Json<UserBody>> {
    Ok(Json(state.service.account(&id).await?.into()))
}

async fn update_user(
    Caller { state, user: admin }: Caller<AdminUser>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<UserUpdate>,
) -> ApiResult<Json<UserBody>> {
    if id == admin.id && (body.disabled == Some(true) || body.admin == Some(false)) {
        return Err(ApiError::conflict(
            "you cannot disable yourself or take your own admin role; another admin can",
        ));
    }
    let account = state
        .service
        .update_account(&id, body.admin, body.disabled)
        .await?;
    Ok(Json(account.into()))
}

async fn delete_user(
    Caller { state, user: admin }: Caller<AdminUser>,
    Path(id): Path<String>,
) -> ApiResult<NoContent> {
    if id == admin.id {
        return Err(ApiError::conflict(
            "you cannot delete yourself; another admin can",
        ));
    }
    state.service.delete_account(&id).await?;
    Ok(NoContent)
}

/// Which budgets a route reads and writes, as a type, so that one pair of handlers serves both
/// `/users/{id}/budget` and `/keys/{id}/budget`: the two differ in nothing but the scope.
trait Scope {
    const SCOPE: BudgetScope;
}

/// A user's budget, shared by all their keys.
struct OfUser;

impl Scope for OfUser {
    const SCOPE: BudgetScope = BudgetScope::User;
}

/// One key's own budget.
struct OfKey;

impl Scope for OfKey {
    const SCOPE: BudgetScope = BudgetScope::Key;
}

async fn set_budget<S: Scope>(
    Caller { state, user: _admin }: Caller<AdminUser>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<BudgetBody>,
) -> ApiResult<Json<BudgetBody>> {
    let budget = body.checked()?;
    state.service.set_budget(S::SCOPE, &id, &budget).await?;
    Ok(Json(state.service.budget_of(S::SCOPE, &id).await?.into()))
}

async fn get_budget<S: Scope>(
    Caller { state, user: _admin }: Caller<AdminUser>,
    Path(id): Path<String>,
) -> ApiResult<Json<BudgetBody>> {
    Ok(Json(state.service.budget_of(S::SCOPE, &id).await?.into()))
}
