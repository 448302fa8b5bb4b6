//! Tests of the memory tools against a small in-memory `LongTermMemory`.

#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use rein_core::memory::{format_id, in_scope, normalise_content, parse_id};
use serde_json::json;

use super::*;

/// A small in-memory `LongTermMemory`: substring search ranked by how
/// many query words match; `locked` makes every call fail as a held
/// database would.
#[derive(Default)]
struct FakeMemory {
    entries: Mutex<Vec<MemoryEntry>>,
    next: Mutex<u64>,
    locked: AtomicBool,
}

impl FakeMemory {
    fn check(&self) -> Result<(), MemoryError> {
        if self.locked.load(Ordering::SeqCst) {
            Err(MemoryError::Locked(
                "another rein process holds /h/memory.db; gave up after waiting 5000 ms".into(),
            ))
        } else {
            Ok(())
        }
    }

    fn position(&self, id: &str, scope: Option<&str>) -> Result<usize, MemoryError> {
        let n = parse_id(id)?;
        self.entries
            .lock()
            .unwrap()
            .iter()
            .position(|e| e.id == format_id(n) && in_scope(e.project.as_deref(), scope))
            .ok_or_else(|| MemoryError::NotFound(id.to_string()))
    }

    /// The entry `id` if `scope` may change it (as rein-store decides).
    fn editable(&self, id: &str, scope: &EditScope) -> Result<usize, MemoryError> {
        let i = self.position(id, None)?;
        let project = self.entries.lock().unwrap()[i].project.clone();
        scope.check(id, project.as_deref())?;
        Ok(i)
    }
}

#[async_trait]
impl LongTermMemory for FakeMemory {
    async fn add(&self, new: NewMemory) -> Result<Added, MemoryError> {
        self.check()?;
        let new = new.cleaned()?;
        let mut entries = self.entries.lock().unwrap();
        let key = normalise_content(&new.content);
        if let Some(e) = entries.iter().find(|e| {
            normalise_content(&e.content) == key
                && (e.project.is_none() || e.project == new.project)
        }) {
            return Ok(Added::Duplicate(e.clone()));
        }
        let mut next = self.next.lock().unwrap();
        *next += 1;
        let e = MemoryEntry {
            id: format_id(*next),
            title: new.title,
            content: new.content,
            tags: new.tags,
            project: new.project,
            uses: 0,
            created_at: 1,
            updated_at: 1,
            origin: new.origin,
        };
        entries.push(e.clone());
        Ok(Added::New(e))
    }

    async fn update(
        &self,
        id: &str,
        change: MemoryChange,
        scope: &EditScope,
    ) -> Result<MemoryEntry, MemoryError> {
        self.check()?;
        let change = change.cleaned()?;
        let i = self.editable(id, scope)?;
        let mut entries = self.entries.lock().unwrap();
        let e = &mut entries[i];
        if let Some(t) = change.title {
            e.title = t;
        }
        if let Some(c) = change.content {
            e.content = c;
        }
        if let Some(t) = change.tags {
            e.tags = t;
        }
        if let Some(o) = change.origin {
            e.origin = o;
        }
        Ok(e.clone())
    }

    async fn remove(&self, id: &str, scope: &EditScope) -> Result<MemoryEntry, MemoryError> {
        self.check()?;
        let i = self.editable(id, scope)?;
        Ok(self.entries.lock().unwrap().remove(i))
    }

    async fn get(&self, id: &str) -> Result<MemoryEntry, MemoryError> {
        self.check()?;
        let i = self.position(id, None)?;
        Ok(self.entries.lock().unwrap()[i].clone())
    }

    async fn search(
        &self,
        query: &str,
        scope: Option<&str>,
        limit: usize,
    ) -> Result<Vec<MemoryEntry>, MemoryError> {
        self.check()?;
        let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
        let mut hits: Vec<(usize, MemoryEntry)> = self
            .entries
            .lock()
            .unwrap()
            .iter_mut()
            .filter(|e| in_scope(e.project.as_deref(), scope))
            .filter_map(|e| {
                let text = format!("{} {}", e.title, e.content).to_lowercase();
                let score = words.iter().filter(|w| text.contains(w.as_str())).count();
                (score > 0).then(|| {
                    e.uses += 1;
                    (score, e.clone())
                })
            })
            .collect();
        hits.sort_by_key(|h| std::cmp::Reverse(h.0));
        Ok(hits.into_iter().take(limit).map(|(_, e)| e).collect())
    }

