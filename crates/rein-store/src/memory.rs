//! `SqliteMemory`: long-term memory in its own SQLite file (`memory.db`,
//! beside but apart from the sessions), searched with FTS5 and ranked with
//! bm25.
//!
//! One file per user: entries carry the project (workspace path) they belong
//! to, or none for notes that hold everywhere. Content is deduplicated by the
//! SHA-256 of its normalised form. Opening, locking and errors follow
//! [`SqliteStore`](crate::SqliteStore): WAL mode, a busy timeout, and a
//! locked database reported as [`MemoryError::Locked`] naming the file.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{Connection, Row, TransactionBehavior, params};
use sha2::{Digest, Sha256};

use rein_core::StoreError;
use rein_core::memory::{
    Added, EditScope, LongTermMemory, MemoryChange, MemoryEntry, MemoryError, MemoryOrigin,
    NewMemory, format_id, normalise_content, parse_id, prompt_fit,
};
use rein_core::time::now_millis;

use crate::SqliteOptions;
use crate::conn::ConnThread;
use crate::error::{Context, Fail};

pub(crate) mod fts;
mod schema;

use crate::conn::is_busy;
pub(crate) use fts::fts_query;
pub use schema::MEMORY_SCHEMA_VERSION;
use schema::prepare;

/// bm25 weights of the indexed columns: a word in the title says more
/// about an entry than the same word in its content; tags sit between.
const BM25_WEIGHTS: &str = "8.0, 1.0, 3.0";

/// Most entries one search or list returns.
const MAX_LIMIT: usize = 200;

/// Long-term memory in one SQLite database. Cloning is cheap and shares the
/// connection.
/// The name of the connection's thread.
const THREAD: &str = "rein-memory-db";

#[derive(Clone)]
pub struct SqliteMemory {
    conn: ConnThread,
    path: Arc<PathBuf>,
    busy_timeout: Duration,
}

impl std::fmt::Debug for SqliteMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteMemory")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// A failure inside one operation: a database error (classified once the
/// path is at hand) or an answer that is already final.
#[derive(Debug)]
enum Oops {
    Db(Fail),
    Memory(MemoryError),
}

impl From<Fail> for Oops {
    fn from(f: Fail) -> Self {
        Oops::Db(f)
    }
}

impl From<MemoryError> for Oops {
    fn from(e: MemoryError) -> Self {
        Oops::Memory(e)
    }
}

impl Oops {
    fn into_memory(self, path: &str, busy_timeout: Duration) -> MemoryError {
        match self {
            Oops::Memory(e) => e,
            Oops::Db(f) => match f.into_store(path, busy_timeout) {
                StoreError::Locked(m) => MemoryError::Locked(m),
                StoreError::NotFound(m) => MemoryError::NotFound(m),
                StoreError::Corrupt(m) => {
                    MemoryError::Other(format!("the memory database is unusable: {m}"))
                }
                StoreError::Other(m) => MemoryError::Other(m),
                other => MemoryError::Other(other.to_string()),
            },
        }
    }
}

impl SqliteMemory {
    /// Open (creating it and its parent directories if needed) the memory
    /// database at `path`. Blocks briefly: call it at start-up.
    pub fn open(path: &Path) -> Result<SqliteMemory, MemoryError> {
        Self::open_with(path, SqliteOptions::default())
    }

