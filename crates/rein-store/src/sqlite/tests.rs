#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;

fn db_with_ids(ids: &[&str]) -> Connection {
    let mut conn = Connection::open_in_memory().unwrap();
    migrate(&mut conn, MIGRATIONS).unwrap();
    for id in ids {
        conn.execute(
            "INSERT INTO sessions (id, workspace, title, model, created_at, updated_at)
             VALUES (?1, '', '', '', 0, 0)",
            [id],
        )
        .unwrap();
    }
    conn
}

fn resolved(conn: &Connection, wanted: &str) -> Result<String, StoreError> {
    resolve(conn, wanted).map_err(|f| f.into_store("test.db", Duration::ZERO))
}

#[test]
fn an_exact_id_wins_over_longer_ids_it_prefixes() {
    let conn = db_with_ids(&["ab", "abc", "abd"]);
    assert_eq!(resolved(&conn, "ab").unwrap(), "ab");
    assert_eq!(resolved(&conn, "abc").unwrap(), "abc");
    assert!(
        matches!(resolved(&conn, "a"), Err(StoreError::Ambiguous { prefix, .. }) if prefix == "a")
    );
}

#[test]
fn prefixes_match_case_sensitively() {
    let conn = db_with_ids(&["abc1"]);
    assert_eq!(resolved(&conn, "ab").unwrap(), "abc1");
    assert!(matches!(
        resolved(&conn, "AB"),
        Err(StoreError::NotFound(_))
    ));
}

#[test]
fn wildcards_in_a_prefix_match_only_themselves() {
    let conn = db_with_ids(&["a*b", "a?c", "a[d", "axe", "a%f", "a_g"]);
    assert_eq!(resolved(&conn, "a*").unwrap(), "a*b");
    assert_eq!(resolved(&conn, "a?").unwrap(), "a?c");
    assert_eq!(resolved(&conn, "a[").unwrap(), "a[d");
    assert_eq!(resolved(&conn, "a%").unwrap(), "a%f");
    assert_eq!(resolved(&conn, "a_").unwrap(), "a_g");
    assert!(matches!(
        resolved(&conn, "a]"),
        Err(StoreError::NotFound(_))
    ));
}

#[test]
fn an_empty_prefix_finds_nothing() {
    let conn = db_with_ids(&["abc"]);
    assert!(matches!(resolved(&conn, ""), Err(StoreError::NotFound(_))));
}

#[test]
fn glob_prefix_escapes_wildcards_as_classes() {
    assert_eq!(glob_prefix("a*b?c[d]"), "a[*]b[?]c[[]d]*");
}