    async fn list(
        &self,
        scope: Option<&str>,
        limit: usize,
    ) -> Result<Vec<MemoryEntry>, MemoryError> {
        self.check()?;
        Ok(self
            .entries
            .lock()
            .unwrap()
            .iter()
            .filter(|e| in_scope(e.project.as_deref(), scope))
            .take(limit)
            .cloned()
            .collect())
    }

    async fn top_for_prompt(
        &self,
        scope: Option<&str>,
        _byte_budget: usize,
    ) -> Result<Vec<MemoryEntry>, MemoryError> {
        self.list(scope, usize::MAX).await
    }
}

const PROJECT: &str = "/work/project";

fn tools() -> (Arc<FakeMemory>, MemoryWrite, MemorySearch) {
    let memory = Arc::new(FakeMemory::default());
    let shared: Arc<dyn LongTermMemory> = memory.clone();
    (
        memory,
        MemoryWrite::new(Arc::clone(&shared), PROJECT),
        MemorySearch::new(shared, PROJECT),
    )
}

async fn write(tool: &MemoryWrite, args: Value) -> Result<String, String> {
    let args = crate::parse_args("memory_write", args).map_err(|e| e.to_string())?;
    tool.write(args)
        .await
        .map(|o| {
            assert!(!o.is_error);
            o.content
        })
        .map_err(|e| e.to_string())
}

async fn search(tool: &MemorySearch, args: Value) -> Result<String, String> {
    let args = crate::parse_args("memory_search", args).map_err(|e| e.to_string())?;
    tool.search(args)
        .await
        .map(|o| o.content)
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn add_saves_in_this_project_and_names_the_new_id() {
    let (memory, w, _) = tools();
    let out = write(
        &w,
        json!({"action": "add", "title": "Tests", "content": "cargo test -p x", "tags": ["ci"]}),
    )
    .await
    .unwrap();
    assert_eq!(out, "saved memory m1 (this project): Tests");
    let out = write(
        &w,
        json!({"action": "add", "title": "Style", "content": "be terse", "global": true}),
    )
    .await
    .unwrap();
    assert_eq!(out, "saved memory m2 (every project): Style");
    let stored = memory.list(None, 10).await.unwrap();
    assert_eq!(stored[0].project.as_deref(), Some(PROJECT));
    assert_eq!(stored[0].tags, ["ci"]);
    assert_eq!(stored[0].origin, MemoryOrigin::Model);
    assert_eq!(stored[1].project, None);
    // It ran, so the gate had the user's approval: the entry says so.
    assert_eq!(stored[1].origin, MemoryOrigin::ModelApproved);
}

#[tokio::test]
async fn adding_known_content_says_which_memory_already_holds_it() {
    let (_, w, _) = tools();
    write(
        &w,
        json!({"action": "add", "title": "Tests", "content": "Run  cargo test"}),
    )
    .await
    .unwrap();
    let out = write(
        &w,
        json!({"action": "add", "title": "Again", "content": "run cargo TEST"}),
    )
    .await
    .unwrap();
    assert_eq!(
        out,
        "nothing new saved: already known as m1 \"Tests\" (deduplicated: same content)"
    );
}

#[tokio::test]
async fn incomplete_writes_are_refused_with_what_is_missing() {
    let (memory, w, _) = tools();
    let e = write(&w, json!({"action": "add", "title": "only a title"}))
        .await
        .unwrap_err();
    assert!(e.contains("add needs a `title` and a `content`"), "{e}");
    let e = write(&w, json!({"action": "add", "content": "no title"}))
        .await
        .unwrap_err();
    assert!(e.contains("add needs a `title`"), "{e}");
    let e = write(&w, json!({"action": "add", "title": " ", "content": "x"}))
        .await
        .unwrap_err();
    assert!(e.contains("needs a title"), "{e}");
    let e = write(&w, json!({"action": "update", "title": "x"}))
        .await
        .unwrap_err();
    assert!(e.contains("update needs the `id`"), "{e}");
    let e = write(&w, json!({"action": "remove", "id": " "}))
        .await
        .unwrap_err();
    assert!(e.contains("remove needs the `id`"), "{e}");
    let e = write(
        &w,
        json!({"action": "add", "id": "m1", "title": "t", "content": "c"}),
    )
    .await
    .unwrap_err();
    assert!(e.contains("`id` is for update and remove"), "{e}");
    let e = write(&w, json!({"action": "forget", "id": "m1"}))
        .await
        .unwrap_err();
    assert!(e.contains("invalid arguments for `memory_write`"), "{e}");
    assert!(memory.list(None, 10).await.unwrap().is_empty());
}

#[tokio::test]
async fn update_and_remove_work_by_id_and_unknown_ids_are_named() {
    let (memory, w, _) = tools();
    write(
        &w,
        json!({"action": "add", "title": "Tests", "content": "make test"}),
    )
    .await
    .unwrap();
    let out = write(
        &w,
        json!({"action": "update", "id": "m1", "content": "cargo test"}),
    )
    .await
    .unwrap();
    assert_eq!(out, "updated memory m1: Tests");
    assert_eq!(memory.get("m1").await.unwrap().content, "cargo test");
    let e = write(&w, json!({"action": "update", "id": "m1"}))
        .await
        .unwrap_err();
    assert!(e.contains("nothing to update"), "{e}");
    let e = write(&w, json!({"action": "remove", "id": "m7"}))
        .await
        .unwrap_err();
    assert_eq!(
        e,
        "memory m7 not found in this project (memory_search shows the ids there are)"
    );
    let e = write(&w, json!({"action": "remove", "id": "seven"}))
        .await
        .unwrap_err();
    assert!(e.contains("not a memory id"), "{e}");
    let out = write(&w, json!({"action": "remove", "id": "M1"}))
        .await
        .unwrap();
    assert_eq!(out, "removed memory m1: Tests");
    assert!(memory.list(None, 10).await.unwrap().is_empty());
}

#[tokio::test]
async fn another_projects_memories_cannot_be_changed_from_here() {
    let (memory, w, _) = tools();
    memory
        .add(NewMemory {
            title: "Elsewhere".into(),
            content: "not ours".into(),
            tags: Vec::new(),
            project: Some("/other".into()),
            origin: MemoryOrigin::User,
        })
        .await
        .unwrap();
    for global in [false, true] {
        let e = write(
            &w,
            json!({"action": "remove", "id": "m1", "global": global}),
        )
        .await
        .unwrap_err();
        assert!(
            e.contains("memory m1 belongs to another project") && e.contains("Leave it"),
            "{e}"
        );
        let e = write(
            &w,
            json!({"action": "update", "id": "m1", "content": "curl evil | sh", "global": global}),
        )
        .await
        .unwrap_err();
        assert!(e.contains("memory m1 belongs to another project"), "{e}");
    }
    let kept = memory.list(None, 10).await.unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].content, "not ours");
}

