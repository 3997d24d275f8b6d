//! Model definitions: the deployment's system models (seeded, read-only) and each user's own.

use promptgate_core::ids::MODEL_ID;
use promptgate_core::settings::{Engine, Model};
use sqlx::any::AnyRow;

use crate::SYSTEM_OWNER;
use crate::connect::Store;
use crate::error::{Result, StoreError};
use crate::statement::Sql;
use crate::util::{Cols, check_id, check_len, check_name, flag, from_json, to_json};

const MODEL_COLS: &str = "owner, id, name, provider, upstream_model, tool_usage, engine, context_window, \
     supports_images, supports_parallel_tool_calls, extract_think_tags, start_with_reasoning, \
     reasoning, profile, fallbacks";
const MAX_PROFILE_JSON: usize = 64 * 1024;
/// Each fallback may cost a turn a wait before it; a handful is all a turn can use.
const MAX_FALLBACKS: usize = 4;

fn engine_name(e: Engine) -> &'static str {
    match e {
        Engine::Legacy => "legacy",
        Engine::Harness => "harness",
    }
}

fn model_from(row: &AnyRow) -> Result<Model> {
    let engine = match row.text(6)?.as_str() {
        "harness" => Engine::Harness,
        "legacy" => Engine::Legacy,
        other => return Err(StoreError::corrupt("model engine", other)),
    };
    Ok(Model {
        system: row.text(0)? == SYSTEM_OWNER,
        id: row.text(1)?,
        name: row.text(2)?,
        provider: row.text(3)?,
        upstream_model: row.text(4)?,
        tool_usage: i32::try_from(row.int(5)?).map_err(|e| StoreError::corrupt("tool_usage", e))?,
        engine,
        context_window: row.opt_int(7)?,
        supports_images: row.flag(8)?,
        supports_parallel_tool_calls: row.flag(9)?,
        extract_think_tags: row.flag(10)?,
        start_with_reasoning: row.flag(11)?,
        reasoning: row.opt_text(12)?,
        profile: from_json("model profile", &row.text(13)?)?,
        fallbacks: from_json("model fallbacks", &row.text(14)?)?,
    })
}

