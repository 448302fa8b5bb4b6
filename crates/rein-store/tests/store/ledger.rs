//! The ledger of model calls and the compactions of a session.

use rein_core::InMemorySessionStore;
use rein_core::{
    CallKind, CompactionRecord, LedgerEntry, LedgerTotals, Message, Pricing, SessionStore,
    StoreError, Usage,
};
use rein_store::SCHEMA_VERSION;

use crate::fixtures::{open, raw, session, temp_db};

pub(crate) fn entry(n: u64, kind: CallKind, cost: Option<f64>) -> LedgerEntry {
    LedgerEntry {
        kind,
        provider: "openai".into(),
        model: "gpt-4.1".into(),
        usage: Usage {
            input_tokens: 1000 * n,
            output_tokens: 10 * n,
            cached_input_tokens: 100 * n,
            reasoning_tokens: n,
        },
        cost_usd: cost,
        ok: kind != CallKind::Retry,
        duration_ms: 250 * n,
        at: 1_700_000_000_000 + n as i64,
    }
}

fn compaction(upto: u64, text: &str, summarized: bool) -> CompactionRecord {
    CompactionRecord {
        upto_seq: upto,
        summary: Message::user(text),
        summarized,
        at: 1_700_000_000_000 + upto as i64,
    }
}

#[tokio::test]
async fn ledger_entries_round_trip_in_call_order() {
    let db = temp_db();
    let store = open(&db.path);
    let s = session(&store, "/w", "t").await;
    assert_eq!(store.ledger(&s.id).await.unwrap(), (vec![], 0));
    let sent = vec![
        entry(1, CallKind::Turn, Some(0.0123)),
        entry(2, CallKind::Retry, None),
        entry(3, CallKind::Compaction, Some(0.5)),
        entry(4, CallKind::Title, Some(0.0)),
        entry(5, CallKind::Turn, Some(1e-9)),
    ];
    for e in &sent {
        store.add_ledger(&s.id, e).await.unwrap();
    }
    assert_eq!(store.ledger(&s.id).await.unwrap(), (sent.clone(), 0));
    // And after reopening the file.
    drop(store);
    let store = open(&db.path);
    assert_eq!(store.ledger(&s.id).await.unwrap(), (sent, 0));
}

#[tokio::test]
async fn ledgers_and_compactions_are_per_session() {
    let db = temp_db();
    let store = open(&db.path);
    let a = session(&store, "/w", "a").await;
    let b = session(&store, "/w", "b").await;
    store
        .add_ledger(&a.id, &entry(1, CallKind::Turn, None))
        .await
        .unwrap();
    store
        .add_ledger(&b.id, &entry(2, CallKind::Turn, None))
        .await
        .unwrap();
    store
        .add_ledger(&a.id, &entry(3, CallKind::Turn, None))
        .await
        .unwrap();
    store
        .add_compaction(&b.id, &compaction(4, "b", true))
        .await
        .unwrap();
    let (la, _) = store.ledger(&a.id).await.unwrap();
    let (lb, _) = store.ledger(&b.id).await.unwrap();
    assert_eq!(
        la,
        [
            entry(1, CallKind::Turn, None),
            entry(3, CallKind::Turn, None)
        ]
    );
    assert_eq!(lb, [entry(2, CallKind::Turn, None)]);
    assert!(store.compactions(&a.id).await.unwrap().is_empty());
    assert_eq!(store.compactions(&b.id).await.unwrap().len(), 1);
}