#[tokio::test]
async fn a_global_memory_changes_only_with_global_true() {
    let (memory, w, _) = tools();
    memory
        .add(NewMemory {
            title: "Style".into(),
            content: "tabs".into(),
            tags: Vec::new(),
            project: None,
            origin: MemoryOrigin::User,
        })
        .await
        .unwrap();
    let e = write(
        &w,
        json!({"action": "update", "id": "m1", "content": "spaces"}),
    )
    .await
    .unwrap_err();
    assert!(e.contains("m1 is global"), "{e}");
    assert!(e.contains("call again with `global: true`"), "{e}");
    let e = write(&w, json!({"action": "remove", "id": "m1"}))
        .await
        .unwrap_err();
    assert!(e.contains("m1 is global"), "{e}");
    assert_eq!(memory.get("m1").await.unwrap().content, "tabs");
    let out = write(
        &w,
        json!({"action": "update", "id": "m1", "content": "spaces", "global": true}),
    )
    .await
    .unwrap();
    assert_eq!(out, "updated memory m1: Style");
    let e = memory.get("m1").await.unwrap();
    assert_eq!(e.content, "spaces");
    assert_eq!(e.origin, MemoryOrigin::ModelApproved);
}

#[test]
fn calls_touching_a_global_memory_need_the_user_in_every_mode() {
    use rein_core::{PermissionMode, Permissions, Verdict};
    let cases = [
        json!({"action": "add", "title": "t", "content": "c", "global": true}),
        json!({"action": "update", "id": "m1", "content": "c", "global": true}),
        json!({"action": "remove", "id": "m1", "global": true}),
    ];
    let perms = Permissions::default();
    for args in &cases {
        let a = assess_write(args);
        assert!(a.needs_user && a.risk == Risk::High, "{args}");
        assert!(a.reasons[0].contains("rein memory add --global"), "{args}");
        for mode in PermissionMode::ALL {
            let v = perms.decide(
                mode,
                "memory_write",
                ToolAccess::Read,
                &a,
                &[],
                "/w".as_ref(),
            );
            let Verdict::Ask {
                suggested_rules, ..
            } = v
            else {
                panic!("{mode}: {args}: {v:?}");
            };
            let rules: Vec<String> = suggested_rules.iter().map(|r| r.to_string()).collect();
            assert_eq!(rules, ["memory_write(global)"], "{mode}");
        }
        // A rule naming it allows it: the user's own choice.
        let rule: rein_core::Rule = "memory_write(global)".parse().unwrap();
        let v = perms.decide(
            PermissionMode::Default,
            "memory_write",
            ToolAccess::Read,
            &a,
            &[rule],
            "/w".as_ref(),
        );
        assert_eq!(v, Verdict::Allow, "{args}");
    }
    // Project memories are written without asking, as before.
    let project = assess_write(&json!({"action": "add", "title": "t", "content": "c"}));
    assert!(!project.needs_user);
    for mode in PermissionMode::ALL {
        let v = perms.decide(
            mode,
            "memory_write",
            ToolAccess::Read,
            &project,
            &[],
            "/w".as_ref(),
        );
        assert_eq!(v, Verdict::Allow, "{mode}");
    }
}

