//! Controls through the database: nothing is recorded for a session nobody
//! runs, an approval is recorded once per call, the holder finds what is
//! pending for its sessions only, and a settlement is final.

use std::time::Duration;

use rein_store::{ControlKind, Outcome};

use super::pg_store;
use crate::fixtures::session;

#[tokio::test]
async fn controls_reach_only_the_holder_and_an_approval_is_one_decision() {
    let (_url, store) = pg_store!("controls");
    let s = session(&store, "/w", "t").await;
    let sent = store
        .send_control(&s.id, ControlKind::Cancel, None, "")
        .await
        .unwrap();
    assert_eq!((sent.control, sent.holder), (None, None), "nobody runs it");

    let _lease = store
        .acquire_lease(&s.id, "server-a", Duration::from_secs(30))
        .await
        .unwrap();
    let approve = r#"{"decision":"approve","scope":"once"}"#;
    let first = store
        .send_control(&s.id, ControlKind::Approval, Some("c1"), approve)
        .await
        .unwrap();
    assert_eq!(first.holder.as_deref(), Some("server-a"));
    let (control, outcome) = first.control.unwrap();
    assert_eq!(outcome, Outcome::Pending);
    assert!(
        store
            .pending_controls("server-b", None)
            .await
            .unwrap()
            .is_empty()
    );
    let pending = store
        .pending_controls("server-a", Some(&s.id))
        .await
        .unwrap();
    assert_eq!(pending, std::slice::from_ref(&control));

    // The same call again: the first control, not a second one.
    let again = store
        .send_control(
            &s.id,
            ControlKind::Approval,
            Some("c1"),
            r#"{"decision":"deny"}"#,
        )
        .await
        .unwrap();
    assert_eq!(again.control.unwrap().0, control);
    assert_eq!(
        store
            .pending_controls("server-a", None)
            .await
            .unwrap()
            .len(),
        1
    );

    store.settle_control(control.id, Ok(())).await.unwrap();
    store
        .settle_control(control.id, Err("late".into()))
        .await
        .unwrap();
    assert_eq!(
        store.control_outcome(control.id).await.unwrap(),
        Outcome::Applied
    );
    assert!(
        store
            .pending_controls("server-a", None)
            .await
            .unwrap()
            .is_empty()
    );

    // What the holder's run waits for is on its lease, for every server.
    store
        .set_waiting(&s.id, "server-a", r#"[{"call_id":"c2"}]"#)
        .await
        .unwrap();
    store.set_waiting(&s.id, "server-b", "[]").await.unwrap();
    let (owner, waiting) = store.running(&s.id).await.unwrap().unwrap();
    assert_eq!(
        (owner.as_str(), waiting.as_str()),
        ("server-a", r#"[{"call_id":"c2"}]"#)
    );
}
