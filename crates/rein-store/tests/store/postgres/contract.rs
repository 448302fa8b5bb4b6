//! What every durable `SessionStore` must do, written once over
//! `&dyn SessionStore` and run against both the SQLite and the PostgreSQL
//! store. Each check makes its own sessions, so they can share a store.

use std::collections::HashSet;
use std::sync::Arc;

use rein_core::{
    CallKind, CompactionRecord, LedgerEntry, Message, NewSession, Rule, SessionStore, StopReason,
    StoreError, TodoStatus, Usage,
};

use crate::fixtures::{every_kind_of_message, session, tick, todo, twins};

pub fn ledger_entry(n: u64) -> LedgerEntry {
    LedgerEntry {
        kind: CallKind::Turn,
        provider: "openai".into(),
        model: "gpt-4.1".into(),
        usage: Usage {
            input_tokens: 1000 * n,
            output_tokens: 10 * n,
            cached_input_tokens: 100 * n,
            reasoning_tokens: n,
        },
        cost_usd: Some(0.001 * n as f64),
        ok: true,
        duration_ms: 250 * n,
        at: 1_700_000_000_000 + n as i64,
    }
}

pub fn compaction(upto: u64, text: &str) -> CompactionRecord {
    CompactionRecord {
        upto_seq: upto,
        summary: Message::user(text),
        summarized: true,
        at: 1_700_000_000_000 + upto as i64,
    }
}

fn not_found<T: std::fmt::Debug>(r: Result<T, StoreError>) -> bool {
    matches!(r, Err(StoreError::NotFound(_)))
}

pub async fn every_kind_of_message_round_trips_exactly(store: &dyn SessionStore) {
    let s = session(store, "/w", "t").await;
    let sent = every_kind_of_message();
    for (i, m) in sent.iter().enumerate() {
        let seq = store.append_message(&s.id, m).await.unwrap();
        assert_eq!(seq, i as u64 + 1, "seq of message {i}");
    }
    assert_eq!(store.messages(&s.id).await.unwrap(), sent);
    let info = store.get_session(&s.id).await.unwrap();
    assert_eq!(info.message_count, sent.len() as u64, "{info:?}");
}

pub async fn seq_numbers_count_from_one_per_session(store: &dyn SessionStore) {
    let a = session(store, "/w", "a").await;
    let b = session(store, "/w", "b").await;
    let mut got = Vec::new();
    for (id, text) in [
        (&a.id, "1"),
        (&a.id, "2"),
        (&b.id, "1"),
        (&a.id, "3"),
        (&b.id, "2"),
    ] {
        got.push(
            store
                .append_message(id, &Message::user(text))
                .await
                .unwrap(),
        );
    }
    assert_eq!(got, [1, 2, 1, 3, 2]);
    assert_eq!(store.get_session(&a.id).await.unwrap().message_count, 3);
    assert_eq!(store.get_session(&b.id).await.unwrap().message_count, 2);
}

pub async fn a_new_session_is_stored_as_created_and_appending_bumps_updated_at(
    store: &dyn SessionStore,
) {
    let s = session(store, "/work/a", "first").await;
    assert_eq!(s.message_count, 0);
    assert_eq!(s.created_at, s.updated_at);
    assert_eq!(s.last_stop, None);
    assert_eq!(store.get_session(&s.id).await.unwrap(), s);
    assert!(store.messages(&s.id).await.unwrap().is_empty());
    tick().await;
    store
        .append_message(&s.id, &Message::user("hi"))
        .await
        .unwrap();
    let after = store.get_session(&s.id).await.unwrap();
    assert_eq!(after.created_at, s.created_at);
    assert!(after.updated_at > s.updated_at, "{after:?} vs {s:?}");
}

pub async fn title_model_last_stop_and_parent_persist(store: &dyn SessionStore) {
    let parent = session(store, "/w", "parent").await;
    let child = store
        .create_session(NewSession {
            workspace: "/w".into(),
            title: "child".into(),
            model: "m".into(),
            parent_id: Some(parent.id.clone()),
        })
        .await
        .unwrap();
    store.set_title(&child.id, "new title").await.unwrap();
    store.set_model(&child.id, "other/model").await.unwrap();
    store
        .set_last_stop(&child.id, StopReason::Completed)
        .await
        .unwrap();
    let got = store.get_session(&child.id).await.unwrap();
    assert_eq!(got.title, "new title");
    assert_eq!(got.model, "other/model");
    assert_eq!(got.last_stop, Some(StopReason::Completed));
    assert_eq!(got.parent_id.as_deref(), Some(parent.id.as_str()));
    assert_eq!(store.get_session(&parent.id).await.unwrap().parent_id, None);
}

