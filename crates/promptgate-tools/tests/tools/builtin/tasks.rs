//! The task tools: add, list and delete, each user's own, limits refused with a reason.

use promptgate_tools::builtin::{AddTasks, DeleteTasks, GetTasks};

use crate::builtin::common::*;

struct Tools {
    add: AddTasks,
    get: GetTasks,
    delete: DeleteTasks,
}

fn tools(store: &Store, user: &str) -> Tools {
    Tools {
        add: AddTasks::new(storage(store), user),
        get: GetTasks::new(storage(store), user),
        delete: DeleteTasks::new(storage(store), user),
    }
}

fn items(output: &ToolOutput) -> Vec<String> {
    let rows = output.output.as_array().unwrap();
    rows.iter()
        .map(|t| t["item"].as_str().unwrap().to_owned())
        .collect()
}

fn ids(output: &ToolOutput) -> Vec<String> {
    let rows = output.output.as_array().unwrap();
    rows.iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect()
}

promptgate_store::on_both_backends! {
    async fn tasks_are_added_listed_and_deleted(store: &Store) {
        let alice = user(store, "Alice").await;
        let tools = tools(store, &alice);

        let added = run(&tools.add, json!({"tasks": ["Buy rope", "  Check the tide table "]})).await;
        assert_eq!(items(&added), ["Buy rope", "Check the tide table"]);
        assert!(added.output.as_array().unwrap().iter().all(|t| t["completed"] == json!(false)));

        run(&tools.add, json!({"tasks": ["Pack a torch"]})).await;
        let listed = run(&tools.get, json!({})).await;
        assert_eq!(items(&listed), ["Buy rope", "Check the tide table", "Pack a torch"]);
        // Some models send no arguments at all for a tool without parameters.
        assert_eq!(run(&tools.get, Value::Null).await.output, listed.output);

        let first_two = ids(&added);
        let deleted = run(&tools.delete, json!({"taskIds": [first_two[0], first_two[1], "no-such-task"]})).await;
        assert_eq!(deleted.output, json!({"success": true, "deleted": 2}));
        assert_eq!(items(&run(&tools.get, json!({})).await), ["Pack a torch"]);
    }

    async fn each_user_sees_and_deletes_only_their_own_tasks(store: &Store) {
        let alice = user(store, "Alice").await;
        let bob = user(store, "Bob").await;
        let alices = tools(store, &alice);
        let bobs = tools(store, &bob);
        let added = run(&alices.add, json!({"tasks": ["Alice's secret errand"]})).await;

        assert_eq!(run(&bobs.get, json!({})).await.output, json!([]));
        let deleted = run(&bobs.delete, json!({"taskIds": ids(&added)})).await;
        assert_eq!(deleted.output, json!({"success": true, "deleted": 0}));
        assert_eq!(items(&run(&alices.get, json!({})).await), ["Alice's secret errand"]);
    }
}

#[tokio::test]
async fn limits_and_bad_input_are_refused_with_a_reason() {
    let db = promptgate_store::testing::TestDb::sqlite().await;
    let alice = user(&db, "Alice").await;
    let tools = tools(&db, &alice);
    let message = |e: ToolError| match e {
        ToolError::InvalidArguments(m) => m,
        other => panic!("expected invalid arguments, got {other:?}"),
    };

    let too_many: Vec<String> = (0..101).map(|n| format!("task {n}")).collect();
    assert_eq!(
        message(refused(&tools.add, json!({"tasks": too_many})).await),
        "101 tasks in one call; send at most 100 and make another call for the rest"
    );
    assert_eq!(
        message(refused(&tools.add, json!({"tasks": ["ok", "x".repeat(501)]})).await),
        "task 2 has 501 characters; keep each task under 500"
    );
    assert_eq!(
        message(refused(&tools.add, json!({"tasks": ["ok", "  "]})).await),
        "task 2 is empty; every task needs text"
    );
    assert_eq!(
        message(refused(&tools.add, json!({"tasks": []})).await),
        "give at least one task"
    );
    assert!(message(refused(&tools.add, json!({"tasks": "one"})).await).contains("expected a sequence"));
    assert_eq!(
        message(refused(&tools.delete, json!({"taskIds": []})).await),
        "give at least one task id"
    );
    // Nothing of a refused batch was stored, not even its valid items.
    assert_eq!(run(&tools.get, json!({})).await.output, json!([]));
    // Exactly at the limits is fine.
    let full: Vec<String> = (0..100).map(|n| format!("{n} {}", "y".repeat(490))).collect();
    assert_eq!(items(&run(&tools.add, json!({"tasks": full})).await).len(), 100);
}
