//! `SqliteMemory` against real database files: search ranking, dedup,
//! scoping, the uses counter, the prompt budget, locking.
//!
//! Search, dedup, updates and removal are tested here; project scoping,
//! the prompt section and the database file in the submodules.

use std::path::Path;

use rein_core::{
    memory::Added, memory::Denial, memory::EditScope, memory::LongTermMemory, memory::MemoryChange,
    memory::MemoryEntry, memory::MemoryError, memory::MemoryOrigin, memory::NewMemory,
};
use rein_store::SqliteMemory;

use super::fixtures::{temp_db, tick};

#[path = "memory/database.rs"]
mod database;
#[path = "memory/projects.rs"]
mod projects;
#[path = "memory/prompt.rs"]
mod prompt;

fn open(path: &Path) -> SqliteMemory {
    SqliteMemory::open(path).unwrap()
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

fn own(project: &str) -> EditScope {
    EditScope::Project(project.to_string())
}

async fn add(m: &SqliteMemory, title: &str, content: &str, project: Option<&str>) -> MemoryEntry {
    match m.add(note(title, content, project)).await.unwrap() {
        Added::New(e) => e,
        Added::Duplicate(e) => panic!("unexpected duplicate of {}", e.id),
    }
}

fn ids(entries: &[MemoryEntry]) -> Vec<&str> {
    entries.iter().map(|e| e.id.as_str()).collect()
}

#[tokio::test]
async fn an_added_memory_is_found_by_its_words_with_every_field_kept() {
    let db = temp_db();
    let m = open(&db.path);
    let saved = m
        .add(NewMemory {
            title: "Running the tests".into(),
            content: "Use `cargo test -p rein-store`;\nthe CLI tests build the binary.".into(),
            tags: vec!["Rust".into(), "ci".into()],
            project: Some("/w".into()),
            origin: MemoryOrigin::Model,
        })
        .await
        .unwrap();
    assert!(!saved.is_duplicate());
    let saved = saved.into_entry();
    assert_eq!(saved.id, "m1");
    assert_eq!(saved.tags, ["rust", "ci"]);
    assert_eq!(saved.uses, 0);

    let found = m.search("binary", Some("/w"), 10).await.unwrap();
    assert_eq!(found.len(), 1);
    let hit = &found[0];
    assert_eq!(hit.id, saved.id);
    assert_eq!(hit.title, saved.title);
    assert_eq!(hit.content, saved.content);
    assert_eq!(hit.tags, saved.tags);
    assert_eq!(hit.project.as_deref(), Some("/w"));
    assert_eq!(hit.created_at, saved.created_at);
    // Prefixes match, tags are searchable, case does not matter.
    assert_eq!(ids(&m.search("TEST", None, 10).await.unwrap()), ["m1"]);
    assert_eq!(ids(&m.search("rust", None, 10).await.unwrap()), ["m1"]);
    assert!(m.search("python", None, 10).await.unwrap().is_empty());
    // And it is all still there after reopening.
    drop(m);
    let m = open(&db.path);
    assert_eq!(m.list(None, 10).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_match_in_the_title_ranks_above_one_mention_in_the_content() {
    let db = temp_db();
    let m = open(&db.path);
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
    // Matching more of the query's words beats matching fewer.
    let found = m.search("database step released", None, 10).await.unwrap();
    assert_eq!(found[0].id, titled.id);
    // The limit keeps the best.
    assert_eq!(
        ids(&m.search("migrations", None, 1).await.unwrap()),
        [titled.id.as_str()]
    );
}

#[tokio::test]
async fn the_same_content_spaced_or_cased_differently_is_one_memory() {
    let db = temp_db();
    let m = open(&db.path);
    let first = add(&m, "Tests", "Run  the tests with\ncargo test", Some("/w")).await;
    let again = m
        .add(note(
            "Other title",
            "  run the TESTS with cargo   test ",
            Some("/w"),
        ))
        .await
        .unwrap();
    let Added::Duplicate(known) = again else {
        panic!("expected a duplicate, got {again:?}")
    };
    assert_eq!(known, first, "the existing entry comes back unchanged");
    // Another project does not see /w's entry, so it gets its own.
    let other = m
        .add(note("Tests", "run the tests with cargo test", Some("/v")))
        .await
        .unwrap();
    assert!(!other.is_duplicate());
    // A global entry is visible in every project: adding it there is a duplicate.
    let global = add(&m, "Style", "No unwrap outside tests.", None).await;
    let in_project = m
        .add(note("style", "no unwrap outside TESTS.", Some("/w")))
        .await
        .unwrap();
    assert_eq!(in_project, Added::Duplicate(global));
    assert_eq!(m.list(None, 10).await.unwrap().len(), 3);
}

#[tokio::test]
async fn an_update_changes_the_entry_and_its_index() {
    let db = temp_db();
    let m = open(&db.path);
    let e = add(&m, "Tests", "run them with make", Some("/w")).await;
    let other = add(&m, "Lint", "cargo clippy", Some("/w")).await;
    tick().await;
    let changed = m
        .update(
            &e.id,
            MemoryChange {
                content: Some("run them with cargo nextest".into()),
                tags: Some(vec!["ci".into()]),
                ..MemoryChange::default()
            },
            &own("/w"),
        )
        .await
        .unwrap();
    assert_eq!(changed.title, "Tests");
    assert_eq!(changed.content, "run them with cargo nextest");
    assert_eq!(changed.tags, ["ci"]);
    assert!(changed.updated_at > e.updated_at);
    assert_eq!(changed.created_at, e.created_at);
    assert!(m.search("make", None, 10).await.unwrap().is_empty());
    assert_eq!(ids(&m.search("nextest", None, 10).await.unwrap()), [&e.id]);
    assert_eq!(ids(&m.search("ci", None, 10).await.unwrap()), [&e.id]);

    // Content another entry already holds is refused, naming it.
    let clash = m
        .update(
            &e.id,
            MemoryChange {
                content: Some("Cargo  Clippy".into()),
                ..MemoryChange::default()
            },
            &EditScope::All,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&clash, MemoryError::Invalid(msg) if msg.contains(&other.id)),
        "{clash:?}"
    );
    // Unknown ids, other projects' entries and empty changes are refused.
    let title = || MemoryChange {
        title: Some("x".into()),
        ..MemoryChange::default()
    };
    assert!(matches!(
        m.update("m99", title(), &EditScope::All).await,
        Err(MemoryError::NotFound(id)) if id == "m99"
    ));
    assert!(matches!(
        m.update(&e.id, title(), &own("/v")).await,
        Err(MemoryError::Denied {
            why: Denial::OtherProject,
            ..
        })
    ));
    assert!(matches!(
        m.update(&e.id, MemoryChange::default(), &EditScope::All)
            .await,
        Err(MemoryError::Invalid(_))
    ));
    assert_eq!(m.get(&e.id).await.unwrap().content, changed.content);
}

#[tokio::test]
async fn a_removed_memory_is_gone_and_its_id_never_comes_back() {
    let db = temp_db();
    let m = open(&db.path);
    let a = add(&m, "A", "alpha note", Some("/w")).await;
    let b = add(&m, "B", "beta note", Some("/w")).await;
    assert!(matches!(
        m.remove(&b.id, &own("/v")).await,
        Err(MemoryError::Denied {
            why: Denial::OtherProject,
            ..
        })
    ));
    let removed = m.remove(&b.id, &own("/w")).await.unwrap();
    assert_eq!(removed.id, b.id);
    assert!(matches!(m.get(&b.id).await, Err(MemoryError::NotFound(_))));
    assert!(matches!(
        m.remove(&b.id, &EditScope::All).await,
        Err(MemoryError::NotFound(_))
    ));
    assert!(m.search("beta", None, 10).await.unwrap().is_empty());
    assert_eq!(ids(&m.search("note", None, 10).await.unwrap()), [&a.id]);
    let c = add(&m, "C", "gamma note", Some("/w")).await;
    assert_eq!(c.id, "m3", "ids are not reused");
    // The same content can be saved again once removed.
    assert!(
        !m.add(note("B", "beta note", Some("/w")))
            .await
            .unwrap()
            .is_duplicate()
    );
}

#[tokio::test]
async fn bad_ids_are_refused_clearly() {
    let db = temp_db();
    let m = open(&db.path);
    for bad in ["", "abc", "m0", "m-1", "1; DROP TABLE memories"] {
        let e = m.get(bad).await.unwrap_err();
        assert!(
            matches!(&e, MemoryError::Invalid(msg) if msg.contains("m12")),
            "{bad:?}: {e:?}"
        );
        assert!(matches!(
            m.remove(bad, &EditScope::All).await,
            Err(MemoryError::Invalid(_))
        ));
    }
    assert!(matches!(
        m.get("m99999999999999999999").await,
        Err(MemoryError::Invalid(_) | MemoryError::NotFound(_))
    ));
}

#[tokio::test]
async fn hostile_queries_never_fail_and_find_only_plain_words() {
    let db = temp_db();
    let m = open(&db.path);
    let e = add(
        &m,
        "Quotes",
        "he said \"NEAR\" the (config) file: a-b AND c*",
        None,
    )
    .await;
    add(&m, "Other", "nothing to see", None).await;
    for query in [
        "\"",
        "\"\"\"",
        "*",
        "-",
        "-config",
        ":",
        "title:quotes",
        "content:",
        "(",
        ")",
        "(config",
        "AND",
        "OR",
        "NOT",
        "NEAR",
        "NEAR(a b)",
        "a AND",
        "OR OR OR",
        "^quotes",
        "{title content}: x",
        "a-b",
        "c*",
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