/// Sessions newest first in `workspace`; needs a workspace of its own.
pub async fn sessions_list_newest_first_filtered_and_limited(
    store: &dyn SessionStore,
    workspace: &str,
) {
    let a = session(store, workspace, "a").await;
    tick().await;
    let b = session(store, workspace, "b").await;
    tick().await;
    let c = session(store, workspace, "c").await;
    let other = format!("{workspace}-other");
    session(store, &other, "elsewhere").await;
    tick().await;
    store
        .append_message(&a.id, &Message::user("again"))
        .await
        .unwrap();
    let listed = store.list_sessions(Some(workspace), 10).await.unwrap();
    let ids: Vec<&str> = listed.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, [a.id.as_str(), c.id.as_str(), b.id.as_str()]);
    assert_eq!(listed[0].message_count, 1);
    assert!(
        listed.iter().all(|s| s.workspace == workspace),
        "{listed:?}"
    );
    let two = store.list_sessions(Some(workspace), 2).await.unwrap();
    assert_eq!(two.len(), 2);
    assert_eq!(
        store.list_sessions(Some(&other), 10).await.unwrap().len(),
        1
    );
    assert!(
        store
            .list_sessions(Some("/nowhere-at-all"), 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.list_sessions(None, 0).await.unwrap().is_empty());
    let all = store.list_sessions(None, usize::MAX).await.unwrap();
    assert!(all.len() >= 4, "{}", all.len());
    assert!(
        all.windows(2)
            .all(|w| (w[0].updated_at, &w[0].id) >= (w[1].updated_at, &w[1].id)),
        "not newest first: {all:?}"
    );
}

pub async fn prefixes_find_one_session_and_shared_ones_are_ambiguous(store: &dyn SessionStore) {
    let (a, b) = twins(store, "/w").await;
    // All but the last character: unique unless two ids share 15 of 16.
    assert_eq!(store.get_session(&a.id[..15]).await.unwrap().id, a.id);
    let shared: String =
        a.id.chars()
            .zip(b.id.chars())
            .take_while(|(x, y)| x == y)
            .map(|(x, _)| x)
            .collect();
    assert!(!shared.is_empty(), "{} / {}", a.id, b.id);
    let err = store.get_session(&shared).await.unwrap_err();
    let StoreError::Ambiguous { prefix, candidates } = &err else {
        panic!("expected Ambiguous for {shared:?}, got {err:?}")
    };
    assert_eq!(prefix, &shared);
    // Sessions made earlier in this store may share the prefix too; the
    // list is cut after the first few then.
    let cut = candidates.last().is_some_and(|c| c == "…");
    let listed = &candidates[..candidates.len() - usize::from(cut)];
    assert!(
        listed.iter().all(|c| c.starts_with(&shared)),
        "{candidates:?}"
    );
    assert!(
        cut || (candidates.contains(&a.id) && candidates.contains(&b.id)),
        "{candidates:?}"
    );
    assert!(listed.windows(2).all(|w| w[0] <= w[1]), "{candidates:?}");
    assert!(matches!(
        store.delete_session(&shared).await,
        Err(StoreError::Ambiguous { .. })
    ));
    store.delete_session(&b.id[..15]).await.unwrap();
    assert!(not_found(store.get_session(&b.id).await));
    assert_eq!(store.get_session(&a.id).await.unwrap().id, a.id);
    // Wildcard characters are plain text in a prefix.
    for wild in ["%", "_", "*", "?", "["] {
        assert!(not_found(store.get_session(wild).await), "{wild}");
    }
}

pub async fn unknown_ids_are_not_found_everywhere(store: &dyn SessionStore) {
    let s = session(store, "/w", "t").await;
    let rule: Rule = "bash(ls)".parse().unwrap();
    for id in ["zzz", &s.id[..10]] {
        // Only lookups take a prefix; the other methods want the full id.
        if id == "zzz" {
            assert!(not_found(store.get_session(id).await), "get {id}");
            assert!(not_found(store.delete_session(id).await), "delete {id}");
        }
        assert!(not_found(store.set_title(id, "x").await), "title {id}");
        assert!(not_found(store.set_model(id, "x").await), "model {id}");
        assert!(
            not_found(store.set_last_stop(id, StopReason::Completed).await),
            "stop {id}"
        );
        assert!(
            not_found(store.append_message(id, &Message::user("x")).await),
            "append {id}"
        );
        assert!(not_found(store.messages(id).await), "messages {id}");
        assert!(not_found(store.set_todos(id, &[]).await), "set todos {id}");
        assert!(not_found(store.todos(id).await), "todos {id}");
        assert!(
            not_found(store.add_grant(id, &rule).await),
            "add grant {id}"
        );
        assert!(not_found(store.grants(id).await), "grants {id}");
        assert!(
            not_found(store.add_ledger(id, &ledger_entry(1)).await),
            "add ledger {id}"
        );
        assert!(not_found(store.ledger(id).await), "ledger {id}");
        assert!(
            not_found(store.add_compaction(id, &compaction(1, "s")).await),
            "add comp {id}"
        );
        assert!(not_found(store.compactions(id).await), "compactions {id}");
    }
    assert!(not_found(store.get_session("").await), "the empty prefix");
    assert_eq!(store.get_session(&s.id).await.unwrap().message_count, 0);
}

