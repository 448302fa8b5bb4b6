//! `PgMemory`: long-term memory in PostgreSQL, with the behaviour of
//! [`SqliteMemory`](crate::SqliteMemory): the same ids (`m12`, never
//! reused), deduplication by the SHA-256 of the normalised content, scopes,
//! use counts and prompt selection.
//!
//! Search is PostgreSQL's full-text search: each word of the query (runs
//! of letters and digits, lowercased) becomes a prefix term, any of which
//! may match, and hits are ranked by `ts_rank` with a word in the title
//! counting most, then tags, then content, as bm25's weights do in SQLite.
//! The query is built as a `tsquery` value from plain words, so no text a
//! user or model types is ever search syntax.

use async_trait::async_trait;
use tokio_postgres::{Client, GenericClient, Row};

use rein_core::StoreError;
use rein_core::memory::{
    Added, EditScope, LongTermMemory, MemoryChange, MemoryEntry, MemoryError, MemoryOrigin,
    NewMemory, format_id, parse_id,
};
use rein_core::time::now_millis;

use super::error::{PgContext, PgFail};
use super::pool::Pool;
use super::schema::{MEMORY, MEMORY_MIGRATIONS, migrate};
use super::{PgOptions, url};
use crate::memory::content_hash;

mod reads;
mod tsquery;

use reads::{count_uses, list, search, top_for_prompt};

/// The memory schema version this build writes in PostgreSQL.
pub const PG_MEMORY_SCHEMA_VERSION: u32 = MEMORY_MIGRATIONS.len() as u32;

/// Long-term memory in a PostgreSQL database. Cloning is cheap and shares
/// the connections.
#[derive(Clone)]
pub struct PgMemory {
    pool: Pool,
}

impl std::fmt::Debug for PgMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgMemory")
            .field("server", &self.pool.target().shown)
            .finish_non_exhaustive()
    }
}

/// A failure inside one operation: a database error or a final answer.
enum Oops {
    Db(PgFail),
    Memory(MemoryError),
}

impl From<PgFail> for Oops {
    fn from(f: PgFail) -> Self {
        Oops::Db(f)
    }
}

impl From<MemoryError> for Oops {
    fn from(e: MemoryError) -> Self {
        Oops::Memory(e)
    }
}

/// A store error as the memory reports it.
fn memory_error(e: StoreError) -> MemoryError {
    match e {
        StoreError::Locked(m) => MemoryError::Locked(m),
        StoreError::NotFound(m) => MemoryError::NotFound(m),
        StoreError::Corrupt(m) => {
            MemoryError::Other(format!("the memory database is unusable: {m}"))
        }
        StoreError::Other(m) => MemoryError::Other(m),
        other => MemoryError::Other(other.to_string()),
    }
}

impl PgMemory {
    /// Connect to the database `url` names and bring the memory schema up
    /// to date; it may be the sessions' database or another one.
    pub async fn connect(url: &str) -> Result<PgMemory, MemoryError> {
        Self::connect_with(url, PgOptions::default()).await
    }

    /// [`connect`](Self::connect) with explicit options.
    pub async fn connect_with(url: &str, options: PgOptions) -> Result<PgMemory, MemoryError> {
        let target = url::parse(url).map_err(memory_error)?;
        let pool = Pool::new(target, options.max_connections).map_err(memory_error)?;
        let memory = PgMemory { pool };
        memory
            .run("connecting", |mut c| async move {
                Ok(migrate(&mut c, MEMORY).await?)
            })
            .await?;
        Ok(memory)
    }

