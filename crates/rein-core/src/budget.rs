//! What a run may spend: model calls (turns), tokens, dollars and wall
//! time. One validation ([`Budget::validate`], [`BudgetCap::validate`])
//! and one way to combine limits ([`Budget::tightened_by`]): a cap from
//! `rein serve`, a parent run or an agent definition only ever lowers a
//! limit, never raises one.
//!
//! The engine spends from a budget as a tree of accounts (a sub-agent's
//! below its parent's): see `engine/budget.rs`.

use std::time::Duration;

/// The longest wall time a budget may hold: a year.
pub const MAX_WALL_TIME: Duration = Duration::from_secs(31_536_000);

/// The limits of a run. Turns are always limited; the others only when
/// set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// Most model calls in one run (default 50).
    pub max_turns: u32,
    /// Most input + output tokens over all model calls of a run.
    pub max_tokens: Option<u64>,
    /// Most spent on model calls in a run, in US dollars (known prices
    /// only).
    pub max_cost_usd: Option<f64>,
    /// Longest a run may take.
    pub max_wall_time: Option<Duration>,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_turns: 50,
            max_tokens: None,
            max_cost_usd: None,
            max_wall_time: None,
        }
    }
}

/// Limits asked for over a budget, each optional (`None`: keep the
/// budget's).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BudgetCap {
    pub max_turns: Option<u32>,
    pub max_tokens: Option<u64>,
    pub max_cost_usd: Option<f64>,
    pub max_wall_time: Option<Duration>,
}

/// One of a budget's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetLimit {
    Turns,
    Tokens,
    Cost,
    WallTime,
}

impl BudgetLimit {
    /// Its name in config files and request bodies.
    pub fn key(self) -> &'static str {
        match self {
            BudgetLimit::Turns => "max_turns",
            BudgetLimit::Tokens => "max_tokens",
            BudgetLimit::Cost => "max_cost_usd",
            BudgetLimit::WallTime => "max_wall_time_secs",
        }
    }
}

/// A limit that cannot be a budget's.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum BudgetError {
    /// Turns, tokens or wall time of zero.
    #[error("must be at least 1")]
    Zero(BudgetLimit),
    /// A cost that is not a positive, finite number.
    #[error("must be a positive number of dollars, got {0}")]
    Cost(f64),
    /// A wall time past [`MAX_WALL_TIME`].
    #[error("must be at most {} seconds (a year)", MAX_WALL_TIME.as_secs())]
    TooLong,
}

impl BudgetError {
    /// The limit that is wrong.
    pub fn limit(&self) -> BudgetLimit {
        match self {
            BudgetError::Zero(limit) => *limit,
            BudgetError::Cost(_) => BudgetLimit::Cost,
            BudgetError::TooLong => BudgetLimit::WallTime,
        }
    }
}

impl Budget {
    /// Whether every limit is one a run can have.
    pub fn validate(&self) -> Result<(), BudgetError> {
        self.as_cap().validate()
    }

    /// Each limit of `cap` where it is lower than this budget's (or this
    /// budget has none); never a higher one.
    pub fn tightened_by(self, cap: &BudgetCap) -> Budget {
        fn lower<T: PartialOrd + Copy>(set: Option<T>, asked: Option<T>) -> Option<T> {
            match (set, asked) {
                (Some(s), Some(a)) if a < s => Some(a),
                (None, a) => a,
                (s, _) => s,
            }
        }
        Budget {
            max_turns: cap
                .max_turns
                .map_or(self.max_turns, |t| t.min(self.max_turns)),
            max_tokens: lower(self.max_tokens, cap.max_tokens),
            max_cost_usd: lower(self.max_cost_usd, cap.max_cost_usd),
            max_wall_time: lower(self.max_wall_time, cap.max_wall_time),
        }
    }

    /// Each limit `cap` sets in place of this budget's, higher or lower:
    /// a layer of settings over the ones below it (a config file over the
    /// defaults, a flag over the config). Not for caps from elsewhere:
    /// those only tighten ([`Budget::tightened_by`]).
    pub fn set_by(self, cap: &BudgetCap) -> Budget {
        Budget {
            max_turns: cap.max_turns.unwrap_or(self.max_turns),
            max_tokens: cap.max_tokens.or(self.max_tokens),
            max_cost_usd: cap.max_cost_usd.or(self.max_cost_usd),
            max_wall_time: cap.max_wall_time.or(self.max_wall_time),
        }
    }

