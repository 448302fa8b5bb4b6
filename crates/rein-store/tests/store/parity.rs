//! Parity: the same script gives the same observable results against
//! `SqliteStore` and `InMemorySessionStore`.

use rein_core::InMemorySessionStore;
use rein_core::{SessionStore, StoreError, TodoStatus};

use crate::fixtures::{every_kind_of_message, open, session, temp_db, tick, todo};

/// What an error is, without the ids that differ between stores.
fn kind(e: Option<StoreError>) -> &'static str {
    match e {
        None => "ok",
        Some(StoreError::NotFound(_)) => "not found",
        Some(StoreError::Ambiguous { .. }) => "ambiguous",
        Some(StoreError::Locked(_)) => "locked",
        Some(StoreError::Corrupt(_)) => "corrupt",
        Some(StoreError::Unavailable(_)) => "unavailable",
        Some(StoreError::LeaseLost { .. }) => "lease lost",
        Some(StoreError::Other(_)) => "other",
    }
}

/// The same script against both stores gives the same observable results.
pub(crate) async fn script(store: &dyn SessionStore) -> Vec<String> {
    let mut log = Vec::new();
    let a = session(store, "/w", "a").await;
    tick().await;
    let b = session(store, "/v", "b").await;
    tick().await;
    let sent = every_kind_of_message();
    for m in &sent {
        log.push(format!(
            "seq {}",
            store.append_message(&a.id, m).await.unwrap()
        ));
    }
    store.set_title(&b.id, "renamed").await.unwrap();
    store.set_model(&b.id, "m2").await.unwrap();
    let todos = [todo("1", "t", TodoStatus::Pending)];
    store.set_todos(&b.id, &todos).await.unwrap();
    log.push(format!(
        "messages equal: {}",
        store.messages(&a.id).await.unwrap() == sent
    ));
    log.push(format!(
        "todos equal: {}",
        store.todos(&b.id).await.unwrap() == todos
    ));
    log.push(format!(
        "todos of a: {:?}",
        store.todos(&a.id).await.unwrap()
    ));
    for ws in [None, Some("/w"), Some("/v")] {
        let listed = store.list_sessions(ws, 10).await.unwrap();
        let shape: Vec<(String, String, String, u64)> = listed
            .into_iter()
            .map(|s| (s.workspace, s.title, s.model, s.message_count))
            .collect();
        log.push(format!("{ws:?}: {shape:?}"));
    }
    log.push(kind(store.get_session("nope").await.err()).into());
    log.push(kind(store.get_session(&a.id[..12]).await.err()).into());
    store.delete_session(&a.id).await.unwrap();
    log.push(kind(store.messages(&a.id).await.err()).into());
    log.push(kind(store.get_session(&a.id).await.err()).into());
    log.push(kind(store.todos(&b.id).await.err()).into());
    log
}

#[tokio::test]
async fn sqlite_store_behaves_like_memory_store() {
    let db = temp_db();
    let sqlite = script(&open(&db.path)).await;
    let memory = script(&InMemorySessionStore::new()).await;
    assert_eq!(sqlite, memory);
}
