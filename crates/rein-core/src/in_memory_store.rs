//! `InMemorySessionStore`: a `SessionStore` that lives only as long as the process.
//! Kept in core (it touches no disk) so every crate's tests can use it.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;

use crate::permission::Rule;
use crate::schema::{Message, Todo};
use crate::store::{CompactionRecord, NewSession, SessionInfo, SessionStore, StoreError};
use crate::tokens::LedgerEntry;

/// One session: its record, messages, todos and approval grants.
type Entry = (SessionInfo, Vec<Message>, Vec<Todo>, Vec<Rule>);

/// A session's ledger and compactions.
#[derive(Default)]
struct Extra {
    ledger: Vec<LedgerEntry>,
    compactions: Vec<CompactionRecord>,
}

#[derive(Default)]
struct Data {
    order: Vec<String>,
    sessions: HashMap<String, Entry>,
    extra: HashMap<String, Extra>,
}

/// An in-memory session store.
#[derive(Default)]
pub struct InMemorySessionStore {
    data: Mutex<Data>,
}

/// A new session id: 16 hex digits, 8 random then the creation time in
/// seconds (8 digits, until 2106). Random first, so that the few
/// characters a user types tell apart sessions made a moment apart; the
/// time keeps ids of different seconds from clashing. Listings order by
/// the time columns, never by id (except between equal times, which are
/// simultaneous anyway). Older ids (11 digits of milliseconds, then 5
/// random) are plain strings to every store and keep working.
pub fn new_session_id() -> String {
    let secs = crate::time::now_millis().max(0) / 1000;
    format!("{:08x}{:08x}", fastrand::u32(..), secs & 0xffff_ffff)
}

impl InMemorySessionStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut Data) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let mut data = self.data.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut data)
    }
}

/// Resolve an id or unique id prefix among `ids`.
pub fn resolve_prefix<'a>(
    ids: impl Iterator<Item = &'a String>,
    wanted: &str,
) -> Result<String, StoreError> {
    if wanted.is_empty() {
        return Err(StoreError::NotFound(String::new()));
    }
    let mut found: Vec<&String> = Vec::new();
    for id in ids {
        if id == wanted {
            return Ok(id.clone());
        }
        if id.starts_with(wanted) {
            found.push(id);
        }
    }
    match found.as_slice() {
        [] => Err(StoreError::NotFound(wanted.to_string())),
        [one] => Ok((*one).clone()),
        many => {
            let mut candidates: Vec<String> = many.iter().map(|s| (*s).clone()).collect();
            candidates.sort();
            if candidates.len() > crate::store::AMBIGUOUS_SHOWN {
                candidates.truncate(crate::store::AMBIGUOUS_SHOWN);
                candidates.push("…".to_string());
            }
            Err(StoreError::Ambiguous {
                prefix: wanted.to_string(),
                candidates,
            })
        }
    }
}

#[async_trait]
impl SessionStore for InMemorySessionStore {
    async fn create_session(&self, new: NewSession) -> Result<SessionInfo, StoreError> {
        self.with(|d| {
            let now = crate::time::now_millis();
            let info = SessionInfo {
                id: new_session_id(),
                workspace: new.workspace,
                title: new.title,
                model: new.model,
                created_at: now,
                updated_at: now,
                message_count: 0,
                last_stop: None,
                parent_id: new.parent_id,
            };
            d.order.push(info.id.clone());
            d.sessions.insert(
                info.id.clone(),
                (info.clone(), Vec::new(), Vec::new(), Vec::new()),
            );
            Ok(info)
        })
    }

    async fn get_session(&self, id: &str) -> Result<SessionInfo, StoreError> {
        self.with(|d| {
            let id = resolve_prefix(d.order.iter(), id)?;
            d.sessions
                .get(&id)
                .map(|s| s.0.clone())
                .ok_or(StoreError::NotFound(id))
        })
    }

    async fn list_sessions(
        &self,
        workspace: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SessionInfo>, StoreError> {
        self.with(|d| {
            let mut all: Vec<SessionInfo> = d
                .sessions
                .values()
                .map(|s| s.0.clone())
                .filter(|s| workspace.is_none_or(|w| s.workspace == w))
                .collect();
            all.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then(b.id.cmp(&a.id)));
            all.truncate(limit);
            Ok(all)
        })
    }

    async fn delete_session(&self, id: &str) -> Result<(), StoreError> {
        self.with(|d| {
            let id = resolve_prefix(d.order.iter(), id)?;
            d.order.retain(|x| *x != id);
            d.sessions.remove(&id);
            d.extra.remove(&id);
            Ok(())
        })
    }

    async fn set_title(&self, id: &str, title: &str) -> Result<(), StoreError> {
        self.with(|d| {
            let s = d
                .sessions
                .get_mut(id)
                .ok_or_else(|| StoreError::NotFound(id.into()))?;
            s.0.title = title.to_string();
            Ok(())
        })
    }

