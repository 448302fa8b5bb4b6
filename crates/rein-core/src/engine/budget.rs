//! Budgets as a tree: every run spends from an account, and a sub-agent's
//! account hangs below the account of the run that started it.
//!
//! A model call is charged to its run's account and to every account above
//! it the moment its usage is known, so the parent's guard sees what its
//! children spend while they spend it, and a child's check sees what its
//! parent and its siblings have spent: 32 children started in one turn
//! share one remainder, they do not each get the whole budget. A child
//! also stops when any account above it runs out of time.
//!
//! The bound this gives: every model call is preceded by a check of the
//! whole chain, and each agent makes one model call at a time; so once
//! the tree's spending reaches a limit, no agent starts another call, and
//! the most a tree spends is its limit plus the calls that were already
//! under way then: at most one call per agent running at that moment.
//!
//! The root account also counts the children running anywhere in its tree
//! (foreground and background alike) against one cap: a `task` call over
//! it is refused, the model sees why, nothing waits in a hidden queue.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::time::Instant;

use crate::event::StopReason;
use crate::tokens::LedgerEntry;

/// What one run may spend and has spent (its children's spending
/// included).
#[derive(Debug)]
pub(crate) struct Budget {
    /// The account of the run that started this one.
    parent: Option<Arc<Budget>>,
    max_tokens: Option<u64>,
    max_cost_usd: Option<f64>,
    /// When this run's time is up.
    ends_at: Option<Instant>,
    spent: Mutex<Spent>,
    /// Children running now in this tree (counted at the root).
    children: AtomicUsize,
    /// Most children running at once in this tree (read at the root).
    max_children: usize,
}

/// Tokens (input + output) and known dollars spent.
#[derive(Debug, Default, Clone, Copy)]
struct Spent {
    tokens: u64,
    cost_usd: f64,
}

/// The limits an account is opened with.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Limits {
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
    pub max_wall_time: Option<std::time::Duration>,
    pub max_children: usize,
}

/// A task call over the tree's cap of running children.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooManyChildren {
    pub cap: usize,
}

/// A running child's place in its tree's count; given back when dropped.
#[derive(Debug)]
pub(crate) struct ChildSlot(Arc<Budget>);

