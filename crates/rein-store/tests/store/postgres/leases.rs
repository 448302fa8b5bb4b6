//! Session leases: one server drives a session; expiry by the database's
//! clock; heartbeats; orphaned sessions.

use std::time::Duration;

use rein_core::StoreError;
use rein_store::LeaseError;

use super::{pg_store, server};
use crate::fixtures::session;

const LONG: Duration = Duration::from_secs(60);

#[tokio::test]
async fn a_lease_held_by_one_server_refuses_another_until_released() {
    let (_url, store) = pg_store!("lease_refuses");
    let s = session(&store, "/w", "t").await;
    let a = store.acquire_lease(&s.id, "server-a", LONG).await.unwrap();
    assert_eq!(
        (a.session_id(), a.owner(), a.ttl()),
        (s.id.as_str(), "server-a", LONG)
    );
    match store.acquire_lease(&s.id, "server-b", LONG).await {
        Err(LeaseError::Held {
            session_id,
            owner,
            expires_in,
        }) => {
            assert_eq!(session_id, s.id);
            assert_eq!(owner, "server-a");
            assert!(
                expires_in <= LONG && expires_in > LONG - Duration::from_secs(10),
                "{expires_in:?}"
            );
        }
        other => panic!("expected Held, got {other:?}"),
    }
    a.renew().await.unwrap();
    a.release().await.unwrap();
    let b = store.acquire_lease(&s.id, "server-b", LONG).await.unwrap();
    b.renew().await.unwrap();
}

#[tokio::test]
async fn an_expired_lease_goes_to_the_next_server_and_the_old_holder_has_lost_it() {
    let (_url, store) = pg_store!("lease_expiry");
    let s = session(&store, "/w", "t").await;
    let a = store
        .acquire_lease(&s.id, "server-a", Duration::from_millis(300))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(450)).await;
    let b = store.acquire_lease(&s.id, "server-b", LONG).await.unwrap();
    match a.renew().await {
        Err(LeaseError::Lost {
            session_id,
            now_held_by,
        }) => {
            assert_eq!(session_id, s.id);
            assert_eq!(now_held_by.as_deref(), Some("server-b"));
        }
        other => panic!("expected Lost, got {other:?}"),
    }
    let err = a.release().await.unwrap_err();
    assert!(matches!(err, LeaseError::Lost { .. }), "{err:?}");
    // A's failed release did not touch B's lease.
    b.renew().await.unwrap();
    assert!(matches!(
        store.acquire_lease(&s.id, "server-a", LONG).await,
        Err(LeaseError::Held { owner, .. }) if owner == "server-b"
    ));
}

#[tokio::test]
async fn an_expired_lease_nobody_took_is_renewed_by_its_holder() {
    let (_url, store) = pg_store!("lease_late_renewal");
    let s = session(&store, "/w", "t").await;
    let a = store
        .acquire_lease(&s.id, "server-a", Duration::from_millis(100))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    a.renew().await.unwrap();
}

