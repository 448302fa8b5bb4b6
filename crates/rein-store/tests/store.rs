//! Integration tests of `SqliteStore` against real database files, and of
//! `PgStore`/`PgMemory` against a real PostgreSQL (the `postgres` module).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "store/checkpoints.rs"]
mod checkpoints;
#[path = "store/fixtures.rs"]
mod fixtures;
#[path = "store/ledger.rs"]
mod ledger;
#[path = "store/memory.rs"]
mod memory;
#[path = "store/postgres/mod.rs"]
mod postgres;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fixtures::{every_kind_of_message, open, open_with_timeout, raw, session, temp_db};
use rein_core::InMemorySessionStore;
use rein_core::{Message, SessionStore, StoreError, Todo, TodoStatus};
use rein_store::{SCHEMA_VERSION, SqliteStore};

fn todo(id: &str, content: &str, status: TodoStatus) -> Todo {
    Todo {
        id: id.into(),
        content: content.into(),
        status,
    }
}

/// Let the millisecond clock move so `updated_at` values differ.
async fn tick() {
    tokio::time::sleep(Duration::from_millis(3)).await;
}

// ---------------------------------------------------------------- messages

#[tokio::test]
async fn every_kind_of_message_round_trips_exactly() {
    let db = temp_db();
    let store = open(&db.path);
    let s = session(&store, "/w", "t").await;
    let sent = every_kind_of_message();
    for m in &sent {
        store.append_message(&s.id, m).await.unwrap();
    }
    assert_eq!(store.messages(&s.id).await.unwrap(), sent);
}

#[tokio::test]
async fn messages_survive_closing_and_reopening_the_database() {
    let db = temp_db();
    let sent = every_kind_of_message();
    let id = {
        let store = open(&db.path);
        let s = session(&store, "/w", "kept").await;
        for m in &sent {
            store.append_message(&s.id, m).await.unwrap();
        }
        s.id
    };
    let store = open(&db.path);
    assert_eq!(store.messages(&id).await.unwrap(), sent);
    let info = store.get_session(&id).await.unwrap();
    assert_eq!(info.title, "kept");
    assert_eq!(info.message_count, sent.len() as u64);
}

#[tokio::test]
async fn messages_are_stored_as_their_serde_json_with_the_role_beside_them() {
    let db = temp_db();
    let store = open(&db.path);
    let s = session(&store, "/w", "t").await;
    let sent = every_kind_of_message();
    for m in &sent {
        store.append_message(&s.id, m).await.unwrap();
    }
    let conn = raw(&db.path);
    let mut stmt = conn
        .prepare("SELECT role, body FROM messages WHERE session_id = ?1 ORDER BY seq")
        .unwrap();
    let rows: Vec<(String, String)> = stmt
        .query_map([&s.id], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows.len(), sent.len());
    for ((role, body), m) in rows.iter().zip(&sent) {
        assert_eq!(role, m.role().as_str());
        assert_eq!(body, &serde_json::to_string(m).unwrap());
    }
}

#[tokio::test]
async fn seq_numbers_count_from_one_per_session() {
    let db = temp_db();
    let store = open(&db.path);
    let a = session(&store, "/w", "a").await;
    let b = session(&store, "/w", "b").await;
    assert_eq!(
        store
            .append_message(&a.id, &Message::user("1"))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .append_message(&a.id, &Message::user("2"))
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        store
            .append_message(&b.id, &Message::user("1"))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .append_message(&a.id, &Message::user("3"))
            .await
            .unwrap(),
        3
    );
    drop(store);
    let store = open(&db.path);
    assert_eq!(
        store
            .append_message(&b.id, &Message::user("2"))
            .await
            .unwrap(),
        2
    );
    assert_eq!(store.get_session(&a.id).await.unwrap().message_count, 3);
    assert_eq!(store.get_session(&b.id).await.unwrap().message_count, 2);
}

#[tokio::test]
async fn appending_bumps_updated_at_but_not_created_at() {
    let db = temp_db();
    let store = open(&db.path);
    let s = session(&store, "/w", "t").await;
    tick().await;
    store
        .append_message(&s.id, &Message::user("hi"))
        .await
        .unwrap();
    let after = store.get_session(&s.id).await.unwrap();
    assert_eq!(after.created_at, s.created_at);
    assert!(after.updated_at > s.updated_at, "{after:?} vs {s:?}");
}