    async fn set_model(&self, id: &str, model: &str) -> Result<(), StoreError> {
        self.with(|d| {
            let s = d
                .sessions
                .get_mut(id)
                .ok_or_else(|| StoreError::NotFound(id.into()))?;
            s.0.model = model.to_string();
            Ok(())
        })
    }

    async fn set_last_stop(
        &self,
        id: &str,
        reason: crate::event::StopReason,
    ) -> Result<(), StoreError> {
        self.with(|d| {
            let s = d
                .sessions
                .get_mut(id)
                .ok_or_else(|| StoreError::NotFound(id.into()))?;
            s.0.last_stop = Some(reason);
            Ok(())
        })
    }

    async fn append_message(&self, id: &str, message: &Message) -> Result<u64, StoreError> {
        self.with(|d| {
            let s = d
                .sessions
                .get_mut(id)
                .ok_or_else(|| StoreError::NotFound(id.into()))?;
            s.1.push(message.clone());
            s.0.message_count = s.1.len() as u64;
            s.0.updated_at = crate::time::now_millis().max(s.0.updated_at);
            Ok(s.1.len() as u64)
        })
    }

    async fn messages(&self, id: &str) -> Result<Vec<Message>, StoreError> {
        self.with(|d| {
            d.sessions
                .get(id)
                .map(|s| s.1.clone())
                .ok_or_else(|| StoreError::NotFound(id.into()))
        })
    }

    async fn set_todos(&self, id: &str, todos: &[Todo]) -> Result<(), StoreError> {
        self.with(|d| {
            let s = d
                .sessions
                .get_mut(id)
                .ok_or_else(|| StoreError::NotFound(id.into()))?;
            s.2 = todos.to_vec();
            Ok(())
        })
    }

    async fn todos(&self, id: &str) -> Result<Vec<Todo>, StoreError> {
        self.with(|d| {
            d.sessions
                .get(id)
                .map(|s| s.2.clone())
                .ok_or_else(|| StoreError::NotFound(id.into()))
        })
    }

    async fn add_grant(&self, id: &str, rule: &Rule) -> Result<(), StoreError> {
        self.with(|d| {
            let s = d
                .sessions
                .get_mut(id)
                .ok_or_else(|| StoreError::NotFound(id.into()))?;
            if !s.3.contains(rule) {
                s.3.push(rule.clone());
            }
            Ok(())
        })
    }

    async fn add_ledger(&self, id: &str, entry: &LedgerEntry) -> Result<(), StoreError> {
        self.with(|d| {
            if !d.sessions.contains_key(id) {
                return Err(StoreError::NotFound(id.into()));
            }
            d.extra
                .entry(id.to_string())
                .or_default()
                .ledger
                .push(entry.clone());
            Ok(())
        })
    }

    async fn ledger(&self, id: &str) -> Result<(Vec<LedgerEntry>, usize), StoreError> {
        self.with(|d| {
            if !d.sessions.contains_key(id) {
                return Err(StoreError::NotFound(id.into()));
            }
            Ok((
                d.extra
                    .get(id)
                    .map(|e| e.ledger.clone())
                    .unwrap_or_default(),
                0,
            ))
        })
    }

    async fn add_compaction(&self, id: &str, record: &CompactionRecord) -> Result<(), StoreError> {
        self.with(|d| {
            if !d.sessions.contains_key(id) {
                return Err(StoreError::NotFound(id.into()));
            }
            d.extra
                .entry(id.to_string())
                .or_default()
                .compactions
                .push(record.clone());
            Ok(())
        })
    }

    async fn compactions(&self, id: &str) -> Result<Vec<CompactionRecord>, StoreError> {
        self.with(|d| {
            if !d.sessions.contains_key(id) {
                return Err(StoreError::NotFound(id.into()));
            }
            Ok(d.extra
                .get(id)
                .map(|e| e.compactions.clone())
                .unwrap_or_default())
        })
    }

    async fn grants(&self, id: &str) -> Result<(Vec<Rule>, usize), StoreError> {
        self.with(|d| {
            d.sessions
                .get(id)
                .map(|s| (s.3.clone(), 0))
                .ok_or_else(|| StoreError::NotFound(id.into()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sessions_resolve_by_unique_prefix() {
        let store = InMemorySessionStore::new();
        let a = store.create_session(NewSession::default()).await.unwrap();
        let got = store.get_session(&a.id[..14]).await.unwrap();
        assert_eq!(got.id, a.id);
        assert!(matches!(
            store.get_session("zzz").await,
            Err(StoreError::NotFound(_))
        ));
        store
            .append_message(&a.id, &Message::user("hi"))
            .await
            .unwrap();
        assert_eq!(store.messages(&a.id).await.unwrap().len(), 1);
        store.delete_session(&a.id).await.unwrap();
        assert!(store.get_session(&a.id).await.is_err());
    }
}
