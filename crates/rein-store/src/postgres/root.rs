//! The one workspace root the servers sharing a database use: the first
//! server records its root's id (and path, to name it), and every later
//! one compares.

use rein_core::StoreError;

use super::PgStore;
use super::error::PgContext;

/// The root a database was first used with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRoot {
    /// The id in that root's id file.
    pub id: String,
    /// Where the server that recorded it had it.
    pub path: String,
}

impl PgStore {
    /// Record `id` (found at `path`) as the database's root unless one is
    /// recorded already; the recorded one either way.
    pub async fn claim_root(&self, id: &str, path: &str) -> Result<RecordedRoot, StoreError> {
        let (id, path) = (id.to_string(), path.to_string());
        self.run("recording the workspace root", move |c| async move {
            c.execute(
                "INSERT INTO serve_root (id, path) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                &[&id, &path],
            )
            .await
            .ctx("recording the workspace root")?;
            let row = c
                .query_one("SELECT id, path FROM serve_root", &[])
                .await
                .ctx("reading the workspace root")?;
            Ok(RecordedRoot {
                id: row.try_get(0).ctx("reading the workspace root")?,
                path: row.try_get(1).ctx("reading the workspace root")?,
            })
        })
        .await
    }

    /// The root recorded, if any.
    pub async fn recorded_root(&self) -> Result<Option<RecordedRoot>, StoreError> {
        self.run("reading the workspace root", move |c| async move {
            let row = c
                .query_opt("SELECT id, path FROM serve_root", &[])
                .await
                .ctx("reading the workspace root")?;
            row.map(|r| {
                Ok(RecordedRoot {
                    id: r.try_get(0)?,
                    path: r.try_get(1)?,
                })
            })
            .transpose()
            .ctx("reading the workspace root")
        })
        .await
    }
}