    /// Run `f` with a pooled connection on the PostgreSQL thread.
    async fn run<T, F, Fut>(&self, context: &'static str, f: F) -> Result<T, MemoryError>
    where
        F: FnOnce(super::pool::Conn) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<T, Oops>> + Send + 'static,
        T: Send + 'static,
    {
        self.pool.run(context, None, f).await.map_err(|o| match o {
            Oops::Memory(e) => e,
            Oops::Db(f) => memory_error(f.into_store(self.pool.target())),
        })
    }
}

const COLUMNS: &str =
    "m.id, m.project, m.title, m.content, m.tags, m.uses, m.created_at, m.updated_at, m.origin";

/// The stored form of a project: '' for every project.
fn project_key(project: Option<&str>) -> &str {
    project.unwrap_or("")
}

fn entry_from_row(row: &Row) -> Result<MemoryEntry, Oops> {
    let read = |e| PgFail::Db {
        context: "reading a memory",
        source: e,
    };
    let id: i64 = row.try_get(0).map_err(read)?;
    let id = format_id(u64::try_from(id).unwrap_or(0));
    let project: String = row.try_get(1).map_err(read)?;
    let tags: &str = row.try_get(4).map_err(read)?;
    let tags = serde_json::from_str(tags)
        .map_err(|e| PgFail::Corrupt(format!("the tags of memory {id} cannot be read: {e}")))?;
    Ok(MemoryEntry {
        title: row.try_get(2).map_err(read)?,
        content: row.try_get(3).map_err(read)?,
        tags,
        project: (!project.is_empty()).then_some(project),
        uses: u64::try_from(row.try_get::<_, i64>(5).map_err(read)?).unwrap_or(0),
        created_at: row.try_get(6).map_err(read)?,
        updated_at: row.try_get(7).map_err(read)?,
        origin: MemoryOrigin::parse(row.try_get(8).map_err(read)?),
        id,
    })
}

/// Entries of `sql` (which selects [`COLUMNS`]).
async fn query(
    db: &impl GenericClient,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    context: &'static str,
) -> Result<Vec<MemoryEntry>, Oops> {
    let rows = db.query(sql, params).await.ctx(context)?;
    rows.iter().map(entry_from_row).collect()
}

async fn find(db: &impl GenericClient, n: i64) -> Result<Option<MemoryEntry>, Oops> {
    let sql = format!("SELECT {COLUMNS} FROM memories m WHERE m.id = $1");
    Ok(query(db, &sql, &[&n], "reading a memory")
        .await?
        .into_iter()
        .next())
}

/// The entry `id` names, locked for a change, if `scope` may change it.
async fn find_editable(
    db: &impl GenericClient,
    id: &str,
    n: i64,
    scope: &EditScope,
) -> Result<MemoryEntry, Oops> {
    let sql = format!("SELECT {COLUMNS} FROM memories m WHERE m.id = $1 FOR UPDATE");
    let entry = query(db, &sql, &[&n], "reading a memory")
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| not_found(id))?;
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
async fn same_content(
    db: &impl GenericClient,
    hash: &str,
    project: &str,
    except: i64,
) -> Result<Option<MemoryEntry>, Oops> {
    let sql = format!(
        "SELECT {COLUMNS} FROM memories m
         WHERE m.content_hash = $1 AND m.project IN ($2, '') AND m.id <> $3
         ORDER BY m.project = '', m.id LIMIT 1"
    );
    let found = query(
        db,
        &sql,
        &[&hash, &project, &except],
        "looking for the same memory",
    )
    .await?;
    Ok(found.into_iter().next())
}

fn tags_json(tags: &[String]) -> Result<String, Oops> {
    serde_json::to_string(tags)
        .map_err(|e| MemoryError::Other(format!("encoding tags: {e}")).into())
}

async fn add(client: &mut Client, new: NewMemory) -> Result<Added, Oops> {
    let hash = content_hash(&new.content);
    let project = project_key(new.project.as_deref()).to_string();
    let tags = tags_json(&new.tags)?;
    let tx = client.transaction().await.ctx("saving a memory")?;
    if let Some(existing) = same_content(&tx, &hash, &project, 0).await? {
        return Ok(Added::Duplicate(existing));
    }
    let now = now_millis();
    // Two processes adding the same note at once: the unique index lets one
    // in; the other's insert does nothing and it reports that one.
    let row = tx
        .query_opt(
            "INSERT INTO memories (project, title, content, tags, content_hash, uses,
                                   created_at, updated_at, origin)
             VALUES ($1, $2, $3, $4, $5, 0, $6, $6, $7)
             ON CONFLICT (project, content_hash) DO NOTHING RETURNING id",
            &[
                &project,
                &new.title,
                &new.content,
                &tags,
                &hash,
                &now,
                &new.origin.as_str(),
            ],
        )
        .await
        .ctx("saving a memory")?;
    let Some(row) = row else {
        let existing = same_content(&tx, &hash, &project, 0).await?;
        return existing.map(Added::Duplicate).ok_or_else(|| {
            MemoryError::Other("the same memory was being saved and removed at once".into()).into()
        });
    };
    let n: i64 = row.try_get(0).ctx("saving a memory")?;
    tx.commit().await.ctx("committing a memory")?;
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

async fn update(
    client: &mut Client,
    id: &str,
    change: MemoryChange,
    scope: &EditScope,
) -> Result<MemoryEntry, Oops> {
    let n = number(id)?;
    let tx = client.transaction().await.ctx("updating a memory")?;
    let mut entry = find_editable(&tx, id, n, scope).await?;
    if let Some(content) = &change.content {
        let hash = content_hash(content);
        let project = project_key(entry.project.as_deref());
        if let Some(other) = same_content(&tx, &hash, project, n).await? {
            return Err(MemoryError::Invalid(format!(
                "memory {} already says this (\"{}\"); update or remove that one instead",
                other.id, other.title
            ))
            .into());
        }
    }
    change.apply_to(&mut entry, now_millis());
    tx.execute(
        "UPDATE memories SET title = $2, content = $3, tags = $4, content_hash = $5,
                             updated_at = $6, origin = $7
         WHERE id = $1",
        &[
            &n,
            &entry.title,
            &entry.content,
            &tags_json(&entry.tags)?,
            &content_hash(&entry.content),
            &entry.updated_at,
            &entry.origin.as_str(),
        ],
    )
    .await
    .ctx("updating a memory")?;
    tx.commit().await.ctx("committing a memory update")?;
    Ok(entry)
}

async fn remove(client: &mut Client, id: &str, scope: &EditScope) -> Result<MemoryEntry, Oops> {
    let n = number(id)?;
    let tx = client.transaction().await.ctx("removing a memory")?;
    let entry = find_editable(&tx, id, n, scope).await?;
    tx.execute("DELETE FROM memories WHERE id = $1", &[&n])
        .await
        .ctx("removing a memory")?;
    tx.commit().await.ctx("committing a memory removal")?;
    Ok(entry)
}

#[async_trait]
impl LongTermMemory for PgMemory {
    async fn add(&self, new: NewMemory) -> Result<Added, MemoryError> {
        let new = new.cleaned()?;
        self.run(
            "saving a memory",
            |mut c| async move { add(&mut c, new).await },
        )
        .await
    }

