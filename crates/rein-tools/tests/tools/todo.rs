//! todo_write.

use rein_core::{SessionStore, TodoStatus};
use rein_tools::TodoWrite;
use serde_json::json;

use crate::common::Env;

#[tokio::test]
async fn todo_write_replaces_the_list_in_the_store_and_renders_it() {
    let env = Env::new().await;
    let out = env
        .ok(
            &TodoWrite,
            json!({"todos": [
                {"id": "1", "content": "read the code", "status": "completed"},
                {"id": "2", "content": "fix the bug", "status": "in_progress"},
                {"id": "3", "content": "run tests", "status": "pending"},
                {"id": "4", "content": "rewrite it all", "status": "cancelled"}
            ]}),
        )
        .await;
    assert!(out.contains("[x] 1. read the code"), "{out}");
    assert!(out.contains("[~] 2. fix the bug"), "{out}");
    assert!(out.contains("[ ] 3. run tests"), "{out}");
    assert!(out.contains("[-] 4. rewrite it all"), "{out}");
    assert!(
        out.contains("1 completed, 1 in progress, 1 pending, 1 cancelled"),
        "{out}"
    );

    let stored = env.store.todos(&env.session).await.unwrap();
    assert_eq!(stored.len(), 4);
    assert_eq!(stored[1].id, "2");
    assert_eq!(stored[1].status, TodoStatus::InProgress);

    env.ok(
        &TodoWrite,
        json!({"todos": [{"id": "9", "content": "only this", "status": "pending"}]}),
    )
    .await;
    let stored = env.store.todos(&env.session).await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].content, "only this");
}

#[tokio::test]
async fn todo_write_refuses_duplicate_ids_and_unknown_statuses() {
    let env = Env::new().await;
    let e = env
        .err(
            &TodoWrite,
            json!({"todos": [
                {"id": "1", "content": "a", "status": "pending"},
                {"id": "1", "content": "b", "status": "pending"}
            ]}),
        )
        .await;
    assert!(e.contains("`1` is used by more than one todo"), "{e}");
    let e = env
        .err(
            &TodoWrite,
            json!({"todos": [{"id": "1", "content": "a", "status": "done"}]}),
        )
        .await;
    assert!(e.contains("status"), "{e}");
    assert!(env.store.todos(&env.session).await.unwrap().is_empty());
}
