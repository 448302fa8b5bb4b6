//! Messages in `SqliteStore`: exact round trips, storage as JSON, seq
//! numbers, timestamps, and corrupt rows reported with session and seq.

use rein_core::{Message, SessionStore, StoreError};

use crate::fixtures::{every_kind_of_message, open, raw, session, temp_db, tick};

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