    async fn update(
        &self,
        id: &str,
        change: MemoryChange,
        scope: &EditScope,
    ) -> Result<MemoryEntry, MemoryError> {
        let change = change.cleaned()?;
        let (id, scope) = (id.to_string(), scope.clone());
        self.run("updating a memory", move |mut c| async move {
            update(&mut c, &id, change, &scope).await
        })
        .await
    }

    async fn remove(&self, id: &str, scope: &EditScope) -> Result<MemoryEntry, MemoryError> {
        let (id, scope) = (id.to_string(), scope.clone());
        self.run("removing a memory", move |mut c| async move {
            remove(&mut c, &id, &scope).await
        })
        .await
    }

    async fn get(&self, id: &str) -> Result<MemoryEntry, MemoryError> {
        let n = number(id)?;
        let id = id.to_string();
        self.run("reading a memory", move |c| async move {
            let entry = find(&*c, n).await?.ok_or_else(|| not_found(&id))?;
            let mut one = [entry];
            count_uses(&c, &mut one).await?;
            let [entry] = one;
            Ok(entry)
        })
        .await
    }

    async fn search(
        &self,
        query: &str,
        scope: Option<&str>,
        limit: usize,
    ) -> Result<Vec<MemoryEntry>, MemoryError> {
        let (query, scope) = (query.to_string(), scope.map(str::to_string));
        self.run("searching memories", move |c| async move {
            search(&c, &query, scope.as_deref(), limit).await
        })
        .await
    }

    async fn list(
        &self,
        scope: Option<&str>,
        limit: usize,
    ) -> Result<Vec<MemoryEntry>, MemoryError> {
        let scope = scope.map(str::to_string);
        self.run("listing memories", move |c| async move {
            list(&c, scope.as_deref(), limit).await
        })
        .await
    }

    async fn top_for_prompt(
        &self,
        scope: Option<&str>,
        byte_budget: usize,
    ) -> Result<Vec<MemoryEntry>, MemoryError> {
        let scope = scope.map(str::to_string);
        self.run("choosing memories for the prompt", move |c| async move {
            top_for_prompt(&c, scope.as_deref(), byte_budget).await
        })
        .await
    }
}