#[tokio::test]
async fn compactions_round_trip_oldest_first_with_upto_beside_the_body() {
    let db = temp_db();
    let store = open(&db.path);
    let s = session(&store, "/w", "t").await;
    let sent = vec![
        compaction(12, "summary one\n- task: x", true),
        compaction(30, "dropped the oldest turns", false),
        compaction(31, "héllo ✓", true),
    ];
    for c in &sent {
        store.add_compaction(&s.id, c).await.unwrap();
    }
    assert_eq!(store.compactions(&s.id).await.unwrap(), sent);
    let conn = raw(&db.path);
    let uptos: Vec<i64> = conn
        .prepare("SELECT upto_seq FROM compactions WHERE session_id = ?1 ORDER BY seq")
        .unwrap()
        .query_map([&s.id], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(uptos, [12, 30, 31]);
}

#[tokio::test]
async fn deleting_a_session_deletes_its_ledger_and_compactions() {
    let db = temp_db();
    let store = open(&db.path);
    let gone = session(&store, "/w", "gone").await;
    let kept = session(&store, "/w", "kept").await;
    for id in [&gone.id, &kept.id] {
        store
            .add_ledger(id, &entry(1, CallKind::Turn, Some(0.1)))
            .await
            .unwrap();
        store
            .add_compaction(id, &compaction(2, "s", true))
            .await
            .unwrap();
    }
    store.delete_session(&gone.id).await.unwrap();
    let conn = raw(&db.path);
    for table in ["ledger", "compactions"] {
        let left: Vec<String> = conn
            .prepare(&format!("SELECT session_id FROM {table}"))
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(left, std::slice::from_ref(&kept.id), "{table}");
    }
    assert!(matches!(
        store.ledger(&gone.id).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.compactions(&gone.id).await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(store.ledger(&kept.id).await.unwrap().0.len(), 1);
}

#[tokio::test]
async fn unknown_sessions_are_not_found_for_the_ledger_and_compactions() {
    let db = temp_db();
    let store = open(&db.path);
    let e = entry(1, CallKind::Turn, None);
    let c = compaction(1, "s", true);
    assert!(matches!(
        store.add_ledger("nope", &e).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.ledger("nope").await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.add_compaction("nope", &c).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(
        store.compactions("nope").await,
        Err(StoreError::NotFound(_))
    ));
}

#[tokio::test]
async fn a_corrupted_ledger_row_is_skipped_and_counted_not_fatal() {
    let db = temp_db();
    let store = open(&db.path);
    let s = session(&store, "/w", "t").await;
    store
        .add_ledger(&s.id, &entry(1, CallKind::Turn, Some(0.25)))
        .await
        .unwrap();
    {
        let conn = raw(&db.path);
        for (seq, body) in [
            (2, rusqlite::types::Value::Text("this is not json".into())),
            (
                3,
                rusqlite::types::Value::Text("{\"kind\": \"turn\"}".into()),
            ),
            (4, rusqlite::types::Value::Blob(vec![0xff, 0xfe, 0x00])),
            (5, rusqlite::types::Value::Integer(7)),
        ] {
            conn.execute(
                "INSERT INTO ledger (session_id, seq, body) VALUES (?1, ?2, ?3)",
                rusqlite::params![s.id, seq, body],
            )
            .unwrap();
        }
    }
    store
        .add_ledger(&s.id, &entry(6, CallKind::Title, None))
        .await
        .unwrap();
    let (entries, skipped) = store.ledger(&s.id).await.unwrap();
    assert_eq!(
        entries,
        [
            entry(1, CallKind::Turn, Some(0.25)),
            entry(6, CallKind::Title, None)
        ]
    );
    assert_eq!(skipped, 4);
}

#[tokio::test]
async fn a_corrupted_compaction_row_is_reported_corrupt() {
    let db = temp_db();
    let store = open(&db.path);
    let s = session(&store, "/w", "t").await;
    raw(&db.path)
        .execute(
            "INSERT INTO compactions (session_id, seq, upto_seq, body) VALUES (?1, 1, 3, 'garbage')",
            [&s.id],
        )
        .unwrap();
    let err = store.compactions(&s.id).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::Corrupt(m) if m.contains(&s.id) && m.contains("compaction 1")),
        "{err:?}"
    );
}

#[tokio::test]
async fn ledger_totals_are_the_sum_of_the_stored_calls() {
    let db = temp_db();
    let store = open(&db.path);
    let s = session(&store, "/w", "t").await;
    let pricing = Pricing {
        input: 2.0,
        cached_input: 0.5,
        output: 8.0,
    };
    let mut expected_cost = 0.0;
    let mut expected_input = 0;
    let mut expected_cached = 0;
    let mut expected_output = 0;
    let mut expected_reasoning = 0;
    for n in 1..=6u64 {
        let mut e = entry(n, CallKind::Turn, None);
        // Every third call has unknown prices.
        if n % 3 != 0 {
            let cost = pricing.cost(&e.usage);
            e.cost_usd = Some(cost);
            expected_cost += cost;
        }
        expected_input += e.usage.input_tokens;
        expected_cached += e.usage.cached_input_tokens;
        expected_output += e.usage.output_tokens;
        expected_reasoning += e.usage.reasoning_tokens;
        store.add_ledger(&s.id, &e).await.unwrap();
    }
    let (entries, skipped) = store.ledger(&s.id).await.unwrap();
    assert_eq!(skipped, 0);
    let totals = LedgerTotals::of(&entries);
    assert_eq!(totals.calls, 6);
    assert_eq!(totals.unpriced_calls, 2);
    assert_eq!(totals.input_tokens, expected_input);
    assert_eq!(totals.cached_input_tokens, expected_cached);
    assert_eq!(totals.output_tokens, expected_output);
    assert_eq!(totals.reasoning_tokens, expected_reasoning);
    assert!(
        (totals.known_cost_usd - expected_cost).abs() < 1e-12,
        "{totals:?}"
    );
    // One call by hand: 1000 input of which 100 cached, 10 output.
    let one = pricing.cost(&entry(1, CallKind::Turn, None).usage);
    assert!((one - (900.0 * 2.0 + 100.0 * 0.5 + 10.0 * 8.0) / 1e6).abs() < 1e-15);
}

/// The schema rein wrote at version 2, frozen: what an existing user's
/// database looks like before this build first opens it.
const SCHEMA_V2: &str = "
    CREATE TABLE sessions (
        id            TEXT PRIMARY KEY NOT NULL,
        workspace     TEXT NOT NULL,
        title         TEXT NOT NULL,
        model         TEXT NOT NULL,
        created_at    INTEGER NOT NULL,
        updated_at    INTEGER NOT NULL,
        message_count INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX sessions_by_workspace ON sessions (workspace, updated_at, id);
    CREATE INDEX sessions_by_update ON sessions (updated_at, id);
    CREATE TABLE messages (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq        INTEGER NOT NULL,
        role       TEXT NOT NULL,
        body       TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (session_id, seq)
    );
    CREATE TABLE todos (
        session_id TEXT PRIMARY KEY NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        body       TEXT NOT NULL
    );
    CREATE TABLE grants (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq        INTEGER NOT NULL,
        rule       TEXT NOT NULL,
        PRIMARY KEY (session_id, seq),
        UNIQUE (session_id, rule)
    );
    PRAGMA user_version = 2;
";

#[tokio::test]
async fn a_version_2_database_migrates_keeping_its_data() {
    let db = temp_db();
    std::fs::create_dir_all(db.path.parent().unwrap()).unwrap();
    let hello = Message::user("hello from version 2");
    {
        let conn = raw(&db.path);
        conn.execute_batch(SCHEMA_V2).unwrap();
        conn.execute(
            "INSERT INTO sessions (id, workspace, title, model, created_at, updated_at, message_count)
             VALUES ('0000000000abcdef', '/old', 'old session', 'gpt-4o', 10, 20, 1)",
            [],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO messages (session_id, seq, role, body, created_at)
             VALUES ('0000000000abcdef', 1, 'user', ?1, 20)",
            [serde_json::to_string(&hello).unwrap()],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO grants (session_id, seq, rule) VALUES ('0000000000abcdef', 1, 'bash(ls)')",
            [],
        )
        .unwrap();
    }
    let store = open(&db.path);
    let version: i64 = raw(&db.path)
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, i64::from(SCHEMA_VERSION));
    let id = "0000000000abcdef";
    let info = store.get_session(id).await.unwrap();
    assert_eq!(
        (info.title.as_str(), info.model.as_str(), info.message_count),
        ("old session", "gpt-4o", 1)
    );
    assert_eq!(store.messages(id).await.unwrap(), [hello]);
    let rule: rein_core::Rule = "bash(ls)".parse().unwrap();
    assert_eq!(store.grants(id).await.unwrap(), (vec![rule], 0));
    assert_eq!(store.ledger(id).await.unwrap(), (vec![], 0));
    assert!(store.compactions(id).await.unwrap().is_empty());
    store
        .add_ledger(id, &entry(1, CallKind::Turn, Some(0.01)))
        .await
        .unwrap();
    store
        .add_compaction(id, &compaction(1, "s", true))
        .await
        .unwrap();
    assert_eq!(store.ledger(id).await.unwrap().0.len(), 1);
    assert_eq!(store.compactions(id).await.unwrap().len(), 1);
}

/// The same calls give the same results on both stores.
pub(crate) async fn ledger_script(store: &dyn SessionStore) -> Vec<String> {
    let s = session(store, "/w", "t").await;
    let mut log = Vec::new();
    for n in 1..=3 {
        store
            .add_ledger(&s.id, &entry(n, CallKind::Turn, Some(n as f64)))
            .await
            .unwrap();
    }
    store
        .add_compaction(&s.id, &compaction(5, "a", true))
        .await
        .unwrap();
    store
        .add_compaction(&s.id, &compaction(9, "b", false))
        .await
        .unwrap();
    log.push(format!("{:?}", store.ledger(&s.id).await.unwrap()));
    log.push(format!("{:?}", store.compactions(&s.id).await.unwrap()));
    store.delete_session(&s.id).await.unwrap();
    log.push(format!("{:?}", store.ledger(&s.id).await.is_err()));
    log.push(format!("{:?}", store.compactions(&s.id).await.is_err()));
    log
}

#[tokio::test]
async fn sqlite_ledger_behaves_like_memory_store() {
    let db = temp_db();
    let sqlite = ledger_script(&open(&db.path)).await;
    let memory = ledger_script(&InMemorySessionStore::new()).await;
    assert_eq!(sqlite, memory);
}

#[tokio::test]
async fn huge_reported_usage_round_trips_and_the_totals_saturate_instead_of_wrapping() {
    let db = temp_db();
    let store = open(&db.path);
    let s = session(&store, "/w", "t").await;
    let mut huge = entry(1, CallKind::Turn, Some(f64::MAX));
    huge.usage = Usage {
        input_tokens: u64::MAX - 1,
        output_tokens: u64::MAX,
        cached_input_tokens: u64::MAX,
        reasoning_tokens: u64::MAX / 2 + 1,
    };
    for _ in 0..3 {
        store.add_ledger(&s.id, &huge).await.unwrap();
    }
    let (entries, bad) = store.ledger(&s.id).await.unwrap();
    assert_eq!(bad, 0);
    assert_eq!(entries[0].usage, huge.usage, "u64 values survive the store");
    let t = LedgerTotals::of(&entries);
    assert_eq!(t.calls, 3);
    assert_eq!(t.input_tokens, u64::MAX);
    assert_eq!(t.output_tokens, u64::MAX);
    assert_eq!(t.cached_input_tokens, u64::MAX);
    assert_eq!(t.reasoning_tokens, u64::MAX);
    assert!(t.known_cost_usd.is_finite(), "{}", t.known_cost_usd);
    let mut sum = Usage::default();
    sum.add(&huge.usage);
    sum.add(&huge.usage);
    assert_eq!(sum.total(), u64::MAX);
}

#[cfg(unix)]
#[tokio::test]
async fn the_sessions_database_and_its_wal_files_are_private_to_the_user() {
    use std::os::unix::fs::PermissionsExt;
    let db = temp_db();
    let store = open(&db.path);
    session(&store, "/w", "t").await;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(db.path.parent().unwrap()), 0o700);
    for suffix in ["", "-wal", "-shm"] {
        let p = std::path::PathBuf::from(format!("{}{suffix}", db.path.display()));
        assert!(p.exists(), "{} missing", p.display());
        assert_eq!(mode(&p), 0o600, "{}", p.display());
    }
    drop(store);
    for suffix in ["", "-wal", "-shm"] {
        let p = std::path::PathBuf::from(format!("{}{suffix}", db.path.display()));
        if p.exists() {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
    }
    let _store = open(&db.path);
    assert_eq!(mode(&db.path), 0o600, "an old 0644 database is tightened");
}

#[tokio::test]
async fn grants_come_back_as_rules_and_a_stored_row_that_is_no_rule_is_skipped_and_counted() {
    let db = temp_db();
    let store = open(&db.path);
    let id = session(&store, "/w", "t").await.id;
    let rule: rein_core::Rule = "bash(cargo test*)".parse().unwrap();
    store.add_grant(&id, &rule).await.unwrap();
    store.add_grant(&id, &rule).await.unwrap();
    raw(&db.path)
        .execute(
            "INSERT INTO grants (session_id, seq, rule) VALUES (?1, 99, 'bash(')",
            [&id],
        )
        .unwrap();
    assert_eq!(store.grants(&id).await.unwrap(), (vec![rule], 1));
}
