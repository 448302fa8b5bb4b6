#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The renewal loop on tokio's paused clock, with scripted renewals: what
//! it decides depends on time only, so every case is exact.

use std::cell::RefCell;

use super::*;

const TTL: Duration = Duration::from_millis(600);
const PERIOD: Duration = Duration::from_millis(200);

/// How one scripted renewal goes.
#[derive(Debug, Clone, Copy)]
enum Answer {
    Ok,
    /// Fails at once (the database refused the connection).
    Fails,
    /// Never answers: the bound runs out.
    Hangs,
}

fn unreachable_db() -> LeaseError {
    LeaseError::Store(StoreError::Other("unreachable".into()))
}

/// Run the loop over `script` (then `Ok` forever), stopping after
/// `stop_after` when it is still going. Returns how it ended and, for
/// each renewal, when it was sent, its bound and the last good send
/// before it; checks that no renewal may answer after the lease could
/// have expired.
async fn run(script: &[Answer], stop_after: Duration) -> (Result<(), LeaseError>, bool, Instant) {
    let start = Instant::now();
    let last_good = RefCell::new(start);
    let calls = RefCell::new(script.iter().copied());
    let renew = |bound: Duration| {
        let sent = Instant::now();
        let answer = calls.borrow_mut().next().unwrap_or(Answer::Ok);
        let good = *last_good.borrow();
        assert!(
            sent + bound < good + TTL,
            "a renewal sent at {:?} with bound {bound:?} could answer after the expiry at {:?}",
            sent - start,
            good + TTL - start
        );
        let last_good = &last_good;
        async move {
            match answer {
                Answer::Ok => {
                    *last_good.borrow_mut() = sent;
                    Ok(())
                }
                Answer::Fails => Err(unreachable_db()),
                Answer::Hangs => {
                    tokio::time::sleep(bound).await;
                    Err(unreachable_db())
                }
            }
        }
    };
    let (stop, lost) = (CancellationToken::new(), CancellationToken::new());
    let stopper = stop.clone();
    let timer = async move {
        tokio::time::sleep(stop_after).await;
        stopper.cancel();
        std::future::pending::<()>().await;
    };
    let ended = tokio::select! {
        r = keep_renewing(TTL, PERIOD, renew, &stop, &lost) => r,
        () = timer => unreachable!(),
    };
    let expiry = *last_good.borrow() + TTL;
    if ended.is_err() {
        assert!(
            Instant::now() < expiry,
            "gave up at {:?}, after the lease could expire at {:?}",
            Instant::now() - start,
            expiry - start
        );
    }
    (ended, lost.is_cancelled(), start)
}

#[tokio::test(start_paused = true)]
async fn renewals_that_work_keep_the_lease_until_stopped() {
    let (ended, lost, start) = run(&[], Duration::from_secs(10)).await;
    assert!(ended.is_ok() && !lost);
    assert!(Instant::now() - start >= Duration::from_secs(10));
}

#[tokio::test(start_paused = true)]
async fn a_hanging_renewal_is_reported_lost_before_the_lease_could_expire() {
    let (ended, lost, _) = run(
        &[Answer::Ok, Answer::Hangs, Answer::Hangs],
        Duration::from_secs(10),
    )
    .await;
    assert!(
        matches!(ended, Err(LeaseError::Store(_))) && lost,
        "{ended:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn one_failed_renewal_is_retried_and_the_next_good_one_keeps_the_lease() {
    for blip in [Answer::Fails, Answer::Hangs] {
        let (ended, lost, _) = run(&[blip, Answer::Ok], Duration::from_secs(10)).await;
        assert!(ended.is_ok() && !lost, "{blip:?}: {ended:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_lease_another_server_took_is_lost_at_the_first_renewal() {
    let lost_renewal = |_| async {
        Err(LeaseError::Lost {
            session_id: "s".into(),
            now_held_by: Some("b".into()),
        })
    };
    let (stop, lost) = (CancellationToken::new(), CancellationToken::new());
    let start = Instant::now();
    let ended = keep_renewing(TTL, PERIOD, lost_renewal, &stop, &lost).await;
    assert!(matches!(ended, Err(LeaseError::Lost { .. })) && lost.is_cancelled());
    assert_eq!(Instant::now() - start, PERIOD);
}

#[tokio::test(start_paused = true)]
async fn every_mix_of_failures_gives_up_in_time_or_keeps_the_lease() {
    // All 3^5 scripts of five renewals: none may let a renewal answer after
    // the lease could expire, nor give up after that moment (both checked
    // in `run`).
    let kinds = [Answer::Ok, Answer::Fails, Answer::Hangs];
    for n in 0..3usize.pow(5) {
        let script: Vec<Answer> = (0..5).map(|i| kinds[n / 3usize.pow(i) % 3]).collect();
        let (ended, lost, _) = run(&script, Duration::from_secs(5)).await;
        assert_eq!(ended.is_err(), lost, "{script:?}");
    }
}
