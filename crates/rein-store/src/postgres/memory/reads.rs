//! Reading memories: search, listing and the prompt's choice; a search or
//! a read by id counts a use of each entry it returns.

use tokio_postgres::Client;

use rein_core::memory::{MemoryEntry, prompt_fit};

use super::tsquery::ts_query;
use super::{COLUMNS, Oops, number, query};
use crate::postgres::error::PgContext;

/// `ts_rank` weights of {D, C, B, A}: content, (unused), tags, title, in
/// the proportions of the SQLite store's bm25 weights (1 : 3 : 8).
const RANK_WEIGHTS: &str = "'{0.1, 0.0, 0.3, 0.8}'::float4[]";

/// Most entries one search or list returns.
const MAX_LIMIT: usize = 200;

/// Count one use of each entry (one statement, so it commits on its own).
pub(super) async fn count_uses(client: &Client, entries: &mut [MemoryEntry]) -> Result<(), Oops> {
    if entries.is_empty() {
        return Ok(());
    }
    let mut numbers = Vec::with_capacity(entries.len());
    for e in entries.iter() {
        numbers.push(number(&e.id)?);
    }
    client
        .execute(
            "UPDATE memories SET uses = LEAST(uses, 9223372036854775806) + 1 WHERE id = ANY($1)",
            &[&numbers],
        )
        .await
        .ctx("counting memory uses")?;
    for e in entries.iter_mut() {
        e.uses = e.uses.saturating_add(1);
    }
    Ok(())
}

fn sql_limit(limit: usize) -> i64 {
    i64::try_from(limit.min(MAX_LIMIT)).unwrap_or(0)
}

pub(super) async fn search(
    client: &Client,
    text: &str,
    scope: Option<&str>,
    limit: usize,
) -> Result<Vec<MemoryEntry>, Oops> {
    let Some(terms) = ts_query(text) else {
        return Ok(Vec::new());
    };
    let sql = format!(
        "SELECT {COLUMNS} FROM memories m, CAST($1::text AS tsquery) q
         WHERE m.search @@ q AND ($2::text IS NULL OR m.project IN ($2, ''))
         ORDER BY ts_rank({RANK_WEIGHTS}, m.search, q) DESC, m.uses DESC,
                  m.updated_at DESC, m.id DESC
         LIMIT $3"
    );
    let mut found = query(
        client,
        &sql,
        &[&terms, &scope, &sql_limit(limit)],
        "searching memories",
    )
    .await?;
    count_uses(client, &mut found).await?;
    Ok(found)
}

pub(super) async fn list(
    client: &Client,
    scope: Option<&str>,
    limit: usize,
) -> Result<Vec<MemoryEntry>, Oops> {
    let sql = format!(
        "SELECT {COLUMNS} FROM memories m WHERE ($1::text IS NULL OR m.project IN ($1, ''))
         ORDER BY m.updated_at DESC, m.id DESC LIMIT $2"
    );
    query(
        client,
        &sql,
        &[&scope, &sql_limit(limit)],
        "listing memories",
    )
    .await
}

pub(super) async fn top_for_prompt(
    client: &Client,
    scope: Option<&str>,
    byte_budget: usize,
) -> Result<Vec<MemoryEntry>, Oops> {
    // A prompt line takes at least a dozen bytes: more candidates than
    // this can never fit.
    let candidates = (byte_budget / 12 + 1).min(MAX_LIMIT);
    let sql = format!(
        "SELECT {COLUMNS} FROM memories m WHERE ($1::text IS NULL OR m.project IN ($1, ''))
         ORDER BY m.uses DESC, m.updated_at DESC, m.id DESC LIMIT $2"
    );
    let mut top = query(
        client,
        &sql,
        &[&scope, &sql_limit(candidates)],
        "choosing memories for the prompt",
    )
    .await?;
    top.truncate(prompt_fit(&top, byte_budget));
    Ok(top)
}
