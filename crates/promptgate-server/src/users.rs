//! `promptgate users ...`: the users and API tokens of `tokens` mode, managed from the command line
//! (the first admin is made here; admins manage the rest over `/v1/admin`).

use anyhow::Context;
use promptgate_service::Database;
use promptgate_service::records::User;

use crate::cli::UsersCommand;
use crate::config::AuthMode;

/// Runs one users command and returns what to print.
pub async fn run(database: &Database, command: UsersCommand, mode: AuthMode) -> anyhow::Result<String> {
    let mut text = match command {
        UsersCommand::Create { name, admin } => {
            let name = name.trim();
            anyhow::ensure!(
                !name.is_empty() && name.len() <= 200,
                "the user name must be 1-200 characters"
            );
            let user = database.create_user(name).await?;
            if admin {
                database.set_admin(&user.id, true).await?;
            }
            let token = database.issue_token(&user.id).await?;
            format!(
                "created {} {} (id {})\ntoken: {token}\n{}",
                if admin { "admin" } else { "user" },
                user.name,
                user.id,
                shown_once()
            )
        }
        UsersCommand::Admin { name, revoke } => {
            let user = find(database, &name).await?;
            database.set_admin(&user.id, !revoke).await?;
            if revoke {
                format!("{} (id {}) is no longer an admin", user.name, user.id)
            } else {
                format!(
                    "{} (id {}) is an admin: they manage users, keys and budgets over /v1/admin",
                    user.name, user.id
                )
            }
        }
        UsersCommand::List => {
            let users = database.users().await?;
            let mut out = format!("{:<28} {:<24} {:<20} tokens", "id", "name", "created (UTC)");
            for entry in users {
                let created = chrono::DateTime::from_timestamp_millis(entry.user.created_at)
                    .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
                    .unwrap_or_default();
                out.push_str(&format!(
                    "\n{:<28} {:<24} {:<20} {}",
                    entry.user.id, entry.user.name, created, entry.tokens
                ));
            }
            out
        }
        UsersCommand::Revoke { name } => {
            let user = find(database, &name).await?;
            let revoked = database.revoke_tokens(&user.id).await?;
            format!(
                "revoked {revoked} token(s) of {} (id {}); requests with them now get 401",
                user.name, user.id
            )
        }
        UsersCommand::Rotate { name } => {
            let user = find(database, &name).await?;
            let token = database.rotate_token(&user.id).await?;
            format!(
                "new token for {} (id {}); the old ones no longer work\ntoken: {token}\n{}",
                user.name,
                user.id,
                shown_once()
            )
        }
    };
    if mode == AuthMode::SingleUser {
        text.push_str(
            "\nNote: this configuration runs in single_user mode, where requests need no token and act as \
             the local user; tokens are used only with auth.mode = \"tokens\".",
        );
    }
    Ok(text)
}

fn shown_once() -> &'static str {
    "This token is shown only once; send it as `Authorization: Bearer <token>`."
}

/// The one user with this id, else the one with this name; several users sharing a name must be
/// told apart by id.
async fn find(database: &Database, name_or_id: &str) -> anyhow::Result<User> {
    let wanted = name_or_id.trim();
    let users = database.users().await.context("cannot list the users")?;
    if let Some(entry) = users.iter().find(|u| u.user.id == wanted) {
        return Ok(entry.user.clone());
    }
    let named: Vec<&User> = users
        .iter()
        .map(|u| &u.user)
        .filter(|u| u.name == wanted)
        .collect();
    match named.as_slice() {
        [one] => Ok((*one).clone()),
        [] => anyhow::bail!("no user is named {wanted:?}; `promptgate users list` shows them"),
        several => anyhow::bail!(
            "{} users are named {wanted:?}; name one by id: {}",
            several.len(),
            several
                .iter()
                .map(|u| u.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
