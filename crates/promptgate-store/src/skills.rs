//! A user's skills: created, listed, enabled, updated and deleted, slugs unique per user.

use promptgate_core::ids::SKILL_SLUG;
use promptgate_core::settings::Skill;
use sqlx::any::AnyRow;

use crate::connect::Store;
use crate::error::{Result, StoreError};
use crate::statement::Sql;
use crate::types::NewSkill;
use crate::util::{
    Cols, check_id, check_len, check_name, delete_owned, flag, new_id, one_row, owned_row, owned_rows,
};

const SKILL_COLS: &str = "id, slug, name, description, instructions, enabled, renders_widgets";
const MAX_DESCRIPTION: usize = 2_000;
const MAX_INSTRUCTIONS: usize = 64 * 1024;

pub(crate) fn skill_from(row: &AnyRow) -> Result<Skill> {
    Ok(Skill {
        id: row.text(0)?,
        slug: row.text(1)?,
        name: row.text(2)?,
        description: row.text(3)?,
        instructions: row.text(4)?,
        enabled: row.flag(5)?,
        renders_widgets: row.flag(6)?,
    })
}

/// Slugs are what users type after `/` ([`SKILL_SLUG`]).
fn check_skill(s: &NewSkill) -> Result<()> {
    check_id(SKILL_SLUG, "skill slug", &s.slug)?;
    check_name("skill name", &s.name, 200)?;
    check_len("skill description", &s.description, MAX_DESCRIPTION)?;
    check_name("skill instructions", &s.instructions, MAX_INSTRUCTIONS)
}

fn skill_of(id: String, s: &NewSkill) -> Skill {
    Skill {
        id,
        slug: s.slug.clone(),
        name: s.name.clone(),
        description: s.description.clone(),
        instructions: s.instructions.clone(),
        enabled: s.enabled,
        renders_widgets: s.renders_widgets,
    }
}

impl Store {
    /// Conflict when the user already has a skill with this slug.
    pub async fn create_skill(&self, user: &str, s: &NewSkill) -> Result<Skill> {
        let id = new_id();
        self.write_skill(
            "INSERT INTO skills (id, user_id, slug, name, description, instructions, enabled, \
             renders_widgets, created_at, updated_at) \
             SELECT $1, id, $3, $4, $5, $6, $7, $8, $9, $9 FROM users WHERE id = $2",
            user,
            &id,
            s,
        )
        .await?;
        Ok(skill_of(id, s))
    }

    /// Runs a statement that writes skill `id` of `user` from `s` ($1 id, $2 user, $3.. fields).
    async fn write_skill(&self, sql: &'static str, user: &str, id: &str, s: &NewSkill) -> Result<()> {
        check_skill(s)?;
        let done = sql
            .with_values((
                id,
                user,
                &s.slug,
                &s.name,
                &s.description,
                &s.instructions,
                flag(s.enabled),
                flag(s.renders_widgets),
                self.now_ms(),
            ))
            .execute(&self.writer, "skills.write_skill")
            .await
            .map_err(|e| match StoreError::from(e) {
                StoreError::Conflict(_) => StoreError::Conflict(format!("a skill /{} exists", s.slug)),
                other => other,
            })?;
        self.setup_changed(user);
        one_row(done.rows_affected())
    }

    /// In creation order.
    pub async fn list_skills(&self, user: &str) -> Result<Vec<Skill>> {
        self.query_skills(user, false).await
    }

    /// The skills a send offers, in creation order.
    pub async fn enabled_skills(&self, user: &str) -> Result<Vec<Skill>> {
        self.query_skills(user, true).await
    }

    async fn query_skills(&self, user: &str, enabled_only: bool) -> Result<Vec<Skill>> {
        let rows = owned_rows(
            self,
            SKILL_COLS,
            "skills",
            user,
            enabled_only,
            "skills.query_skills",
        )
        .await?;
        rows.iter().map(skill_from).collect()
    }

    pub async fn get_skill(&self, user: &str, id: &str) -> Result<Option<Skill>> {
        let row = owned_row(self, SKILL_COLS, "skills", user, id, "skills.get_skill").await?;
        row.as_ref().map(skill_from).transpose()
    }

    /// Replaces every field; Conflict when the new slug belongs to another of the user's skills.
    pub async fn update_skill(&self, user: &str, id: &str, s: &NewSkill) -> Result<Skill> {
        self.write_skill(
            "UPDATE skills SET slug = $3, name = $4, description = $5, instructions = $6, \
             enabled = $7, renders_widgets = $8, updated_at = $9 WHERE user_id = $2 AND id = $1",
            user,
            id,
            s,
        )
        .await?;
        Ok(skill_of(id.to_owned(), s))
    }

    pub async fn delete_skill(&self, user: &str, id: &str) -> Result<()> {
        let deleted = delete_owned(self, "skills", user, id).await;
        self.setup_changed(user);
        deleted
    }
}
