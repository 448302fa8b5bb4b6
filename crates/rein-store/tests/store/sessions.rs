//! Sessions in `SqliteStore`: creation, listing order and filters, ids
//! by unique prefix, title and model, deletion, and their todos.

use rein_core::{Message, SessionStore, StoreError, TodoStatus};

use crate::fixtures::{every_kind_of_message, open, raw, session, temp_db, tick, todo, twins};

#[tokio::test]
async fn a_new_session_is_stored_as_created() {
    let db = temp_db();
    let store = open(&db.path);
    let s = session(&store, "/work/a", "first").await;
    assert_eq!(s.message_count, 0);
    assert_eq!(s.created_at, s.updated_at);
    assert_eq!(store.get_session(&s.id).await.unwrap(), s);
    assert!(store.messages(&s.id).await.unwrap().is_empty());
}

#[tokio::test]
async fn sessions_list_newest_first_with_message_counts() {
    let db = temp_db();
    let store = open(&db.path);
    let a = session(&store, "/w", "a").await;
    tick().await;
    let b = session(&store, "/w", "b").await;
    tick().await;
    let c = session(&store, "/w", "c").await;
    tick().await;
    store
        .append_message(&a.id, &Message::user("again"))
        .await
        .unwrap();
    let listed = store.list_sessions(None, 10).await.unwrap();
    let ids: Vec<&str> = listed.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, [a.id.as_str(), c.id.as_str(), b.id.as_str()]);
    assert_eq!(listed[0].message_count, 1);
    assert_eq!(listed[1].message_count, 0);
}