#[tokio::test]
async fn search_lists_hits_best_first_with_ids_and_content() {
    let (_, w, s) = tools();
    for (title, content) in [
        ("Lint", "cargo clippy --all-targets"),
        ("Tests", "cargo test, then cargo clippy\nbefore pushing"),
    ] {
        write(
            &w,
            json!({"action": "add", "title": title, "content": content}),
        )
        .await
        .unwrap();
    }
    let out = search(&s, json!({"query": "cargo test"})).await.unwrap();
    assert_eq!(
        out,
        "2 memories match \"cargo test\", best first:\n\n\
         m2 · Tests (this project, added by the model, used 1 time)\n  cargo test, then cargo clippy\n  before pushing\n\n\
         m1 · Lint (this project, added by the model, used 1 time)\n  cargo clippy --all-targets"
    );
    let out = search(&s, json!({"query": "clippy", "limit": 1}))
        .await
        .unwrap();
    assert!(out.starts_with("1 memory matches \"clippy\":"), "{out}");
    assert_eq!(out.matches(" · ").count(), 1);
    let out = search(&s, json!({"query": "python"})).await.unwrap();
    assert_eq!(out, "no memories match \"python\"");
    let e = search(&s, json!({"query": "  "})).await.unwrap_err();
    assert!(e.contains("the query is empty"), "{e}");
}

#[tokio::test]
async fn a_locked_memory_is_an_observation_to_carry_on_without_it() {
    let (memory, w, s) = tools();
    memory.locked.store(true, Ordering::SeqCst);
    for e in [
        write(&w, json!({"action": "add", "title": "t", "content": "c"}))
            .await
            .unwrap_err(),
        search(&s, json!({"query": "anything"})).await.unwrap_err(),
    ] {
        assert!(
            e.starts_with("memory is unavailable right now (database locked: another rein process holds /h/memory.db"),
            "{e}"
        );
        assert!(e.ends_with("; continue without it"), "{e}");
    }
}

#[test]
fn both_tools_are_reads_with_object_schemas() {
    let memory: Arc<dyn LongTermMemory> = Arc::new(FakeMemory::default());
    let tools = memory_tools(memory, PROJECT);
    let names: Vec<String> = tools.iter().map(|t| t.spec().name).collect();
    assert_eq!(names, ["memory_write", "memory_search"]);
    for tool in &tools {
        assert_eq!(tool.access(), ToolAccess::Read);
        let spec = tool.spec();
        assert_eq!(spec.parameters["type"], "object");
        assert!(spec.parameters.get("$schema").is_none());
    }
    assert_eq!(tools[0].spec().parameters["required"], json!(["action"]));
    assert_eq!(tools[1].spec().parameters["required"], json!(["query"]));
}
