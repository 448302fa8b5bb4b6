//! `PgMemory` against a real PostgreSQL, with the expectations of the
//! `SqliteMemory` tests: words found by prefix in title, tags and content,
//! title matches ranked first, deduplication, scopes, ids never reused,
//! use counts and the prompt selection.

use rein_core::memory::prompt_section;
use rein_core::{
    memory::Added, memory::Denial, memory::EditScope, memory::LongTermMemory, memory::MemoryChange,
    memory::MemoryEntry, memory::MemoryError, memory::MemoryOrigin, memory::NewMemory,
};
use rein_store::{PG_MEMORY_SCHEMA_VERSION, PgMemory};

use super::server;
use crate::fixtures::tick;

/// A fresh database and a memory on it, or return (skipped).
macro_rules! pg_memory {
    ($name:expr) => {{
        let Some(url) = $crate::postgres::server::db_or_skip($name).await else {
            return;
        };
        let memory = PgMemory::connect(&url)
            .await
            .unwrap_or_else(|e| panic!("connecting to {url}: {e}"));
        (url, memory)
    }};
}

fn note(title: &str, content: &str, project: Option<&str>) -> NewMemory {
    NewMemory {
        title: title.into(),
        content: content.into(),
        tags: Vec::new(),
        project: project.map(str::to_string),
        origin: MemoryOrigin::Model,
    }
}

async fn add(m: &PgMemory, title: &str, content: &str, project: Option<&str>) -> MemoryEntry {
    match m.add(note(title, content, project)).await.unwrap() {
        Added::New(e) => e,
        Added::Duplicate(e) => panic!("unexpected duplicate of {}", e.id),
    }
}

fn ids(entries: &[MemoryEntry]) -> Vec<&str> {
    entries.iter().map(|e| e.id.as_str()).collect()
}

