//! Connecting: malformed URLs, unreachable servers and wrong databases
//! give one clear line that never shows the password; separate processes
//! migrating one database at once all succeed.

use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rein_core::StoreError;
use rein_store::{PgMemory, PgStore};

use super::server;

const SECRET: &str = "hunter2-Sekr1t";

/// A loopback port nothing listens on (held until the process ends).
fn closed_port() -> u16 {
    static CLOSED: std::sync::OnceLock<rein_test_support::ports::ClosedPort> =
        std::sync::OnceLock::new();
    CLOSED.get_or_init(Default::default).port()
}

/// The error `connect` gives for `url`, checked to be one line without
/// the password.
async fn connect_error(url: &str) -> StoreError {
    let err = match PgStore::connect(url).await {
        Ok(store) => panic!("{url} connected: {store:?}"),
        Err(e) => e,
    };
    let text = err.to_string();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(!text.contains(SECRET), "the password leaked: {text}");
    assert!(
        !format!("{err:?}").contains(SECRET),
        "the password leaked: {err:?}"
    );
    err
}

#[tokio::test]
async fn malformed_urls_give_a_one_line_error_without_the_password() {
    for url in [
        format!("postgres://bob:{SECRET}@localhost:notaport/db"),
        format!("postgres://bob:{SECRET}@localhost/db?sslmode=sometimes"),
        format!("host=localhost password={SECRET} port=99999999"),
        format!("host=localhost password='{SECRET}"),
        format!("dbname=x password={SECRET}"),
        format!("this is not a url {SECRET}"),
        String::new(),
    ] {
        let err = connect_error(&url).await;
        assert!(
            matches!(&err, StoreError::Other(m) if m.contains("malformed PostgreSQL URL")),
            "{url}: {err:?}"
        );
    }
}

#[tokio::test]
async fn an_unreachable_server_gives_a_clear_error_naming_it_without_the_password() {
    let port = closed_port();
    for url in [
        format!("postgres://bob:{SECRET}@127.0.0.1:{port}/sessions"),
        format!("host=/nonexistent/rein-socket-dir port={port} password={SECRET}"),
        // A black-holed address: the connect timeout ends it.
        format!(
            "host=10.255.255.1 port={port} password={SECRET} connect_timeout=1 sslmode=disable"
        ),
    ] {
        let started = std::time::Instant::now();
        let err = connect_error(&url).await;
        let StoreError::Unavailable(msg) = &err else {
            panic!("expected Unavailable for {url}, got {err:?}")
        };
        assert!(msg.contains("cannot reach PostgreSQL"), "{msg}");
        assert!(msg.contains(&port.to_string()), "names the server: {msg}");
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{:?}",
            started.elapsed()
        );
    }
    let memory = PgMemory::connect(&format!("postgres://bob:{SECRET}@127.0.0.1:{port}/m")).await;
    let text = memory.unwrap_err().to_string();
    assert!(
        text.contains("cannot reach PostgreSQL") && !text.contains(SECRET),
        "{text}"
    );
}

#[tokio::test]
async fn a_missing_database_on_a_live_server_is_a_clear_error_without_the_password() {
    let Some(url) = server::db_or_skip("missing_database").await else {
        return;
    };
    let wrong = server::with_param(
        &server::with_dbname(&url, "rein_no_such_database"),
        "password",
        SECRET,
    );
    let err = connect_error(&wrong).await;
    let text = err.to_string();
    assert!(text.contains("does not exist"), "{text}");
}

/// Not a test on its own: the body of a helper process for
/// [`separate_processes_migrating_one_database_at_once_all_succeed`]. Does
/// nothing unless `REIN_PG_MIGRATE_URL` is set.
#[tokio::test]
async fn helper_process_connects_when_asked() {
    let Ok(url) = std::env::var("REIN_PG_MIGRATE_URL") else {
        return;
    };
    let start_at: u128 = std::env::var("REIN_PG_MIGRATE_AT")
        .unwrap()
        .parse()
        .unwrap();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis();
    tokio::time::sleep(Duration::from_millis(start_at.saturating_sub(now) as u64)).await;
    PgStore::connect(&url).await.unwrap();
    PgMemory::connect(&url).await.unwrap();
}

#[tokio::test]
async fn separate_processes_migrating_one_database_at_once_all_succeed() {
    let Some(url) = server::db_or_skip("process_migration").await else {
        return;
    };
    let exe = std::env::current_exe().unwrap();
    // They all start connecting at the same moment, a little from now.
    let start_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 1500;
    let children: Vec<_> = (0..4)
        .map(|_| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "postgres::errors::helper_process_connects_when_asked",
                ])
                .args(["--nocapture", "--test-threads=1"])
                .env("REIN_PG_MIGRATE_URL", &url)
                .env("REIN_PG_MIGRATE_AT", start_at.to_string())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "a migrating process failed: {}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let db = server::raw(&url).await;
    let rows = db
        .query(
            "SELECT component, version FROM rein_schema ORDER BY component",
            &[],
        )
        .await
        .unwrap();
    let versions: Vec<(String, i32)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(
        versions,
        [
            (
                "memory".to_string(),
                rein_store::PG_MEMORY_SCHEMA_VERSION as i32
            ),
            ("sessions".to_string(), rein_store::PG_SCHEMA_VERSION as i32),
        ]
    );
}

#[tokio::test]
async fn tls_modes_use_tls_only_when_asked_and_a_server_without_it_refuses_require() {
    let Some(url) = server::db_or_skip("tls_modes").await else {
        return;
    };
    // `prefer` sets up rustls with the system's roots, asks, and goes on
    // in plain text when the server has no TLS (as the test server has not).
    let prefer = server::with_param(&url, "sslmode", "prefer");
    PgStore::connect(&prefer).await.unwrap();
    let verify = server::with_param(&url, "sslmode", "verify-full");
    let err = connect_error(&server::with_param(&verify, "password", SECRET)).await;
    let text = err.to_string();
    eprintln!("require against a plain server: {text}");
    assert!(
        text.contains("cannot reach PostgreSQL") && text.contains("TLS"),
        "{text}"
    );
}