#[tokio::test]
async fn listing_filters_by_workspace_and_honours_the_limit() {
    let db = temp_db();
    let store = open(&db.path);
    let mut in_a = Vec::new();
    for i in 0..4 {
        in_a.push(session(&store, "/a", &format!("a{i}")).await.id);
        session(&store, "/b", &format!("b{i}")).await;
        tick().await;
    }
    let listed = store.list_sessions(Some("/a"), 3).await.unwrap();
    let ids: Vec<String> = listed.iter().map(|s| s.id.clone()).collect();
    let newest: Vec<String> = in_a.iter().rev().take(3).cloned().collect();
    assert_eq!(ids, newest);
    assert!(listed.iter().all(|s| s.workspace == "/a"));
    assert_eq!(store.list_sessions(None, 100).await.unwrap().len(), 8);
    assert_eq!(store.list_sessions(Some("/b"), 100).await.unwrap().len(), 4);
    assert!(
        store
            .list_sessions(Some("/none"), 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.list_sessions(None, 0).await.unwrap().is_empty());
    assert_eq!(
        store.list_sessions(None, usize::MAX).await.unwrap().len(),
        8
    );
}

#[tokio::test]
async fn sessions_with_the_same_update_time_list_by_id_descending() {
    let db = temp_db();
    let store = open(&db.path);
    for i in 0..3 {
        session(&store, "/w", &format!("{i}")).await;
    }
    raw(&db.path)
        .execute("UPDATE sessions SET updated_at = 42", [])
        .unwrap();
    let listed = store.list_sessions(None, 10).await.unwrap();
    let ids: Vec<&str> = listed.iter().map(|s| s.id.as_str()).collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(ids, sorted);
}

#[tokio::test]
async fn title_and_model_changes_persist() {
    let db = temp_db();
    let s = {
        let store = open(&db.path);
        let s = session(&store, "/w", "old").await;
        store.set_title(&s.id, "new title").await.unwrap();
        store.set_model(&s.id, "other/model").await.unwrap();
        s
    };
    let got = open(&db.path).get_session(&s.id).await.unwrap();
    assert_eq!(got.title, "new title");
    assert_eq!(got.model, "other/model");
}

#[tokio::test]
async fn a_unique_prefix_finds_a_session_for_get_and_delete() {
    let db = temp_db();
    let store = open(&db.path);
    let s = session(&store, "/w", "t").await;
    assert_eq!(store.get_session(&s.id[..12]).await.unwrap().id, s.id);
    store.delete_session(&s.id[..12]).await.unwrap();
    assert!(matches!(
        store.get_session(&s.id).await,
        Err(StoreError::NotFound(_))
    ));
}

fn common_prefix(a: &str, b: &str) -> String {
    a.chars()
        .zip(b.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x)
        .collect()
}

#[tokio::test]
async fn a_prefix_shared_by_two_sessions_is_ambiguous_and_deletes_nothing() {
    let db = temp_db();
    let store = open(&db.path);
    // Only these two of the sessions made share their first digit.
    let (a, b) = twins(&store, "/w").await;
    let shared = common_prefix(&a.id, &b.id);
    assert!(!shared.is_empty(), "{} / {}", a.id, b.id);
    // Both candidates are listed, in order, in the error and its message.
    let mut both = vec![a.id.clone(), b.id.clone()];
    both.sort();
    match store.get_session(&shared).await {
        Err(e @ StoreError::Ambiguous { .. }) => {
            let text = e.to_string();
            let StoreError::Ambiguous { prefix, candidates } = e else {
                unreachable!()
            };
            assert_eq!((prefix, candidates), (shared.clone(), both.clone()));
            assert!(text.contains(&both.join(", ")), "{text}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        store.delete_session(&shared).await,
        Err(StoreError::Ambiguous { .. })
    ));
    assert_eq!(store.list_sessions(None, 10).await.unwrap().len(), 2);
}

#[tokio::test]
async fn unknown_ids_are_not_found_everywhere() {
    let db = temp_db();
    let store = open(&db.path);
    let s = session(&store, "/w", "t").await;
    let nf = |r: Result<(), StoreError>| matches!(r, Err(StoreError::NotFound(_)));
    assert!(nf(store.get_session("zzz").await.map(drop)));
    assert!(nf(store.get_session("").await.map(drop)));
    assert!(nf(store.delete_session("zzz").await));
    assert!(nf(store.set_title("zzz", "x").await));
    assert!(nf(store.set_model("zzz", "x").await));
    assert!(nf(store
        .append_message("zzz", &Message::user("x"))
        .await
        .map(drop)));
    assert!(nf(store.messages("zzz").await.map(drop)));
    assert!(nf(store.set_todos("zzz", &[]).await));
    assert!(nf(store.todos("zzz").await.map(drop)));
    // Only lookups take a prefix; the other methods want the full id.
    let prefix = &s.id[..10];
    assert!(nf(store
        .append_message(prefix, &Message::user("x"))
        .await
        .map(drop)));
    assert!(nf(store.set_title(prefix, "x").await));
    assert!(nf(store.messages(prefix).await.map(drop)));
    assert_eq!(store.get_session(&s.id).await.unwrap().message_count, 0);
}

#[tokio::test]
async fn deleting_a_session_deletes_its_messages_and_todos_only() {
    let db = temp_db();
    let store = open(&db.path);
    let gone = session(&store, "/w", "gone").await;
    let kept = session(&store, "/w", "kept").await;
    for s in [&gone, &kept] {
        for m in every_kind_of_message() {
            store.append_message(&s.id, &m).await.unwrap();
        }
        store
            .set_todos(&s.id, &[todo("1", "x", TodoStatus::Pending)])
            .await
            .unwrap();
    }
    store.delete_session(&gone.id).await.unwrap();

    let conn = raw(&db.path);
    let count = |table: &str, id: &str| -> i64 {
        conn.query_row(
            &format!("SELECT COUNT(*) FROM {table} WHERE session_id = ?1"),
            [id],
            |r| r.get(0),
        )
        .unwrap()
    };
    assert_eq!(count("messages", &gone.id), 0);
    assert_eq!(count("todos", &gone.id), 0);
    assert_eq!(
        count("messages", &kept.id),
        every_kind_of_message().len() as i64
    );
    assert_eq!(count("todos", &kept.id), 1);
    assert!(matches!(
        store.messages(&gone.id).await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(
        store.messages(&kept.id).await.unwrap(),
        every_kind_of_message()
    );
}

// ---------------------------------------------------------------- todos

#[tokio::test]
async fn todos_round_trip_and_are_replaced_whole() {
    let db = temp_db();
    let store = open(&db.path);
    let s = session(&store, "/w", "t").await;
    assert!(store.todos(&s.id).await.unwrap().is_empty());
    let first = vec![
        todo("1", "read the code", TodoStatus::Completed),
        todo("2", "write the store", TodoStatus::InProgress),
        todo("3", "écrire les tests", TodoStatus::Pending),
        todo("4", "give up", TodoStatus::Cancelled),
    ];
    store.set_todos(&s.id, &first).await.unwrap();
    assert_eq!(store.todos(&s.id).await.unwrap(), first);
    let second = vec![todo("9", "only this", TodoStatus::Pending)];
    store.set_todos(&s.id, &second).await.unwrap();
    drop(store);
    let store = open(&db.path);
    assert_eq!(store.todos(&s.id).await.unwrap(), second);
    store.set_todos(&s.id, &[]).await.unwrap();
    assert!(store.todos(&s.id).await.unwrap().is_empty());
}

#[tokio::test]
async fn todos_that_are_not_json_are_reported_corrupt() {
    let db = temp_db();
    let store = open(&db.path);
    let s = session(&store, "/w", "t").await;
    store.set_todos(&s.id, &[]).await.unwrap();
    raw(&db.path)
        .execute("UPDATE todos SET body = 'nope'", [])
        .unwrap();
    assert!(matches!(
        store.todos(&s.id).await,
        Err(StoreError::Corrupt(m)) if m.contains(&s.id)
    ));
}