#[tokio::test]
async fn the_same_owner_acquiring_again_takes_over_and_the_older_lease_is_lost() {
    let (_url, store) = pg_store!("lease_same_owner");
    let s = session(&store, "/w", "t").await;
    let old = store.acquire_lease(&s.id, "server-a", LONG).await.unwrap();
    let new = store.acquire_lease(&s.id, "server-a", LONG).await.unwrap();
    assert!(matches!(old.renew().await, Err(LeaseError::Lost { .. })));
    new.renew().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn servers_racing_for_one_session_get_exactly_one_lease() {
    let (_url, store) = pg_store!("lease_race");
    let s = session(&store, "/w", "t").await;
    let handles: Vec<_> = (0..10)
        .map(|n| {
            let (store, id) = (store.clone(), s.id.clone());
            tokio::spawn(
                async move { store.acquire_lease(&id, &format!("server-{n}"), LONG).await },
            )
        })
        .collect();
    let mut won = Vec::new();
    for h in handles {
        match h.await.unwrap() {
            Ok(lease) => won.push(lease.owner().to_string()),
            Err(LeaseError::Held { .. }) => {}
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    assert_eq!(won.len(), 1, "winners: {won:?}");
}

/// The heartbeat tests renew often under a long time to live: what they
/// prove (renewals happen, a loss is seen, a stop hands the lease back)
/// does not hang on how fast a loaded machine answers.
const BEAT: Duration = Duration::from_millis(20);

/// When the lease of `session` was last renewed, and until when it holds.
async fn lease_times(url: &str, session: &str) -> (std::time::SystemTime, std::time::SystemTime) {
    let row = server::raw(url)
        .await
        .query_one(
            "SELECT renewed_at, expires_at FROM session_leases WHERE session_id = $1",
            &[&session],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

/// Wait until the lease of `session` was renewed `times` times more.
async fn renewals(url: &str, session: &str, times: usize) {
    let mut last = lease_times(url, session).await.0;
    let mut seen = 0;
    let waited = tokio::time::timeout(Duration::from_secs(60), async {
        while seen < times {
            tokio::time::sleep(BEAT).await;
            let renewed = lease_times(url, session).await.0;
            if renewed > last {
                (last, seen) = (renewed, seen + 1);
            }
        }
    });
    waited.await.expect("the heartbeat did not renew the lease");
}

#[tokio::test]
async fn a_heartbeat_renews_its_lease_again_and_again_pushing_its_expiry_forward() {
    let (url, store) = pg_store!("heartbeat_alive");
    let s = session(&store, "/w", "t").await;
    let beat = store
        .acquire_lease(&s.id, "server-a", LONG)
        .await
        .unwrap()
        .keep_alive_every(BEAT);
    assert_eq!(beat.session_id(), s.id);
    let (_, first_expiry) = lease_times(&url, &s.id).await;
    renewals(&url, &s.id, 3).await;
    let (_, expiry) = lease_times(&url, &s.id).await;
    assert!(expiry > first_expiry, "{expiry:?} <= {first_expiry:?}");
    assert!(!beat.is_lost());
    assert!(
        matches!(
            store.acquire_lease(&s.id, "server-b", LONG).await,
            Err(LeaseError::Held { ref owner, .. }) if owner == "server-a"
        ),
        "another server took a lease being renewed"
    );
    assert!(
        store
            .list_orphaned(Duration::ZERO)
            .await
            .unwrap()
            .is_empty()
    );
    beat.release().await.unwrap();
    store.acquire_lease(&s.id, "server-b", LONG).await.unwrap();
}

#[tokio::test]
async fn a_heartbeat_signals_loss_when_another_server_takes_the_lease() {
    let (url, store) = pg_store!("heartbeat_loss");
    let s = session(&store, "/w", "t").await;
    let beat = store
        .acquire_lease(&s.id, "server-a", LONG)
        .await
        .unwrap()
        .keep_alive_every(BEAT);
    let lost = beat.lost();
    // Another server takes it over as if A's lease had expired.
    server::raw(&url)
        .await
        .execute(
            "UPDATE session_leases SET owner = 'server-b', token = -1 WHERE session_id = $1",
            &[&s.id],
        )
        .await
        .unwrap();
    // The next renewal sees it, whenever the machine gets to it.
    tokio::time::timeout(Duration::from_secs(60), lost.cancelled())
        .await
        .expect("the heartbeat did not report the loss");
    assert!(beat.is_lost());
    match beat.stop().await {
        Err(LeaseError::Lost { now_held_by, .. }) => {
            assert_eq!(now_held_by.as_deref(), Some("server-b"));
        }
        other => panic!("expected Lost, got {other:?}"),
    }
}

#[tokio::test]
async fn a_stopped_heartbeat_gives_the_lease_back_still_held() {
    let (url, store) = pg_store!("heartbeat_stop");
    let s = session(&store, "/w", "t").await;
    let beat = store
        .acquire_lease(&s.id, "server-a", LONG)
        .await
        .unwrap()
        .keep_alive_every(BEAT);
    renewals(&url, &s.id, 1).await;
    let lease = beat.stop().await.unwrap();
    lease.renew().await.unwrap();
    lease.release().await.unwrap();
}

#[tokio::test]
async fn expired_leases_are_listed_as_orphans_and_held_or_released_ones_are_not() {
    let (_url, store) = pg_store!("orphans");
    let abandoned = session(&store, "/w", "abandoned").await;
    let held = session(&store, "/w", "held").await;
    let finished = session(&store, "/w", "finished").await;
    let short = Duration::from_millis(100);
    let _a = store
        .acquire_lease(&abandoned.id, "server-a", short)
        .await
        .unwrap();
    let _h = store
        .acquire_lease(&held.id, "server-h", LONG)
        .await
        .unwrap();
    let f = store
        .acquire_lease(&finished.id, "server-f", short)
        .await
        .unwrap();
    f.release().await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let orphans = store.list_orphaned(Duration::ZERO).await.unwrap();
    assert_eq!(orphans.len(), 1, "{orphans:?}");
    assert_eq!(orphans[0].session_id, abandoned.id);
    assert_eq!(orphans[0].owner, "server-a");
    assert!(
        orphans[0].expired_for >= Duration::from_millis(100)
            && orphans[0].expired_for < Duration::from_secs(30),
        "{orphans:?}"
    );
    // Within the grace period it is not an orphan yet.
    assert!(
        store
            .list_orphaned(Duration::from_secs(3600))
            .await
            .unwrap()
            .is_empty()
    );
    // Another server adopts it.
    store
        .acquire_lease(&abandoned.id, "server-b", LONG)
        .await
        .unwrap();
    assert!(
        store
            .list_orphaned(Duration::ZERO)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn leases_on_unknown_sessions_and_odd_ttls_are_refused_clearly() {
    let (_url, store) = pg_store!("lease_refusals");
    let s = session(&store, "/w", "t").await;
    assert!(matches!(
        store.acquire_lease("nope", "server-a", LONG).await,
        Err(LeaseError::Store(StoreError::NotFound(_)))
    ));
    for ttl in [Duration::ZERO, Duration::from_secs(2 * 24 * 3600)] {
        let err = store
            .acquire_lease(&s.id, "server-a", ttl)
            .await
            .unwrap_err();
        assert!(matches!(err, LeaseError::InvalidTtl(_)), "{err:?}");
        assert_eq!(err.to_string().lines().count(), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heartbeat_whose_renewals_hang_on_the_database_reports_the_loss() {
    let (url, store) = pg_store!("heartbeat_blocked");
    let s = session(&store, "/w", "t").await;
    let ttl = Duration::from_millis(600);
    let beat = store
        .acquire_lease(&s.id, "server-a", ttl)
        .await
        .unwrap()
        .keep_alive();
    let lost = beat.lost();
    // Another client holds the lease row locked: every renewal now hangs,
    // as it would with the database unreachable.
    let mut blocker = server::raw(&url).await;
    let tx = blocker.transaction().await.unwrap();
    tx.execute(
        "SELECT 1 FROM session_leases WHERE session_id = $1 FOR UPDATE",
        &[&s.id],
    )
    .await
    .unwrap();
    // That it gives up before the lease could expire is proven on a paused
    // clock (the heartbeat's unit tests); here, that it gives up at all.
    tokio::time::timeout(Duration::from_secs(60), lost.cancelled())
        .await
        .expect("the heartbeat never gave up");
    tx.rollback().await.unwrap();
    let err = beat.stop().await.unwrap_err();
    assert!(matches!(err, LeaseError::Store(_)), "{err:?}");
}

/// `true` when `result` is the refusal of a stale holder's write, naming
/// the server that holds the session now.
fn lost_to<T: std::fmt::Debug>(result: Result<T, StoreError>, id: &str, holder: &str) -> bool {
    match result {
        Err(StoreError::LeaseLost {
            session_id,
            now_held_by,
        }) => session_id == id && now_held_by.as_deref() == Some(holder),
        other => panic!("expected LeaseLost to {holder}, got {other:?}"),
    }
}

#[tokio::test]
async fn a_stale_holder_cannot_write_to_a_session_another_server_took_over() {
    use rein_core::{CompactionRecord, Message, SessionStore, StopReason, TodoStatus};
    use rein_store::{Retention, SessionEvents};

    let (url, a) = pg_store!("lease_fencing");
    let b = rein_store::PgStore::connect(&url).await.unwrap();
    let keep = Retention {
        keep: 1000,
        max_age: LONG,
    };
    let compaction = CompactionRecord {
        upto_seq: 1,
        summary: Message::user("summary"),
        summarized: true,
        at: 1_700_000_000_000,
    };
    let todos = [crate::fixtures::todo("1", "t", TodoStatus::Pending)];
    let s = session(&a, "/w", "t").await;
    let id = s.id.as_str();

    // A holds the lease and writes; then it stalls past the lease time and
    // B takes the session over.
    let held = a
        .acquire_lease(id, "server-a", Duration::from_millis(300))
        .await
        .unwrap();
    a.append_message(id, &Message::user("from a"))
        .await
        .unwrap();
    a.append_events(id, vec!["{\"n\":1}".into()], keep)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(450)).await;
    let taken = b.acquire_lease(id, "server-b", LONG).await.unwrap();

    // Every write A's run would make now is refused, naming B.
    assert!(lost_to(
        a.append_message(id, &Message::user("late")).await,
        id,
        "server-b"
    ));
    assert!(lost_to(
        a.append_events(id, vec!["{\"n\":2}".into()], keep).await,
        id,
        "server-b"
    ));
    assert!(lost_to(
        a.set_last_stop(id, StopReason::Completed).await,
        id,
        "server-b"
    ));
    assert!(lost_to(a.set_todos(id, &todos).await, id, "server-b"));
    assert!(lost_to(
        a.add_compaction(id, &compaction).await,
        id,
        "server-b"
    ));

    // Nothing of A's late writes landed; B's writes do.
    b.append_message(id, &Message::user("from b"))
        .await
        .unwrap();
    assert_eq!(
        b.append_events(id, vec!["{\"n\":2}".into()], keep)
            .await
            .unwrap(),
        2
    );
    b.set_last_stop(id, StopReason::Cancelled).await.unwrap();
    let texts: Vec<String> = b
        .messages(id)
        .await
        .unwrap()
        .iter()
        .map(|m| m.text())
        .collect();
    assert_eq!(texts, ["from a", "from b"]);
    assert_eq!(b.todos(id).await.unwrap(), vec![]);
    assert_eq!(b.compactions(id).await.unwrap(), vec![]);
    let info = b.get_session(id).await.unwrap();
    assert_eq!(info.last_stop, Some(StopReason::Cancelled));
    let stored = b.events_after(id, 0, 10).await.unwrap();
    assert_eq!(stored.last, 2);

    // Once A's run gives its stale holding back (refused) and B gives the
    // session back, A takes it again and writes again.
    assert!(held.release().await.is_err());
    taken.release().await.unwrap();
    let again = a.acquire_lease(id, "server-a", LONG).await.unwrap();
    a.set_todos(id, &todos).await.unwrap();
    a.add_compaction(id, &compaction).await.unwrap();
    again.release().await.unwrap();

    // A store holding no lease on a session writes to it unfenced, as the
    // CLI on PostgreSQL does.
    let other = session(&b, "/w", "u").await;
    a.append_message(&other.id, &Message::user("cli"))
        .await
        .unwrap();
}
