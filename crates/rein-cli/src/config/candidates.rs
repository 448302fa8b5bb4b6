//! `[candidates]`: the caps of the small profile's candidates lever
//! (alternative fixes tried in scratch copies when the check still
//! fails): `max` (how many, default 3) and `max_secs` (how long, all of
//! them together, default 180).
//!
//! Steps: each file's section is checked and layered ([`apply`]); a
//! project's that is not trusted may only lower them ([`restrict`]); the
//! run's values are resolved once, here ([`CandidatesSettings::resolve`]),
//! with the scratch folder under rein's home.
//!
//! [`apply`]: CandidatesSettings::apply

use std::path::Path;
use std::time::Duration;

use anyhow::{Result, bail};
use serde::Deserialize;

/// Most candidates a setting may ask for.
const MOST: u32 = 10;
/// Longest time a setting may give them, in seconds.
const LONGEST_SECS: u64 = 3600;

/// `[candidates]` as written.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CandidatesSection {
    /// Most alternative fixes a run tries (0: none).
    pub max: Option<u32>,
    /// Most seconds they may take together.
    pub max_secs: Option<u64>,
}

/// `[candidates]` after layering; unset keys take the engine's defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CandidatesSettings {
    max: Option<u32>,
    time: Option<Duration>,
}

impl CandidatesSettings {
    /// Add one file's section over the layers below it.
    pub fn apply(&mut self, section: CandidatesSection) -> Result<()> {
        if let Some(n) = section.max {
            if n > MOST {
                bail!("[candidates] max must be at most {MOST}, got {n}");
            }
            self.max = Some(n);
        }
        if let Some(s) = section.max_secs {
            if !(1..=LONGEST_SECS).contains(&s) {
                bail!("[candidates] max_secs must be 1 to {LONGEST_SECS}, got {s}");
            }
            self.time = Some(Duration::from_secs(s));
        }
        Ok(())
    }

    /// The run's caps, and its scratch folder under `home`.
    pub fn resolve(&self, home: &Path) -> rein_core::CandidatesConfig {
        let defaults = rein_core::CandidatesConfig::default();
        rein_core::CandidatesConfig {
            max: self.max.unwrap_or(defaults.max),
            time: self.time.unwrap_or(defaults.time),
            scratch_root: Some(home.join(rein_core::SCRATCH_FOLDER)),
        }
    }
}

/// A project's `[candidates]` when the folder is not trusted: a value
/// above the current one (`now`) is looser and dropped, named in
/// `looser` as `key = value`.
pub fn restrict(
    section: CandidatesSection,
    now: &CandidatesSettings,
    looser: &mut Vec<(&'static str, String)>,
) -> CandidatesSection {
    let current = now.resolve(Path::new(""));
    let mut keep = |key: &'static str, value: u64, cap: u64| match value > cap {
        true => {
            looser.push((key, value.to_string()));
            false
        }
        false => true,
    };
    CandidatesSection {
        max: section
            .max
            .filter(|&n| keep("[candidates] max", n.into(), current.max.into())),
        max_secs: section
            .max_secs
            .filter(|&s| keep("[candidates] max_secs", s, current.time.as_secs())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(text: &str) -> Result<CandidatesSection, toml::de::Error> {
        toml::from_str(text)
    }

    #[test]
    fn unset_keys_take_the_defaults_and_the_scratch_folder_is_under_the_home() {
        let run = CandidatesSettings::default().resolve(Path::new("/h"));
        assert_eq!(run.max, 3);
        assert_eq!(run.time, Duration::from_secs(180));
        assert_eq!(run.scratch_root.as_deref(), Some(Path::new("/h/scratch")));
        let mut s = CandidatesSettings::default();
        s.apply(section("max = 0\nmax_secs = 30").unwrap()).unwrap();
        let run = s.resolve(Path::new("/h"));
        assert_eq!((run.max, run.time), (0, Duration::from_secs(30)));
    }

    #[test]
    fn out_of_range_or_unknown_keys_are_one_line_errors() {
        let mut s = CandidatesSettings::default();
        let e = s.apply(section("max = 11").unwrap()).unwrap_err();
        assert_eq!(e.to_string(), "[candidates] max must be at most 10, got 11");
        let e = s.apply(section("max_secs = 0").unwrap()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "[candidates] max_secs must be 1 to 3600, got 0"
        );
        assert!(section("count = 2").is_err(), "unknown key");
        assert_eq!(s, CandidatesSettings::default(), "nothing applied");
    }

    #[test]
    fn an_untrusted_project_may_lower_the_caps_but_not_raise_them() {
        let mut looser = Vec::new();
        let now = CandidatesSettings::default();
        let kept = restrict(
            section("max = 9\nmax_secs = 60").unwrap(),
            &now,
            &mut looser,
        );
        assert_eq!(kept, section("max_secs = 60").unwrap());
        assert_eq!(looser, vec![("[candidates] max", "9".to_string())]);
    }
}