    /// [`open`](Self::open) with explicit options (the busy timeout).
    pub fn open_with(path: &Path, options: SqliteOptions) -> Result<SqliteMemory, MemoryError> {
        let shown = path.display().to_string();
        crate::conn::private_db_file(path).map_err(MemoryError::Other)?;
        let conn = Connection::open(path)
            .ctx("opening the memory database")
            .map_err(Oops::from)
            .and_then(|mut conn| prepare(&mut conn, &shown, &options).map(|()| conn))
            .map_err(|o| o.into_memory(&shown, options.busy_timeout))?;
        Ok(SqliteMemory {
            conn: ConnThread::start(conn, THREAD).map_err(|e| {
                MemoryError::Other(format!("cannot start the thread of {shown}: {e}"))
            })?,
            path: Arc::new(path.to_path_buf()),
            busy_timeout: options.busy_timeout,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Run `f` with the connection on its thread.
    async fn run<T, F>(&self, f: F) -> Result<T, MemoryError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, Oops> + Send + 'static,
    {
        let joined = self.conn.run(f).await;
        let shown = self.path.display().to_string();
        match joined {
            Ok(result) => result.map_err(|o| o.into_memory(&shown, self.busy_timeout)),
            Err(e) => Err(MemoryError::Other(format!(
                "memory operation on {shown} did not finish: {e}"
            ))),
        }
    }
}

/// The SHA-256, in hex, of content's normalised form.
pub(crate) fn content_hash(content: &str) -> String {
    let digest = Sha256::digest(normalise_content(content).as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

const COLUMNS: &str =
    "m.id, m.project, m.title, m.content, m.tags, m.uses, m.created_at, m.updated_at, m.origin";

/// The stored form of a project: '' for every project.
fn project_key(project: Option<&str>) -> &str {
    project.unwrap_or("")
}

fn entry_from_row(row: &Row<'_>) -> rusqlite::Result<(MemoryEntry, String)> {
    let id: i64 = row.get(0)?;
    let project: String = row.get(1)?;
    let tags: String = row.get(4)?;
    Ok((
        MemoryEntry {
            id: format_id(u64::try_from(id).unwrap_or(0)),
            title: row.get(2)?,
            content: row.get(3)?,
            tags: Vec::new(),
            project: (!project.is_empty()).then_some(project),
            uses: u64::try_from(row.get::<_, i64>(5)?).unwrap_or(0),
            created_at: row.get(6)?,
            updated_at: row.get(7)?,
            origin: MemoryOrigin::parse(&row.get::<_, String>(8)?),
        },
        tags,
    ))
}

/// Entries from rows, their tags decoded; unreadable tags are corruption.
fn collect(rows: Vec<(MemoryEntry, String)>) -> Result<Vec<MemoryEntry>, Oops> {
    rows.into_iter()
        .map(|(mut entry, tags)| {
            entry.tags = serde_json::from_str(&tags).map_err(|e| {
                Fail::Corrupt(format!(
                    "the tags of memory {} cannot be read: {e}",
                    entry.id
                ))
            })?;
            Ok(entry)
        })
        .collect()
}

/// Rows of `sql` (which selects [`COLUMNS`]) with `params`.
fn query(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    context: &'static str,
) -> Result<Vec<MemoryEntry>, Oops> {
    let mut stmt = conn.prepare_cached(sql).ctx(context)?;
    let rows = stmt
        .query_map(params, entry_from_row)
        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
        .ctx(context)?;
    collect(rows)
}

/// The entry numbered `n`, if there is one.
fn find(conn: &Connection, n: i64) -> Result<Option<MemoryEntry>, Oops> {
    Ok(query(
        conn,
        &format!("SELECT {COLUMNS} FROM memories m WHERE m.id = ?1"),
        [n],
        "reading a memory",
    )?
    .into_iter()
    .next())
}

/// The entry `id` names, if `scope` may change it: missing is
/// [`MemoryError::NotFound`], out of scope [`MemoryError::Denied`].
fn find_editable(
    conn: &Connection,
    id: &str,
    n: i64,
    scope: &EditScope,
) -> Result<MemoryEntry, Oops> {
    let entry = find(conn, n)?.ok_or_else(|| not_found(id))?;
    scope.check(id, entry.project.as_deref())?;
    Ok(entry)
}

/// The row number of an id, or why there is none.
fn number(id: &str) -> Result<i64, MemoryError> {
    let n = parse_id(id)?;
    i64::try_from(n).map_err(|_| MemoryError::NotFound(id.trim().to_string()))
}

fn not_found(id: &str) -> Oops {
    MemoryError::NotFound(id.trim().to_string()).into()
}

/// Another entry with this content hash, visible where `project` is.
fn same_content(
    conn: &Connection,
    hash: &str,
    project: &str,
    except: i64,
) -> Result<Option<MemoryEntry>, Oops> {
    Ok(query(
        conn,
        &format!(
            "SELECT {COLUMNS} FROM memories m
             WHERE m.content_hash = ?1 AND m.project IN (?2, '') AND m.id != ?3
             ORDER BY m.project = '', m.id LIMIT 1"
        ),
        params![hash, project, except],
        "looking for the same memory",
    )?
    .into_iter()
    .next())
}

fn tags_json(tags: &[String]) -> Result<String, Oops> {
    serde_json::to_string(tags)
        .map_err(|e| MemoryError::Other(format!("encoding tags: {e}")).into())
}

fn add(conn: &mut Connection, new: NewMemory) -> Result<Added, Oops> {
    let hash = content_hash(&new.content);
    let project = project_key(new.project.as_deref()).to_string();
    let tags = tags_json(&new.tags)?;
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("saving a memory")?;
    if let Some(existing) = same_content(&tx, &hash, &project, 0)? {
        tx.finish().ctx("saving a memory")?;
        return Ok(Added::Duplicate(existing));
    }
    let now = now_millis();
    tx.execute(
        "INSERT INTO memories (project, title, content, tags, content_hash, uses, created_at, updated_at, origin)
         VALUES (?1, ?2, ?3, ?4, ?5, 0, ?6, ?6, ?7)",
        params![project, new.title, new.content, tags, hash, now, new.origin.as_str()],
    )
    .ctx("saving a memory")?;
    let n = tx.last_insert_rowid();
    tx.commit().ctx("committing a memory")?;
    Ok(Added::New(MemoryEntry {
        id: format_id(u64::try_from(n).unwrap_or(0)),
        title: new.title,
        content: new.content,
        tags: new.tags,
        project: new.project,
        uses: 0,
        created_at: now,
        updated_at: now,
        origin: new.origin,
    }))
}

fn update(
    conn: &mut Connection,
    id: &str,
    change: MemoryChange,
    scope: &EditScope,
) -> Result<MemoryEntry, Oops> {
    let n = number(id)?;
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("updating a memory")?;
    let mut entry = find_editable(&tx, id, n, scope)?;
    if let Some(content) = &change.content {
        let hash = content_hash(content);
        let project = project_key(entry.project.as_deref());
        if let Some(other) = same_content(&tx, &hash, project, n)? {
            return Err(MemoryError::Invalid(format!(
                "memory {} already says this (\"{}\"); update or remove that one instead",
                other.id, other.title
            ))
            .into());
        }
    }
    change.apply_to(&mut entry, now_millis());
    tx.execute(
        "UPDATE memories SET title = ?2, content = ?3, tags = ?4, content_hash = ?5, updated_at = ?6,
         origin = ?7 WHERE id = ?1",
        params![
            n,
            entry.title,
            entry.content,
            tags_json(&entry.tags)?,
            content_hash(&entry.content),
            entry.updated_at,
            entry.origin.as_str()
        ],
    )
    .ctx("updating a memory")?;
    tx.commit().ctx("committing a memory update")?;
    Ok(entry)
}

fn remove(conn: &mut Connection, id: &str, scope: &EditScope) -> Result<MemoryEntry, Oops> {
    let n = number(id)?;
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx("removing a memory")?;
    let entry = find_editable(&tx, id, n, scope)?;
    tx.execute("DELETE FROM memories WHERE id = ?1", [n])
        .ctx("removing a memory")?;
    tx.commit().ctx("committing a memory removal")?;
    Ok(entry)
}

/// Count one use of each entry; `false` when another process holds the
/// database (the answer matters more than the count, so that is no error).
fn count_uses(conn: &mut Connection, entries: &mut [MemoryEntry]) -> Result<bool, Oops> {
    if entries.is_empty() {
        return Ok(true);
    }
    let mut numbers = Vec::with_capacity(entries.len());
    for e in entries.iter() {
        numbers.push(number(&e.id)?);
    }
    let counted = (|| {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            let mut stmt = tx.prepare_cached(
                "UPDATE memories SET uses = MIN(uses, 9223372036854775806) + 1 WHERE id = ?1",
            )?;
            for n in &numbers {
                stmt.execute([n])?;
            }
        }
        tx.commit()
    })();
    match counted {
        Ok(()) => {
            for e in entries.iter_mut() {
                e.uses = e.uses.saturating_add(1);
            }
            Ok(true)
        }
        Err(e) if is_busy(&e) => Ok(false),
        Err(source) => Err(Fail::Sql {
            context: "counting memory uses",
            source,
        }
        .into()),
    }
}

fn get(conn: &mut Connection, id: &str) -> Result<MemoryEntry, Oops> {
    let n = number(id)?;
    let entry = find(conn, n)?.ok_or_else(|| not_found(id))?;
    let mut one = [entry];
    count_uses(conn, &mut one)?;
    let [entry] = one;
    Ok(entry)
}

fn sql_limit(limit: usize) -> i64 {
    i64::try_from(limit.min(MAX_LIMIT)).unwrap_or(0)
}

fn search(
    conn: &mut Connection,
    text: &str,
    scope: Option<&str>,
    limit: usize,
) -> Result<Vec<MemoryEntry>, Oops> {
    let Some(fts) = fts_query(text) else {
        return Ok(Vec::new());
    };
    let mut found = query(
        conn,
        &format!(
            "SELECT {COLUMNS} FROM memory_fts JOIN memories m ON m.id = memory_fts.rowid
             WHERE memory_fts MATCH ?1 AND (?2 IS NULL OR m.project IN (?2, ''))
             ORDER BY bm25(memory_fts, {BM25_WEIGHTS}), m.uses DESC, m.updated_at DESC, m.id DESC
             LIMIT ?3"
        ),
        params![fts, scope, sql_limit(limit)],
        "searching memories",
    )?;
    count_uses(conn, &mut found)?;
    Ok(found)
}

fn list(conn: &Connection, scope: Option<&str>, limit: usize) -> Result<Vec<MemoryEntry>, Oops> {
    query(
        conn,
        &format!(
            "SELECT {COLUMNS} FROM memories m WHERE (?1 IS NULL OR m.project IN (?1, ''))
             ORDER BY m.updated_at DESC, m.id DESC LIMIT ?2"
        ),
        params![scope, sql_limit(limit)],
        "listing memories",
    )
}

fn top_for_prompt(
    conn: &Connection,
    scope: Option<&str>,
    byte_budget: usize,
) -> Result<Vec<MemoryEntry>, Oops> {
    // A prompt line takes at least a dozen bytes: more candidates than
    // this can never fit.
    let candidates = (byte_budget / 12 + 1).min(MAX_LIMIT);
    let mut top = query(
        conn,
        &format!(
            "SELECT {COLUMNS} FROM memories m WHERE (?1 IS NULL OR m.project IN (?1, ''))
             ORDER BY m.uses DESC, m.updated_at DESC, m.id DESC LIMIT ?2"
        ),
        params![scope, sql_limit(candidates)],
        "choosing memories for the prompt",
    )?;
    top.truncate(prompt_fit(&top, byte_budget));
    Ok(top)
}

#[async_trait]
impl LongTermMemory for SqliteMemory {
    async fn add(&self, new: NewMemory) -> Result<Added, MemoryError> {
        let new = new.cleaned()?;
        self.run(move |conn| add(conn, new)).await
    }

    async fn update(
        &self,
        id: &str,
        change: MemoryChange,
        scope: &EditScope,
    ) -> Result<MemoryEntry, MemoryError> {
        let change = change.cleaned()?;
        let (id, scope) = (id.to_string(), scope.clone());
        self.run(move |conn| update(conn, &id, change, &scope))
            .await
    }

    async fn remove(&self, id: &str, scope: &EditScope) -> Result<MemoryEntry, MemoryError> {
        let (id, scope) = (id.to_string(), scope.clone());
        self.run(move |conn| remove(conn, &id, &scope)).await
    }

    async fn get(&self, id: &str) -> Result<MemoryEntry, MemoryError> {
        let id = id.to_string();
        self.run(move |conn| get(conn, &id)).await
    }

    async fn search(
        &self,
        query: &str,
        scope: Option<&str>,
        limit: usize,
    ) -> Result<Vec<MemoryEntry>, MemoryError> {
        let (text, scope) = (query.to_string(), scope.map(str::to_string));
        self.run(move |conn| search(conn, &text, scope.as_deref(), limit))
            .await
    }

    async fn list(
        &self,
        scope: Option<&str>,
        limit: usize,
    ) -> Result<Vec<MemoryEntry>, MemoryError> {
        let scope = scope.map(str::to_string);
        self.run(move |conn| list(conn, scope.as_deref(), limit))
            .await
    }

    async fn top_for_prompt(
        &self,
        scope: Option<&str>,
        byte_budget: usize,
    ) -> Result<Vec<MemoryEntry>, MemoryError> {
        let scope = scope.map(str::to_string);
        self.run(move |conn| top_for_prompt(conn, scope.as_deref(), byte_budget))
            .await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::schema::MEMORY_MIGRATIONS;
    use super::*;
    use crate::migrations::{migrate, user_version};

    #[test]
    fn the_hash_is_of_the_normalised_content() {
        assert_eq!(
            content_hash("Use  cargo\nTEST"),
            content_hash(" use cargo test ")
        );
        assert_ne!(
            content_hash("use cargo test"),
            content_hash("use cargo build")
        );
        assert_eq!(content_hash("x").len(), 64);
    }

    #[test]
    fn the_memory_schema_applies_cleanly_and_indexes_through_triggers() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, MEMORY_MIGRATIONS).unwrap();
        assert_eq!(
            user_version(&conn).unwrap(),
            i64::from(MEMORY_SCHEMA_VERSION)
        );
        let added = add(
            &mut conn,
            NewMemory {
                title: "t".into(),
                content: "zebra".into(),
                ..NewMemory::default()
            },
        )
        .unwrap();
        let indexed: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM memory_fts WHERE memory_fts MATCH 'zebra'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(indexed, 1);
        remove(&mut conn, &added.entry().id, &EditScope::All).unwrap();
        let left: i64 = conn
            .query_row("SELECT COUNT(*) FROM memory_fts", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 0);
    }
}
