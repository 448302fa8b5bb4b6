//! `PgStore` and `PgMemory` against a real PostgreSQL (see `server`): the
//! shared session-store checks, what only SQL can show (stored forms,
//! damaged rows, the schema), concurrency, leases, connection errors and
//! long-term memory. Without a server each test prints `skipped: ...`.

mod contract;
mod controls;
mod errors;
mod events;
mod leases;
mod memory;
mod server;
mod tls;

use std::sync::Arc;

use rein_core::{InMemorySessionStore, Message, SessionStore, StoreError};
use rein_store::{PG_SCHEMA_VERSION, PgStore};

use crate::fixtures::{every_kind_of_message, session};
use server::raw;

/// A fresh database for this test and a store on it, or return (skipped).
macro_rules! pg_store {
    ($name:expr) => {{
        let Some(url) = $crate::postgres::server::db_or_skip($name).await else {
            return;
        };
        let store = rein_store::PgStore::connect(&url)
            .await
            .unwrap_or_else(|e| panic!("connecting to {url}: {e}"));
        (url, store)
    }};
}
pub(crate) use pg_store;

#[tokio::test]
async fn pg_store_passes_the_shared_session_store_checks() {
    let (_url, store) = pg_store!("shared_checks");
    contract::all_on_one_store(&store, "/pg").await;
}

#[tokio::test]
async fn sqlite_store_passes_the_same_shared_checks() {
    let db = crate::fixtures::temp_db();
    let store = crate::fixtures::open(&db.path);
    contract::all_on_one_store(&store, "/sqlite").await;
}

