//! The database file: schema version, reopening, files of a newer rein
//! or another program refused, WAL mode.

use rein_core::{Message, SessionStore, StoreError};
use rein_store::{SCHEMA_VERSION, SqliteStore};

use crate::fixtures::{open, raw, session, temp_db, user_version};

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