    fn as_cap(&self) -> BudgetCap {
        BudgetCap {
            max_turns: Some(self.max_turns),
            max_tokens: self.max_tokens,
            max_cost_usd: self.max_cost_usd,
            max_wall_time: self.max_wall_time,
        }
    }
}

impl BudgetCap {
    /// Whether every limit asked for is one a run can have: turns, tokens
    /// and wall time at least 1, a cost positive and finite, a wall time
    /// of a year at most.
    pub fn validate(&self) -> Result<(), BudgetError> {
        if self.max_turns == Some(0) {
            return Err(BudgetError::Zero(BudgetLimit::Turns));
        }
        if self.max_tokens == Some(0) {
            return Err(BudgetError::Zero(BudgetLimit::Tokens));
        }
        if let Some(c) = self.max_cost_usd
            && !(c > 0.0 && c.is_finite())
        {
            return Err(BudgetError::Cost(c));
        }
        match self.max_wall_time {
            Some(d) if d.is_zero() => Err(BudgetError::Zero(BudgetLimit::WallTime)),
            Some(d) if d > MAX_WALL_TIME => Err(BudgetError::TooLong),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_lowers_a_limit_and_never_raises_one() {
        let set = Budget {
            max_turns: 3,
            max_tokens: Some(5),
            max_cost_usd: None,
            max_wall_time: Some(Duration::from_secs(60)),
        };
        let looser = BudgetCap {
            max_turns: Some(10),
            max_tokens: Some(50),
            max_cost_usd: Some(9.0),
            max_wall_time: Some(Duration::from_secs(600)),
        };
        let b = set.tightened_by(&looser);
        assert_eq!(b.max_turns, 3);
        assert_eq!(b.max_tokens, Some(5));
        assert_eq!(b.max_wall_time, Some(Duration::from_secs(60)));
        // No cost limit was set: the cap's counts.
        assert_eq!(b.max_cost_usd, Some(9.0));
        let tighter = BudgetCap {
            max_turns: Some(2),
            max_tokens: Some(4),
            max_cost_usd: Some(1.0),
            max_wall_time: Some(Duration::from_secs(30)),
        };
        let b = b.tightened_by(&tighter);
        assert_eq!(
            b,
            Budget {
                max_turns: 2,
                max_tokens: Some(4),
                max_cost_usd: Some(1.0),
                max_wall_time: Some(Duration::from_secs(30)),
            }
        );
        assert_eq!(b.tightened_by(&BudgetCap::default()), b);
        // A layer of settings sets a limit either way.
        assert_eq!(b.set_by(&looser).max_turns, 10);
        assert_eq!(b.set_by(&BudgetCap::default()), b);
    }

    #[test]
    fn zero_a_bad_cost_or_more_than_a_year_is_refused_naming_the_limit() {
        let cases = [
            (
                BudgetCap {
                    max_turns: Some(0),
                    ..Default::default()
                },
                BudgetLimit::Turns,
            ),
            (
                BudgetCap {
                    max_tokens: Some(0),
                    ..Default::default()
                },
                BudgetLimit::Tokens,
            ),
            (
                BudgetCap {
                    max_wall_time: Some(Duration::ZERO),
                    ..Default::default()
                },
                BudgetLimit::WallTime,
            ),
            (
                BudgetCap {
                    max_wall_time: Some(MAX_WALL_TIME + Duration::from_secs(1)),
                    ..Default::default()
                },
                BudgetLimit::WallTime,
            ),
            (
                BudgetCap {
                    max_cost_usd: Some(f64::NAN),
                    ..Default::default()
                },
                BudgetLimit::Cost,
            ),
            (
                BudgetCap {
                    max_cost_usd: Some(-1.0),
                    ..Default::default()
                },
                BudgetLimit::Cost,
            ),
        ];
        for (cap, limit) in cases {
            let e = cap.validate().unwrap_err();
            assert_eq!(e.limit(), limit, "{cap:?}");
        }
        assert_eq!(
            BudgetError::Cost(-1.0).to_string(),
            "must be a positive number of dollars, got -1"
        );
        assert!(Budget::default().validate().is_ok());
    }
}
