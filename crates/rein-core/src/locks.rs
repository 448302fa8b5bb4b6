//! Path-level read/write locks: reads of a path share, a write excludes all.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock};

use crate::tool::PathLock;

/// The lock table, shared by every call of an engine.
#[derive(Default)]
pub struct PathLocks {
    table: Mutex<HashMap<PathBuf, Weak<RwLock<()>>>>,
}

enum Held {
    #[allow(dead_code)]
    Read(OwnedRwLockReadGuard<()>),
    #[allow(dead_code)]
    Write(OwnedRwLockWriteGuard<()>),
}

/// Locks held by one call; released on drop.
pub struct LockGuard {
    _held: Vec<Held>,
}

impl PathLocks {
    fn entry(&self, path: &PathBuf) -> Arc<RwLock<()>> {
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(lock) = table.get(path).and_then(Weak::upgrade) {
            return lock;
        }
        // Forget entries nobody holds any more, so the table stays small.
        if table.len() > 256 {
            table.retain(|_, w| w.strong_count() > 0);
        }
        let lock = Arc::new(RwLock::new(()));
        table.insert(path.clone(), Arc::downgrade(&lock));
        lock
    }

    /// Take every lock, in path order so that two calls never deadlock.
    /// A path wanted both ways is locked for writing.
    pub async fn acquire(&self, wanted: Vec<PathLock>) -> LockGuard {
        let mut by_path: BTreeMap<PathBuf, bool> = BTreeMap::new();
        for lock in wanted {
            let write = matches!(lock, PathLock::Write(_));
            let path = match lock {
                PathLock::Read(p) | PathLock::Write(p) => p,
            };
            let entry = by_path.entry(path).or_insert(false);
            *entry |= write;
        }
        let mut held = Vec::with_capacity(by_path.len());
        for (path, write) in by_path {
            let lock = self.entry(&path);
            held.push(if write {
                Held::Write(lock.write_owned().await)
            } else {
                Held::Read(lock.read_owned().await)
            });
        }
        LockGuard { _held: held }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_write_waits_for_a_read_of_the_same_path() {
        let locks = Arc::new(PathLocks::default());
        let p = PathBuf::from("/w/a");
        let read = locks.acquire(vec![PathLock::Read(p.clone())]).await;
        let l2 = locks.clone();
        let p2 = p.clone();
        let writer = tokio::spawn(async move {
            let _g = l2.acquire(vec![PathLock::Write(p2)]).await;
        });
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!writer.is_finished());
        drop(read);
        tokio::time::timeout(Duration::from_secs(1), writer)
            .await
            .unwrap()
            .unwrap();
    }

    #[tokio::test]
    async fn reads_share_and_other_paths_do_not_block() {
        let locks = PathLocks::default();
        let _a = locks.acquire(vec![PathLock::Read("/w/a".into())]).await;
        let _b = tokio::time::timeout(
            Duration::from_millis(200),
            locks.acquire(vec![
                PathLock::Read("/w/a".into()),
                PathLock::Write("/w/b".into()),
            ]),
        )
        .await
        .unwrap();
    }
}