#[tokio::test]
async fn pg_store_behaves_like_the_memory_store_in_the_parity_scripts() {
    let (_url, pg) = pg_store!("parity");
    assert_eq!(
        crate::parity::script(&pg).await,
        crate::parity::script(&InMemorySessionStore::new()).await
    );
    assert_eq!(
        crate::ledger::ledger_script(&pg).await,
        crate::ledger::ledger_script(&InMemorySessionStore::new()).await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_through_one_pool_get_distinct_seqs_and_lose_nothing() {
    let (_url, store) = pg_store!("concurrent_one_pool");
    contract::concurrent_appends_all_land_with_distinct_seqs(Arc::new(store)).await;
}

/// Ledger rows are added without a lock and retried under one on a clash:
/// many writers on one session still lose nothing and number 1..=n.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_ledger_writes_to_one_session_all_land() {
    let (url, store) = pg_store!("concurrent_ledger");
    let s = session(&store, "/w", "t").await;
    let mut handles = Vec::new();
    for t in 0..16u64 {
        let (store, id) = (store.clone(), s.id.clone());
        handles.push(tokio::spawn(async move {
            for i in 0..10u64 {
                let e = crate::ledger::entry(t * 10 + i + 1, rein_core::CallKind::Turn, None);
                store.add_ledger(&id, &e).await.unwrap();
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    let (entries, skipped) = store.ledger(&s.id).await.unwrap();
    assert_eq!((entries.len(), skipped), (160, 0));
    let mut durations: Vec<u64> = entries.iter().map(|e| e.duration_ms).collect();
    durations.sort_unstable();
    assert_eq!(durations, (1..=160).map(|n| 250 * n).collect::<Vec<_>>());
    let seqs: Vec<i64> = raw(&url)
        .await
        .query("SELECT seq FROM ledger ORDER BY seq", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(seqs, (1..=160).collect::<Vec<i64>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn appenders_on_separate_connections_interleave_without_clashing() {
    let (url, first) = pg_store!("separate_stores");
    let s = session(&first, "/w", "t").await;
    let stores: Vec<PgStore> = {
        let mut v = vec![first];
        for _ in 0..3 {
            v.push(PgStore::connect(&url).await.unwrap());
        }
        v
    };
    let per_store = 25u64;
    let mut handles = Vec::new();
    for (n, store) in stores.iter().enumerate() {
        let (store, id) = (store.clone(), s.id.clone());
        handles.push(tokio::spawn(async move {
            for i in 0..per_store {
                let m = Message::user(format!("{n}:{i}"));
                store.append_message(&id, &m).await.unwrap();
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    let total = per_store * stores.len() as u64;
    let stored = stores[1].messages(&s.id).await.unwrap();
    assert_eq!(stored.len() as u64, total);
    let seqs: Vec<i64> = raw(&url)
        .await
        .query(
            "SELECT seq FROM messages WHERE session_id = $1 ORDER BY seq",
            &[&s.id],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(seqs, (1..=total as i64).collect::<Vec<_>>());
}

#[tokio::test]
async fn messages_are_stored_as_their_serde_json_text_with_the_role_beside_them() {
    let (url, store) = pg_store!("stored_form");
    let s = session(&store, "/w", "t").await;
    let sent = every_kind_of_message();
    for m in &sent {
        store.append_message(&s.id, m).await.unwrap();
    }
    let rows = raw(&url)
        .await
        .query(
            "SELECT role, body FROM messages WHERE session_id = $1 ORDER BY seq",
            &[&s.id],
        )
        .await
        .unwrap();
    assert_eq!(rows.len(), sent.len());
    for (row, m) in rows.iter().zip(&sent) {
        assert_eq!(row.get::<_, &str>(0), m.role().as_str());
        assert_eq!(row.get::<_, &str>(1), serde_json::to_string(m).unwrap());
    }
}

#[tokio::test]
async fn damaged_rows_are_corrupt_where_they_decide_what_the_model_sees_and_skipped_elsewhere() {
    let (url, store) = pg_store!("damaged_rows");
    let s = session(&store, "/w", "t").await;
    for text in ["one", "two", "three"] {
        store
            .append_message(&s.id, &Message::user(text))
            .await
            .unwrap();
    }
    store.set_todos(&s.id, &[]).await.unwrap();
    store
        .add_ledger(&s.id, &contract::ledger_entry(1))
        .await
        .unwrap();
    store
        .add_ledger(&s.id, &contract::ledger_entry(2))
        .await
        .unwrap();
    store
        .add_compaction(&s.id, &contract::compaction(2, "s"))
        .await
        .unwrap();
    let rule: rein_core::Rule = "bash(cargo test*)".parse().unwrap();
    store.add_grant(&s.id, &rule).await.unwrap();
    let db = raw(&url).await;
    let id = s.id.as_str();
    for sql in [
        "UPDATE messages SET body = '{\"role\":\"user\",' WHERE session_id = $1 AND seq = 2",
        "UPDATE todos SET body = 'nope' WHERE session_id = $1",
        "UPDATE ledger SET body = '{}' WHERE session_id = $1 AND seq = 1",
        "UPDATE compactions SET body = '[' WHERE session_id = $1",
        "INSERT INTO grants (session_id, seq, rule) VALUES ($1, 99, 'bash(')",
    ] {
        db.execute(sql, &[&id]).await.unwrap();
    }
    let corrupt = |r: Result<String, StoreError>, wants: &str| match r {
        Err(StoreError::Corrupt(m)) => {
            assert!(m.contains(id) && m.contains(wants), "{m}");
        }
        other => panic!("expected Corrupt naming {wants}, got {other:?}"),
    };
    corrupt(
        store.messages(id).await.map(|m| format!("{m:?}")),
        "message 2",
    );
    corrupt(store.todos(id).await.map(|t| format!("{t:?}")), "todos");
    corrupt(
        store.compactions(id).await.map(|c| format!("{c:?}")),
        "compaction 1",
    );
    assert_eq!(
        store.ledger(id).await.unwrap(),
        (vec![contract::ledger_entry(2)], 1)
    );
    assert_eq!(store.grants(id).await.unwrap(), (vec![rule], 1));
}

#[tokio::test]
async fn sessions_with_the_same_update_time_list_by_id_descending() {
    let (url, store) = pg_store!("same_update_time");
    for i in 0..3 {
        session(&store, "/w", &format!("{i}")).await;
    }
    raw(&url)
        .await
        .execute("UPDATE sessions SET updated_at = 42", &[])
        .await
        .unwrap();
    let ids: Vec<String> = store
        .list_sessions(None, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(ids, sorted);
}

#[tokio::test]
async fn deleting_a_session_leaves_no_row_of_it_in_any_table() {
    let (url, store) = pg_store!("delete_rows");
    let gone = session(&store, "/w", "gone").await;
    let kept = session(&store, "/w", "kept").await;
    for s in [&gone, &kept] {
        store
            .append_message(&s.id, &Message::user("x"))
            .await
            .unwrap();
        store.set_todos(&s.id, &[]).await.unwrap();
        store
            .add_grant(&s.id, &"bash(ls)".parse().unwrap())
            .await
            .unwrap();
        store
            .add_ledger(&s.id, &contract::ledger_entry(1))
            .await
            .unwrap();
        store
            .add_compaction(&s.id, &contract::compaction(1, "s"))
            .await
            .unwrap();
    }
    let lease = store
        .acquire_lease(&gone.id, "server-a", std::time::Duration::from_secs(60))
        .await
        .unwrap();
    store.delete_session(&gone.id).await.unwrap();
    let db = raw(&url).await;
    for table in [
        "messages",
        "todos",
        "grants",
        "ledger",
        "compactions",
        "session_leases",
    ] {
        let count = |id: &str| {
            let sql = format!("SELECT COUNT(*) FROM {table} WHERE session_id = $1");
            let (db, id) = (&db, id.to_string());
            async move { db.query_one(&sql, &[&id]).await.unwrap().get::<_, i64>(0) }
        };
        assert_eq!(count(&gone.id).await, 0, "{table} of the deleted session");
        let kept_rows = count(&kept.id).await;
        assert_eq!(kept_rows, i64::from(table != "session_leases"), "{table}");
    }
    assert!(matches!(
        lease.renew().await,
        Err(rein_store::LeaseError::Lost {
            now_held_by: None,
            ..
        })
    ));
}

#[tokio::test]
async fn a_fresh_database_gets_the_current_schema_version_and_reconnecting_keeps_the_data() {
    let (url, store) = pg_store!("schema_version");
    let s = session(&store, "/w", "t").await;
    for _ in 0..3 {
        let again = PgStore::connect(&url).await.unwrap();
        assert_eq!(again.get_session(&s.id).await.unwrap(), s);
    }
    let version: i32 = raw(&url)
        .await
        .query_one(
            "SELECT version FROM rein_schema WHERE component = 'sessions'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(version, PG_SCHEMA_VERSION as i32);
}

#[tokio::test]
async fn a_database_from_a_newer_rein_is_refused_untouched() {
    let (url, store) = pg_store!("newer_schema");
    drop(store);
    let newer = PG_SCHEMA_VERSION as i32 + 1;
    let db = raw(&url).await;
    db.execute(
        "UPDATE rein_schema SET version = $1 WHERE component = 'sessions'",
        &[&newer],
    )
    .await
    .unwrap();
    let err = PgStore::connect(&url).await.unwrap_err();
    let StoreError::Other(msg) = &err else {
        panic!("expected Other, got {err:?}")
    };
    assert!(msg.contains("created by a newer rein"), "{msg}");
    assert!(msg.contains(&newer.to_string()), "{msg}");
    let now: i32 = db
        .query_one(
            "SELECT version FROM rein_schema WHERE component = 'sessions'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(now, newer);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_clients_migrating_a_fresh_database_at_once_all_succeed() {
    let Some(url) = server::db_or_skip("concurrent_migration").await else {
        return;
    };
    // Each store has its own connections: to the server these are as many
    // separate clients as separate processes would be.
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(async move { PgStore::connect(&url).await.map(drop) })
        })
        .collect();
    for h in handles {
        h.await.unwrap().unwrap();
    }
    let db = raw(&url).await;
    let version: i32 = db
        .query_one(
            "SELECT version FROM rein_schema WHERE component = 'sessions'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(version, PG_SCHEMA_VERSION as i32);
    let store = rein_store::PgStore::connect(&url).await.unwrap();
    let s = session(&store, "/w", "t").await;
    assert_eq!(
        store
            .append_message(&s.id, &Message::user("x"))
            .await
            .unwrap(),
        1
    );
}