#[tokio::test]
async fn an_added_memory_is_found_by_its_words_prefixes_and_tags_with_every_field_kept() {
    let (url, m) = pg_memory!("memory_found");
    let saved = m
        .add(NewMemory {
            title: "Running the tests".into(),
            content: "Use `cargo test -p rein-store`;\nthe CLI tests build the binary.".into(),
            tags: vec!["Rust".into(), "ci".into()],
            project: Some("/w".into()),
            origin: MemoryOrigin::User,
        })
        .await
        .unwrap()
        .into_entry();
    assert_eq!(saved.id, "m1");
    assert_eq!(saved.tags, ["rust", "ci"]);
    let found = m.search("binary", Some("/w"), 10).await.unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    let hit = &found[0];
    assert_eq!(
        (
            &hit.id,
            &hit.title,
            &hit.content,
            &hit.tags,
            hit.created_at,
            hit.origin
        ),
        (
            &saved.id,
            &saved.title,
            &saved.content,
            &saved.tags,
            saved.created_at,
            saved.origin
        )
    );
    assert_eq!(hit.project.as_deref(), Some("/w"));
    assert_eq!(hit.uses, 1, "the hit counts as a use");
    assert_eq!(ids(&m.search("TEST", None, 10).await.unwrap()), ["m1"]);
    assert_eq!(ids(&m.search("rust", None, 10).await.unwrap()), ["m1"]);
    assert_eq!(ids(&m.search("store", None, 10).await.unwrap()), ["m1"]);
    assert!(m.search("python", None, 10).await.unwrap().is_empty());
    // Kept in the database: a new connection sees it.
    let again = PgMemory::connect(&url).await.unwrap();
    assert_eq!(again.list(None, 10).await.unwrap().len(), 1);
    let version: i32 = server::raw(&url)
        .await
        .query_one(
            "SELECT version FROM rein_schema WHERE component = 'memory'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(version, PG_MEMORY_SCHEMA_VERSION as i32);
}

#[tokio::test]
async fn a_match_in_the_title_ranks_above_one_mention_in_the_content() {
    let (_url, m) = pg_memory!("memory_rank");
    let content_only = add(
        &m,
        "Release checklist",
        "Bump the version, update the changelog, tag the commit, and check that the \
         migrations in rein-store still apply to an old database before publishing.",
        None,
    )
    .await;
    let titled = add(
        &m,
        "Database migrations",
        "Append a new step; never edit a released one.",
        None,
    )
    .await;
    let unrelated = add(&m, "Style", "No unwrap outside tests.", None).await;
    let found = m.search("migrations", None, 10).await.unwrap();
    assert_eq!(ids(&found), [titled.id.as_str(), content_only.id.as_str()]);
    assert!(!ids(&found).contains(&unrelated.id.as_str()));
    let found = m.search("database step released", None, 10).await.unwrap();
    assert_eq!(found[0].id, titled.id, "{found:?}");
    assert_eq!(
        ids(&m.search("migrations", None, 1).await.unwrap()),
        [titled.id.as_str()]
    );
}

#[tokio::test]
async fn the_same_content_spaced_or_cased_differently_is_one_memory_where_visible() {
    let (_url, m) = pg_memory!("memory_dedup");
    let first = add(&m, "Tests", "Run  the tests with\ncargo test", Some("/w")).await;
    let again = m
        .add(note(
            "Other",
            "  run the TESTS with cargo   test ",
            Some("/w"),
        ))
        .await
        .unwrap();
    assert_eq!(again, Added::Duplicate(first));
    assert!(
        !m.add(note("Tests", "run the tests with cargo test", Some("/v")))
            .await
            .unwrap()
            .is_duplicate()
    );
    let global = add(&m, "Style", "No unwrap outside tests.", None).await;
    let in_project = m
        .add(note("style", "no unwrap outside TESTS.", Some("/w")))
        .await
        .unwrap();
    assert_eq!(in_project, Added::Duplicate(global));
    assert_eq!(m.list(None, 10).await.unwrap().len(), 3);
}

#[tokio::test]
async fn an_update_changes_the_entry_and_what_search_finds() {
    let (_url, m) = pg_memory!("memory_update");
    let e = add(&m, "Tests", "run them with make", Some("/w")).await;
    let other = add(&m, "Lint", "cargo clippy", Some("/w")).await;
    tick().await;
    let change = MemoryChange {
        content: Some("run them with nextest".into()),
        tags: Some(vec!["CI".into()]),
        ..MemoryChange::default()
    };
    let updated = m
        .update(&e.id, change, &EditScope::Project("/w".into()))
        .await
        .unwrap();
    assert_eq!(updated.content, "run them with nextest");
    assert_eq!(updated.tags, ["ci"]);
    assert!(updated.updated_at > e.updated_at);
    assert!(m.search("make", None, 10).await.unwrap().is_empty());
    assert_eq!(
        ids(&m.search("nextest", None, 10).await.unwrap()),
        [e.id.as_str()]
    );
    assert_eq!(
        ids(&m.search("ci", None, 10).await.unwrap()),
        [e.id.as_str()]
    );
    // Content another entry already holds is refused.
    let clash = MemoryChange {
        content: Some("Cargo  CLIPPY".into()),
        ..MemoryChange::default()
    };
    let err = m.update(&e.id, clash, &EditScope::All).await.unwrap_err();
    assert!(
        matches!(&err, MemoryError::Invalid(msg) if msg.contains(&other.id)),
        "{err:?}"
    );
    // Another project may not change it.
    let denied = m
        .update(
            &e.id,
            MemoryChange {
                title: Some("x".into()),
                ..MemoryChange::default()
            },
            &EditScope::Project("/v".into()),
        )
        .await;
    assert!(
        matches!(
            denied,
            Err(MemoryError::Denied {
                why: Denial::OtherProject,
                ..
            })
        ),
        "{denied:?}"
    );
}

#[tokio::test]
async fn a_removed_memory_is_gone_and_its_id_never_comes_back() {
    let (_url, m) = pg_memory!("memory_remove");
    let a = add(&m, "A", "alpha note", Some("/w")).await;
    let b = add(&m, "B", "beta note", Some("/w")).await;
    let global = add(&m, "G", "gamma note", None).await;
    assert!(matches!(
        m.remove(&global.id, &EditScope::Project("/w".into())).await,
        Err(MemoryError::Denied {
            why: Denial::Global,
            ..
        })
    ));
    assert_eq!(
        m.remove(&b.id, &EditScope::Project("/w".into()))
            .await
            .unwrap()
            .id,
        b.id
    );
    assert!(matches!(m.get(&b.id).await, Err(MemoryError::NotFound(_))));
    assert!(matches!(
        m.remove(&b.id, &EditScope::All).await,
        Err(MemoryError::NotFound(_))
    ));
    assert!(m.search("beta", None, 10).await.unwrap().is_empty());
    let mut found = ids(&m.search("note", None, 10).await.unwrap())
        .into_iter()
        .map(str::to_string)
        .collect::<Vec<_>>();
    found.sort();
    assert_eq!(found, [a.id.clone(), global.id.clone()]);
    assert_eq!(
        add(&m, "D", "delta note", Some("/w")).await.id,
        "m4",
        "ids are not reused"
    );
    assert!(
        !m.add(note("B", "beta note", Some("/w")))
            .await
            .unwrap()
            .is_duplicate()
    );
}

#[tokio::test]
async fn bad_ids_and_hostile_queries_are_handled_without_errors_from_sql() {
    let (_url, m) = pg_memory!("memory_hostile");
    let e = add(
        &m,
        "Quotes",
        "he said \"NEAR\" the (config) file: a-b AND c* it's",
        None,
    )
    .await;
    add(&m, "Other", "nothing to see", None).await;
    for bad in ["", "abc", "m0", "m-1", "1; DROP TABLE memories"] {
        let err = m.get(bad).await.unwrap_err();
        assert!(
            matches!(&err, MemoryError::Invalid(msg) if msg.contains("m12")),
            "{bad:?}: {err:?}"
        );
    }
    assert!(matches!(
        m.get("m99999999999999999999").await,
        Err(MemoryError::Invalid(_) | MemoryError::NotFound(_))
    ));
    for query in [
        "\"",
        "*",
        "-",
        ":",
        "title:quotes",
        "(",
        "(config",
        "AND",
        "OR OR OR",
        "NEAR(a b)",
        "a & b",
        "a | !b",
        "<->",
        "'",
        "''",
        "it's",
        "\\",
        "\\'",
        "a:*",
        "'; DROP TABLE memories; --",
        "\0",
        "é ✓ 🦀",
        "",
        "   ",
    ] {
        let result = m.search(query, None, 10).await;
        assert!(result.is_ok(), "{query:?}: {result:?}");
    }
    assert_eq!(
        ids(&m.search("\"config\"", None, 10).await.unwrap()),
        [&e.id]
    );
    assert_eq!(
        ids(&m.search("title:quotes", None, 10).await.unwrap()),
        [&e.id]
    );
    assert_eq!(ids(&m.search("near", None, 10).await.unwrap()), [&e.id]);
    assert!(m.search("*", None, 10).await.unwrap().is_empty());
    assert_eq!(m.list(None, 10).await.unwrap().len(), 2, "nothing dropped");
}

#[tokio::test]
async fn scopes_uses_and_the_prompt_follow_the_sqlite_memory() {
    let (_url, m) = pg_memory!("memory_scopes");
    let mine = add(&m, "Mine", "shared tip in w", Some("/w")).await;
    tick().await;
    let theirs = add(&m, "Theirs", "shared tip in v", Some("/v")).await;
    tick().await;
    let global = add(&m, "Global", "shared tip everywhere", None).await;
    let mut found = ids(&m.search("shared", Some("/w"), 10).await.unwrap())
        .into_iter()
        .map(str::to_string)
        .collect::<Vec<_>>();
    found.sort();
    let mut want = vec![mine.id.clone(), global.id.clone()];
    want.sort();
    assert_eq!(found, want);
    assert_eq!(
        ids(&m.list(Some("/v"), 10).await.unwrap()),
        [global.id.as_str(), theirs.id.as_str()]
    );
    // Uses: mine 1 (search above) + 2 gets; global 1; theirs 0.
    m.get(&mine.id).await.unwrap();
    assert_eq!(m.get(&mine.id).await.unwrap().uses, 3);
    let order = |v: Vec<MemoryEntry>| v.into_iter().map(|e| e.id).collect::<Vec<_>>();
    assert_eq!(
        order(m.top_for_prompt(None, 4096).await.unwrap()),
        [mine.id.clone(), global.id.clone(), theirs.id.clone()]
    );
    let uses: Vec<u64> = m
        .list(None, 10)
        .await
        .unwrap()
        .iter()
        .map(|e| e.uses)
        .collect();
    assert_eq!(
        uses,
        [1, 0, 3],
        "listing and the prompt do not count as uses"
    );
    for budget in [0, 40, 200, 400, 4096] {
        let top = m.top_for_prompt(Some("/w"), budget).await.unwrap();
        let section = prompt_section(&top, budget);
        assert!(section.len() <= budget, "{budget}: {}", section.len());
        assert_eq!(section.matches("- [m").count(), top.len(), "{budget}");
        assert!(!ids(&top).contains(&theirs.id.as_str()));
    }
}
