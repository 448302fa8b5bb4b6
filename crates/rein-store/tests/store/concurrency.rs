//! Concurrency: locks reported as locked, appends from many tasks,
//! processes and stores on one file.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rein_core::{Message, SessionStore, StoreError};
use rein_store::{SCHEMA_VERSION, SqliteStore};

use crate::fixtures::{open, open_with_timeout, raw, session, temp_db, user_version};

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