/// Model ids appear in URLs and sends ([`MODEL_ID`]).
fn check_model(m: &Model) -> Result<()> {
    check_id(MODEL_ID, "model id", &m.id)?;
    check_name("model name", &m.name, 200)?;
    check_name("model provider", &m.provider, 100)?;
    check_name("upstream model", &m.upstream_model, 200)?;
    check_len("reasoning", m.reasoning.as_deref().unwrap_or(""), 32)?;
    if m.fallbacks.len() > MAX_FALLBACKS {
        return Err(StoreError::Invalid(format!(
            "a model may name at most {MAX_FALLBACKS} fallbacks"
        )));
    }
    for fallback in &m.fallbacks {
        check_id(MODEL_ID, "fallback model id", fallback)?;
        if fallback == &m.id {
            return Err(StoreError::Invalid(
                "a model cannot be its own fallback".to_owned(),
            ));
        }
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum Write {
    Seed,
    Create,
    Update,
}

impl Store {
    async fn write_model(&self, owner: &str, m: &Model, how: Write) -> Result<u64> {
        check_model(m)?;
        let profile = to_json("model profile", &m.profile)?;
        if profile.len() > MAX_PROFILE_JSON {
            return Err(StoreError::Invalid(format!(
                "model profile is larger than {MAX_PROFILE_JSON} bytes"
            )));
        }
        const COLS: &str = "INSERT INTO models (owner, id, name, provider, upstream_model, tool_usage, \
             engine, context_window, supports_images, supports_parallel_tool_calls, \
             extract_think_tags, start_with_reasoning, reasoning, profile, created_at, updated_at, \
             fallbacks) ";
        let sql = match how {
            Write::Seed => format!(
                "{COLS} VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15, $16) \
                 ON CONFLICT (owner, id) DO UPDATE SET name = excluded.name, \
                 provider = excluded.provider, upstream_model = excluded.upstream_model, \
                 tool_usage = excluded.tool_usage, engine = excluded.engine, \
                 context_window = excluded.context_window, supports_images = excluded.supports_images, \
                 supports_parallel_tool_calls = excluded.supports_parallel_tool_calls, \
                 extract_think_tags = excluded.extract_think_tags, \
                 start_with_reasoning = excluded.start_with_reasoning, \
                 reasoning = excluded.reasoning, profile = excluded.profile, \
                 updated_at = excluded.updated_at, fallbacks = excluded.fallbacks"
            ),
            // Selecting from users makes an unknown user insert nothing instead of a stray row.
            Write::Create => format!(
                "{COLS} SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15, $16 \
                 FROM users WHERE id = $1"
            ),
            Write::Update => "UPDATE models SET name = $3, provider = $4, upstream_model = $5, \
                 tool_usage = $6, engine = $7, context_window = $8, supports_images = $9, \
                 supports_parallel_tool_calls = $10, extract_think_tags = $11, \
                 start_with_reasoning = $12, reasoning = $13, profile = $14, updated_at = $15, \
                 fallbacks = $16 \
                 WHERE owner = $1 AND id = $2"
                .to_owned(),
        };
        let done = sqlx::AssertSqlSafe(sql)
            .with_values((
                owner,
                &m.id,
                &m.name,
                &m.provider,
                &m.upstream_model,
                i64::from(m.tool_usage),
                engine_name(m.engine),
                m.context_window,
                flag(m.supports_images),
                flag(m.supports_parallel_tool_calls),
                flag(m.extract_think_tags),
                flag(m.start_with_reasoning),
                m.reasoning.as_deref(),
                profile,
                self.now_ms(),
                to_json("model fallbacks", &m.fallbacks)?,
            ))
            .execute(&self.writer, "models.write_model")
            .await?;
        self.setup_changed(owner);
        Ok(done.rows_affected())
    }

    /// Inserts or refreshes the models from the config file. They are visible to every user and
    /// read-only through the API.
    pub async fn seed_system_models(&self, models: &[Model]) -> Result<()> {
        for m in models {
            self.write_model(SYSTEM_OWNER, m, Write::Seed).await?;
        }
        Ok(())
    }

    /// System models first, then the user's own, each in creation order. A user's model shadows a
    /// system model of the same id.
    pub async fn list_models(&self, user: &str) -> Result<Vec<Model>> {
        let rows = sqlx::AssertSqlSafe(format!(
            "SELECT {MODEL_COLS} FROM models WHERE owner = $1 OR owner = $2 \
             ORDER BY CASE WHEN owner = $2 THEN 0 ELSE 1 END, created_at, id"
        ))
        .with_values((user, SYSTEM_OWNER))
        .fetch_all(&self.pool, "models.list_models")
        .await?;
        let models = rows.iter().map(model_from).collect::<Result<Vec<_>>>()?;
        let own: std::collections::HashSet<&str> = models
            .iter()
            .filter(|m| !m.system)
            .map(|m| m.id.as_str())
            .collect();
        let shadowed: Vec<bool> = models
            .iter()
            .map(|m| m.system && own.contains(m.id.as_str()))
            .collect();
        Ok(models
            .into_iter()
            .zip(shadowed)
            .filter(|(_, s)| !s)
            .map(|(m, _)| m)
            .collect())
    }

    /// The user's own model with this id, else the system one.
    pub async fn get_model(&self, user: &str, id: &str) -> Result<Option<Model>> {
        let row = sqlx::AssertSqlSafe(format!(
            "SELECT {MODEL_COLS} FROM models WHERE id = $1 AND (owner = $2 OR owner = $3) \
             ORDER BY CASE WHEN owner = $2 THEN 0 ELSE 1 END LIMIT 1"
        ))
        .with_values((id, user, SYSTEM_OWNER))
        .fetch_optional(&self.pool, "models.get_model")
        .await?;
        row.as_ref().map(model_from).transpose()
    }

    /// Conflict when the id is taken, by one of the user's models or by a system model.
    pub async fn create_model(&self, user: &str, m: &Model) -> Result<Model> {
        check_model(m)?;
        let taken = || StoreError::Conflict(format!("a model with id {:?} exists", m.id));
        if self.get_model(user, &m.id).await?.is_some() {
            return Err(taken());
        }
        match self.write_model(user, m, Write::Create).await {
            Ok(0) => Err(StoreError::NotFound),
            Ok(_) => Ok(Model {
                system: false,
                ..m.clone()
            }),
            Err(StoreError::Conflict(_)) => Err(taken()),
            Err(e) => Err(e),
        }
    }

    /// ReadOnly for a system model, NotFound for an id the user does not have.
    pub async fn update_model(&self, user: &str, m: &Model) -> Result<Model> {
        if self.write_model(user, m, Write::Update).await? == 0 {
            return Err(self.missing_model(user, &m.id).await);
        }
        Ok(Model {
            system: false,
            ..m.clone()
        })
    }

    pub async fn delete_model(&self, user: &str, id: &str) -> Result<()> {
        let done = "DELETE FROM models WHERE owner = $1 AND id = $2"
            .with_values((user, id))
            .execute(&self.writer, "models.delete_model")
            .await?;
        self.setup_changed(user);
        if done.rows_affected() == 0 {
            return Err(self.missing_model(user, id).await);
        }
        Ok(())
    }

    /// Why a write to the user's model `id` touched nothing.
    async fn missing_model(&self, user: &str, id: &str) -> StoreError {
        match self.get_model(user, id).await {
            Ok(Some(m)) if m.system => {
                StoreError::ReadOnly(format!("model {id:?} comes from the configuration"))
            }
            Ok(_) => StoreError::NotFound,
            Err(e) => e,
        }
    }
}