#[tokio::test]
async fn a_message_row_that_is_not_json_is_reported_corrupt_with_session_and_seq() {
    let db = temp_db();
    let store = open(&db.path);
    let s = session(&store, "/w", "t").await;
    for text in ["one", "two", "three"] {
        store
            .append_message(&s.id, &Message::user(text))
            .await
            .unwrap();
    }
    raw(&db.path)
        .execute(
            "UPDATE messages SET body = '{\"role\":\"user\",' WHERE session_id = ?1 AND seq = 2",
            [&s.id],
        )
        .unwrap();
    let err = store.messages(&s.id).await.unwrap_err();
    let StoreError::Corrupt(msg) = &err else {
        panic!("expected Corrupt, got {err:?}")
    };
    assert!(msg.contains(&s.id), "{msg}");
    assert!(msg.contains("message 2"), "{msg}");
    assert!(msg.contains(&db.path.display().to_string()), "{msg}");
}

#[tokio::test]
async fn a_message_row_of_an_unknown_shape_is_reported_corrupt() {
    let db = temp_db();
    let store = open(&db.path);
    let s = session(&store, "/w", "t").await;
    store
        .append_message(&s.id, &Message::user("x"))
        .await
        .unwrap();
    raw(&db.path)
        .execute(
            "UPDATE messages SET body = '{\"role\":\"wizard\"}' WHERE session_id = ?1",
            [&s.id],
        )
        .unwrap();
    assert!(matches!(
        store.messages(&s.id).await,
        Err(StoreError::Corrupt(m)) if m.contains("message 1")
    ));
}

// ---------------------------------------------------------------- sessions

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
    let a = session(&store, "/w", "a").await;
    let b = session(&store, "/w", "b").await;
    // Ids start with the creation time in hex, so two fresh ones share a prefix.
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

// ---------------------------------------------------------------- schema

fn user_version(conn: &rusqlite::Connection) -> i64 {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap()
}

#[tokio::test]
async fn a_fresh_database_gets_the_current_schema_version() {
    let db = temp_db();
    assert!(!db.path.exists());
    let _store = open(&db.path);
    assert!(db.path.exists(), "open creates the file and its parents");
    assert_eq!(user_version(&raw(&db.path)), i64::from(SCHEMA_VERSION));
}

#[tokio::test]
async fn reopening_keeps_the_schema_and_the_data() {
    let db = temp_db();
    let s = {
        let store = open(&db.path);
        session(&store, "/w", "t").await
    };
    // The migration has no IF NOT EXISTS: running it again would fail.
    for _ in 0..3 {
        let store = open(&db.path);
        assert_eq!(store.get_session(&s.id).await.unwrap(), s);
    }
    assert_eq!(user_version(&raw(&db.path)), i64::from(SCHEMA_VERSION));
}

#[tokio::test]
async fn a_database_from_a_newer_rein_is_refused_untouched() {
    let db = temp_db();
    drop(open(&db.path));
    let newer = i64::from(SCHEMA_VERSION) + 1;
    raw(&db.path)
        .pragma_update(None, "user_version", newer)
        .unwrap();
    let err = SqliteStore::open(&db.path).unwrap_err();
    let StoreError::Other(msg) = &err else {
        panic!("expected Other, got {err:?}")
    };
    assert!(msg.contains("created by a newer rein"), "{msg}");
    assert!(msg.contains(&newer.to_string()), "{msg}");
    assert_eq!(user_version(&raw(&db.path)), newer);
}

