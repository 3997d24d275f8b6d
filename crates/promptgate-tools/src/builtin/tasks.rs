//! `addTasks`, `getTasks` and `deleteTasks`: the user's task list, kept in a [`TaskStore`].

use std::sync::Arc;

use async_trait::async_trait;
use promptgate_core::storage::TaskStore;
use promptgate_core::tools::args::{AddTasksArgs, DeleteTasksArgs, GetTasksArgs};
use promptgate_core::tools::names;
use serde_json::{Value, json};

use super::{parse, storage_failed};
use promptgate_core::tools::{ToolError, ToolExecutor, ToolOutput};

/// Most tasks one call adds or deletes.
pub const MAX_TASKS_PER_CALL: usize = 100;
/// Longest task text; a task is a line on a list, not a document.
pub const MAX_TASK_CHARS: usize = 500;
/// Ids the store generates are far shorter; anything longer cannot name a task.
const MAX_TASK_ID_CHARS: usize = 128;

/// Whose task list the tools work on.
#[derive(Clone)]
struct TaskList {
    tasks: Arc<dyn TaskStore>,
    user_id: String,
}

impl TaskList {
    fn new(tasks: Arc<dyn TaskStore>, user_id: impl Into<String>) -> Self {
        Self {
            tasks,
            user_id: user_id.into(),
        }
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<Value, ToolError> {
    serde_json::to_value(value).map_err(|_| ToolError::Failed("Could not encode the tasks.".to_owned()))
}

fn check_count(what: &str, count: usize) -> Result<(), ToolError> {
    if count == 0 {
        return Err(ToolError::InvalidArguments(format!("give at least one {what}")));
    }
    if count > MAX_TASKS_PER_CALL {
        return Err(ToolError::InvalidArguments(format!(
            "{count} {what}s in one call; send at most {MAX_TASKS_PER_CALL} and make another call for the rest"
        )));
    }
    Ok(())
}

/// Adds tasks and returns the stored rows (with their ids).
pub struct AddTasks(TaskList);

impl AddTasks {
    pub fn new(tasks: Arc<dyn TaskStore>, user_id: impl Into<String>) -> Self {
        Self(TaskList::new(tasks, user_id))
    }
}

#[async_trait]
impl ToolExecutor for AddTasks {
    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        let args: AddTasksArgs = parse(names::ADD_TASKS, &input)?;
        check_count("task", args.tasks.len())?;
        let mut items = Vec::with_capacity(args.tasks.len());
        for (n, task) in args.tasks.iter().enumerate() {
            let item = task.trim();
            if item.is_empty() {
                return Err(ToolError::InvalidArguments(format!(
                    "task {} is empty; every task needs text",
                    n + 1
                )));
            }
            let chars = item.chars().count();
            if chars > MAX_TASK_CHARS {
                return Err(ToolError::InvalidArguments(format!(
                    "task {} has {chars} characters; keep each task under {MAX_TASK_CHARS}",
                    n + 1
                )));
            }
            items.push(item.to_owned());
        }
        let TaskList { tasks, user_id } = &self.0;
        let added = tasks
            .add_tasks(user_id, &items)
            .await
            .map_err(|e| storage_failed("add the tasks", e))?;
        Ok(ToolOutput::json(to_json(&added)?))
    }
}

/// Lists all of the user's tasks, oldest first.
pub struct GetTasks(TaskList);

impl GetTasks {
    pub fn new(tasks: Arc<dyn TaskStore>, user_id: impl Into<String>) -> Self {
        Self(TaskList::new(tasks, user_id))
    }
}

#[async_trait]
impl ToolExecutor for GetTasks {
    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        let _: GetTasksArgs = parse(names::GET_TASKS, &input)?;
        let TaskList { tasks, user_id } = &self.0;
        let listed = tasks
            .list_tasks(user_id)
            .await
            .map_err(|e| storage_failed("read the tasks", e))?;
        Ok(ToolOutput::json(to_json(&listed)?))
    }
}

/// Deletes tasks by id; ids that are not the user's tasks are ignored and not counted.
pub struct DeleteTasks(TaskList);

impl DeleteTasks {
    pub fn new(tasks: Arc<dyn TaskStore>, user_id: impl Into<String>) -> Self {
        Self(TaskList::new(tasks, user_id))
    }
}

#[async_trait]
impl ToolExecutor for DeleteTasks {
    async fn call(&self, input: Value) -> Result<ToolOutput, ToolError> {
        let args: DeleteTasksArgs = parse(names::DELETE_TASKS, &input)?;
        check_count("task id", args.task_ids.len())?;
        let ids: Vec<String> = args
            .task_ids
            .iter()
            .map(|id| id.trim().to_owned())
            .filter(|id| !id.is_empty() && id.chars().count() <= MAX_TASK_ID_CHARS)
            .collect();
        let TaskList { tasks, user_id } = &self.0;
        let deleted = tasks
            .delete_tasks(user_id, &ids)
            .await
            .map_err(|e| storage_failed("delete the tasks", e))?;
        Ok(ToolOutput::json(json!({"success": true, "deleted": deleted})))
    }
}