pub async fn todos_round_trip_and_are_replaced_whole(store: &dyn SessionStore) {
    let s = session(store, "/w", "t").await;
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
    assert_eq!(store.todos(&s.id).await.unwrap(), second);
    store.set_todos(&s.id, &[]).await.unwrap();
    assert!(store.todos(&s.id).await.unwrap().is_empty());
}

pub async fn grants_are_kept_once_in_the_order_granted(store: &dyn SessionStore) {
    let s = session(store, "/w", "t").await;
    let other = session(store, "/w", "o").await;
    let rules: Vec<Rule> = ["bash(cargo test)", "edit(src/*)", "bash(ls)"]
        .iter()
        .map(|r| r.parse().unwrap())
        .collect();
    for r in rules.iter().chain(&rules[..2]) {
        store.add_grant(&s.id, r).await.unwrap();
    }
    assert_eq!(store.grants(&s.id).await.unwrap(), (rules.clone(), 0));
    assert_eq!(store.grants(&other.id).await.unwrap(), (vec![], 0));
}

pub async fn ledger_and_compactions_round_trip_per_session(store: &dyn SessionStore) {
    let a = session(store, "/w", "a").await;
    let b = session(store, "/w", "b").await;
    assert_eq!(store.ledger(&a.id).await.unwrap(), (vec![], 0));
    assert!(store.compactions(&a.id).await.unwrap().is_empty());
    for n in 1..=3 {
        store.add_ledger(&a.id, &ledger_entry(n)).await.unwrap();
    }
    store.add_ledger(&b.id, &ledger_entry(9)).await.unwrap();
    let sent: Vec<LedgerEntry> = (1..=3).map(ledger_entry).collect();
    assert_eq!(store.ledger(&a.id).await.unwrap(), (sent, 0));
    assert_eq!(
        store.ledger(&b.id).await.unwrap(),
        (vec![ledger_entry(9)], 0)
    );
    let records = [compaction(4, "first"), compaction(9, "second")];
    for r in &records {
        store.add_compaction(&a.id, r).await.unwrap();
    }
    assert_eq!(store.compactions(&a.id).await.unwrap(), records);
    assert!(store.compactions(&b.id).await.unwrap().is_empty());
}

pub async fn deleting_a_session_removes_everything_of_it_only(store: &dyn SessionStore) {
    let gone = session(store, "/w", "gone").await;
    let kept = session(store, "/w", "kept").await;
    let rule: Rule = "bash(ls)".parse().unwrap();
    for s in [&gone, &kept] {
        for m in every_kind_of_message() {
            store.append_message(&s.id, &m).await.unwrap();
        }
        store
            .set_todos(&s.id, &[todo("1", "x", TodoStatus::Pending)])
            .await
            .unwrap();
        store.add_grant(&s.id, &rule).await.unwrap();
        store.add_ledger(&s.id, &ledger_entry(1)).await.unwrap();
        store
            .add_compaction(&s.id, &compaction(2, "s"))
            .await
            .unwrap();
    }
    store.delete_session(&gone.id).await.unwrap();
    assert!(not_found(store.messages(&gone.id).await));
    assert!(not_found(store.todos(&gone.id).await));
    assert!(not_found(store.grants(&gone.id).await));
    assert!(not_found(store.ledger(&gone.id).await));
    assert!(not_found(store.compactions(&gone.id).await));
    assert_eq!(
        store.messages(&kept.id).await.unwrap(),
        every_kind_of_message()
    );
    assert_eq!(store.todos(&kept.id).await.unwrap().len(), 1);
    assert_eq!(store.grants(&kept.id).await.unwrap().0, [rule]);
    assert_eq!(store.ledger(&kept.id).await.unwrap().0.len(), 1);
    assert_eq!(store.compactions(&kept.id).await.unwrap().len(), 1);
}

/// Many tasks append to one session at once: every message lands, each
/// with its own seq, and each task sees its own seqs rise.
pub async fn concurrent_appends_all_land_with_distinct_seqs(store: Arc<dyn SessionStore>) {
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
    assert_eq!(
        distinct.len() as u64,
        total,
        "a message was stored twice or lost"
    );
    assert_eq!(store.get_session(&s.id).await.unwrap().message_count, total);
}

/// Every check above that can share one store, in turn.
pub async fn all_on_one_store(store: &dyn SessionStore, workspace: &str) {
    every_kind_of_message_round_trips_exactly(store).await;
    seq_numbers_count_from_one_per_session(store).await;
    a_new_session_is_stored_as_created_and_appending_bumps_updated_at(store).await;
    title_model_last_stop_and_parent_persist(store).await;
    sessions_list_newest_first_filtered_and_limited(store, workspace).await;
    prefixes_find_one_session_and_shared_ones_are_ambiguous(store).await;
    unknown_ids_are_not_found_everywhere(store).await;
    todos_round_trip_and_are_replaced_whole(store).await;
    grants_are_kept_once_in_the_order_granted(store).await;
    ledger_and_compactions_round_trip_per_session(store).await;
    deleting_a_session_removes_everything_of_it_only(store).await;
}