#[tokio::test]
async fn a_sqlite_file_of_another_program_is_not_adopted() {
    let db = temp_db();
    std::fs::create_dir_all(db.path.parent().unwrap()).unwrap();
    raw(&db.path)
        .execute_batch("CREATE TABLE bookmarks (url TEXT)")
        .unwrap();
    let err = SqliteStore::open(&db.path).unwrap_err();
    assert!(
        matches!(&err, StoreError::Corrupt(m) if m.contains("not a rein database")),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_corrupt_at_open() {
    let db = temp_db();
    std::fs::create_dir_all(db.path.parent().unwrap()).unwrap();
    for garbage in [
        "this is a text file, not a database\n".repeat(200),
        "short text".to_string(),
    ] {
        std::fs::write(&db.path, &garbage).unwrap();
        let err = SqliteStore::open(&db.path).unwrap_err();
        let StoreError::Corrupt(msg) = &err else {
            panic!("expected Corrupt for {} bytes, got {err:?}", garbage.len())
        };
        assert!(msg.contains(&db.path.display().to_string()), "{msg}");
        assert_eq!(std::fs::read_to_string(&db.path).unwrap(), garbage);
    }
}

#[tokio::test]
async fn the_database_runs_in_wal_mode() {
    let db = temp_db();
    let store = open(&db.path);
    let s = session(&store, "/w", "t").await;
    store
        .append_message(&s.id, &Message::user("x"))
        .await
        .unwrap();
    let mode: String = raw(&db.path)
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let mut wal = db.path.clone().into_os_string();
    wal.push("-wal");
    assert!(std::path::Path::new(&wal).exists());
}

// ---------------------------------------------------------------- concurrency

#[tokio::test]
async fn a_write_fails_with_locked_while_another_connection_holds_the_lock() {
    let db = temp_db();
    let timeout = Duration::from_millis(150);
    let store = open_with_timeout(&db.path, timeout);
    let s = session(&store, "/w", "t").await;
    store
        .append_message(&s.id, &Message::user("before"))
        .await
        .unwrap();

    let other = raw(&db.path);
    other.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let started = Instant::now();
    let err = store
        .append_message(&s.id, &Message::user("blocked"))
        .await
        .unwrap_err();
    assert!(started.elapsed() >= timeout, "{:?}", started.elapsed());
    let StoreError::Locked(msg) = &err else {
        panic!("expected Locked, got {err:?}")
    };
    assert!(msg.contains("another rein process"), "{msg}");
    // WAL readers are not blocked by the writer.
    assert_eq!(store.messages(&s.id).await.unwrap().len(), 1);
    other.execute_batch("COMMIT").unwrap();

    // Nothing half-written, and the store works again once the lock is gone.
    assert_eq!(
        store
            .append_message(&s.id, &Message::user("after"))
            .await
            .unwrap(),
        2
    );
    let texts: Vec<String> = store
        .messages(&s.id)
        .await
        .unwrap()
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(texts, ["before", "after"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_from_many_tasks_all_land_with_distinct_seqs() {
    let db = temp_db();
    let store = Arc::new(open(&db.path));
    let s = session(store.as_ref(), "/w", "t").await;
    let (tasks, per_task) = (16, 10);
    let mut handles = Vec::new();
    for t in 0..tasks {
        let store = Arc::clone(&store);
        let id = s.id.clone();
        handles.push(tokio::spawn(async move {
            let mut seqs = Vec::new();
            for i in 0..per_task {
                let m = Message::user(format!("{t}:{i}"));
                seqs.push(store.append_message(&id, &m).await.unwrap());
            }
            seqs
        }));
    }
    let mut all = Vec::new();
    for h in handles {
        let seqs = h.await.unwrap();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
        all.extend(seqs);
    }
    all.sort_unstable();
    let total = (tasks * per_task) as u64;
    assert_eq!(all, (1..=total).collect::<Vec<_>>());

    let stored = store.messages(&s.id).await.unwrap();
    assert_eq!(stored.len() as u64, total);
    let distinct: HashSet<String> = stored.iter().map(Message::text).collect();
    assert_eq!(distinct.len() as u64, total);
    assert_eq!(store.get_session(&s.id).await.unwrap().message_count, total);
}

#[test]
fn many_processes_opening_a_fresh_database_at_once_all_succeed() {
    let db = temp_db();
    let opened: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|_| scope.spawn(|| SqliteStore::open(&db.path).map(drop)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for result in opened {
        result.unwrap();
    }
    assert_eq!(user_version(&raw(&db.path)), i64::from(SCHEMA_VERSION));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_stores_on_one_file_interleave_appends_safely() {
    let db = temp_db();
    let first = open(&db.path);
    let second = open(&db.path);
    let s = session(&first, "/w", "t").await;
    let per_store = 25u64;
    let run = |store: SqliteStore, tag: &'static str, id: String| async move {
        for i in 0..per_store {
            store
                .append_message(&id, &Message::user(format!("{tag}{i}")))
                .await
                .unwrap();
        }
    };
    let a = tokio::spawn(run(first.clone(), "a", s.id.clone()));
    let b = tokio::spawn(run(second.clone(), "b", s.id.clone()));
    a.await.unwrap();
    b.await.unwrap();
    let stored = second.messages(&s.id).await.unwrap();
    assert_eq!(stored.len() as u64, 2 * per_store);
    assert_eq!(
        first.get_session(&s.id).await.unwrap().message_count,
        2 * per_store
    );
}

// ---------------------------------------------------------------- parity

/// What an error is, without the ids that differ between stores.
fn kind(e: Option<StoreError>) -> &'static str {
    match e {
        None => "ok",
        Some(StoreError::NotFound(_)) => "not found",
        Some(StoreError::Ambiguous { .. }) => "ambiguous",
        Some(StoreError::Locked(_)) => "locked",
        Some(StoreError::Corrupt(_)) => "corrupt",
        Some(StoreError::Other(_)) => "other",
    }
}

/// The same script against both stores gives the same observable results.
async fn script(store: &dyn SessionStore) -> Vec<String> {
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