impl Drop for ChildSlot {
    fn drop(&mut self) {
        self.0.children.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Budget {
    /// The account of a run starting now, below `parent`'s when it is a
    /// sub-agent's.
    pub fn open(limits: Limits, parent: Option<Arc<Budget>>) -> Arc<Budget> {
        Arc::new(Budget {
            parent,
            max_tokens: limits.max_tokens,
            max_cost_usd: limits.max_cost_usd,
            ends_at: limits.max_wall_time.map(|d| Instant::now() + d),
            spent: Mutex::new(Spent::default()),
            children: AtomicUsize::new(0),
            max_children: limits.max_children.max(1),
        })
    }

    /// Charge one model call to this account and every one above it.
    pub fn charge(&self, entry: &LedgerEntry) {
        let tokens = entry
            .usage
            .input_tokens
            .saturating_add(entry.usage.output_tokens);
        let cost = entry
            .cost_usd
            .filter(|c| c.is_finite() && *c >= 0.0)
            .unwrap_or(0.0);
        let mut at = Some(self);
        while let Some(account) = at {
            let mut spent = account.spent.lock().unwrap_or_else(|p| p.into_inner());
            spent.tokens = spent.tokens.saturating_add(tokens);
            spent.cost_usd += cost;
            drop(spent);
            at = account.parent.as_deref();
        }
    }

    /// The first limit used up on the way from this account to the root.
    pub fn exceeded(&self) -> Option<StopReason> {
        let now = Instant::now();
        let mut at = Some(self);
        while let Some(account) = at {
            let spent = *account.spent.lock().unwrap_or_else(|p| p.into_inner());
            if account.max_tokens.is_some_and(|max| spent.tokens >= max) {
                return Some(StopReason::MaxTokens);
            }
            if account
                .max_cost_usd
                .is_some_and(|max| spent.cost_usd >= max)
            {
                return Some(StopReason::MaxCost);
            }
            if account.ends_at.is_some_and(|end| now >= end) {
                return Some(StopReason::MaxWallTime);
            }
            at = account.parent.as_deref();
        }
        None
    }

    /// A place for one more running child in this tree, or the cap that
    /// refuses it.
    pub fn admit_child(self: &Arc<Self>) -> Result<ChildSlot, TooManyChildren> {
        let root = self.root();
        let cap = root.max_children;
        let taken = root
            .children
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < cap).then_some(n + 1)
            });
        match taken {
            Ok(_) => Ok(ChildSlot(root)),
            Err(_) => Err(TooManyChildren { cap }),
        }
    }

    /// The account at the top of this tree.
    fn root(self: &Arc<Self>) -> Arc<Budget> {
        let mut at = self.clone();
        while let Some(p) = at.parent.clone() {
            at = p;
        }
        at
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::schema::Usage;
    use crate::tokens::CallKind;

    fn call(tokens: u64, cost: f64) -> LedgerEntry {
        LedgerEntry {
            kind: CallKind::Turn,
            provider: "p".into(),
            model: "m".into(),
            usage: Usage {
                input_tokens: tokens,
                ..Default::default()
            },
            cost_usd: Some(cost),
            ok: true,
            duration_ms: 0,
            at: 0,
        }
    }

    #[test]
    fn a_childs_spending_is_charged_up_the_tree_and_stops_both() {
        let root = Budget::open(
            Limits {
                max_tokens: Some(1000),
                max_cost_usd: Some(0.01),
                ..Default::default()
            },
            None,
        );
        // The child's own limits are the parent's config: the remainder
        // is what binds it.
        let limits = Limits {
            max_tokens: Some(1000),
            ..Default::default()
        };
        let a = Budget::open(limits, Some(root.clone()));
        let b = Budget::open(limits, Some(root.clone()));
        root.charge(&call(600, 0.0));
        a.charge(&call(300, 0.0));
        assert_eq!(root.exceeded(), None);
        assert_eq!(b.exceeded(), None);
        b.charge(&call(100, 0.0));
        assert_eq!(root.exceeded(), Some(StopReason::MaxTokens));
        assert_eq!(a.exceeded(), Some(StopReason::MaxTokens));
        // Cost alone too.
        let root = Budget::open(
            Limits {
                max_cost_usd: Some(0.01),
                ..Default::default()
            },
            None,
        );
        let child = Budget::open(Limits::default(), Some(root.clone()));
        child.charge(&call(1, 0.02));
        assert_eq!(root.exceeded(), Some(StopReason::MaxCost));
        assert_eq!(child.exceeded(), Some(StopReason::MaxCost));
    }

    #[test]
    fn children_across_the_tree_count_against_one_cap() {
        let root = Budget::open(
            Limits {
                max_children: 2,
                ..Default::default()
            },
            None,
        );
        let child = Budget::open(Limits::default(), Some(root.clone()));
        let one = root.admit_child().unwrap();
        let _two = child.admit_child().unwrap();
        assert_eq!(root.admit_child().unwrap_err(), TooManyChildren { cap: 2 });
        drop(one);
        assert!(child.admit_child().is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn a_child_stops_when_its_parents_time_is_up() {
        let root = Budget::open(
            Limits {
                max_wall_time: Some(std::time::Duration::from_secs(10)),
                ..Default::default()
            },
            None,
        );
        tokio::time::advance(std::time::Duration::from_secs(8)).await;
        let child = Budget::open(
            Limits {
                max_wall_time: Some(std::time::Duration::from_secs(600)),
                ..Default::default()
            },
            Some(root),
        );
        assert_eq!(child.exceeded(), None);
        tokio::time::advance(std::time::Duration::from_secs(3)).await;
        assert_eq!(child.exceeded(), Some(StopReason::MaxWallTime));
    }
}
