//! The permission decision of one call: [`Permissions::decide`] and its
//! steps.

use std::path::Path;

use super::{
    Assessment, PermissionMode, Permissions, Risk, Rule, SubjectKind, Verdict, never_read,
    normalise, protected_write,
};
use crate::tool::ToolAccess;

impl Permissions {
    /// What no rule can allow: reading credentials, a tool the mode does
    /// not offer, a command plan mode cannot sandbox.
    fn refused_outright(
        &self,
        mode: PermissionMode,
        tool: &str,
        access: ToolAccess,
        a: &Assessment,
    ) -> Option<String> {
        let secrets = self.secret_cache.get_or_init(|| self.resolve_secret_dirs());
        for read in a.reads.iter().chain(&a.writes) {
            if let Some(dir) = never_read::secret_holding(secrets, read) {
                return Some(format!(
                    "{} is inside {}, which holds credentials and is never read",
                    read.display(),
                    dir.display()
                ));
            }
        }
        if !mode.offers(access) {
            return Some(
                crate::gate::Refusal::NotOffered {
                    tool: tool.to_string(),
                }
                .to_string(),
            );
        }
        if mode == PermissionMode::Plan && access == ToolAccess::Execute && a.unsandboxed {
            return Some(format!(
                "`{tool}` cannot run in plan mode here: no read-only sandbox is available on this \
                 machine"
            ));
        }
        None
    }

    /// A write into rein's own state (never, but inside a sub-agent's
    /// worktree that is the run's workspace), or into a protected path
    /// that no precise allow rule names.
    fn protected(
        &self,
        tool: &str,
        a: &Assessment,
        all_allow: &[Rule],
        workspace: &Path,
    ) -> Option<String> {
        let rel = |p: &Path| -> String {
            p.strip_prefix(workspace)
                .map(|r| r.to_string_lossy().into_owned())
                .unwrap_or_else(|_| p.to_string_lossy().into_owned())
        };
        let state = self.state_cache.get_or_init(|| self.resolve_state_dirs());
        let ws = normalise(workspace);
        for w in &a.writes {
            let w = normalise(w);
            if let Some(dir) = state.iter().find(|d| w.starts_with(d))
                && !(w.starts_with(&ws) && is_work_copy_of(dir, &ws))
            {
                return Some(format!(
                    "{} is inside {}, rein's own state folder (REIN_HOME), which tools never \
                     change",
                    w.display(),
                    dir.display()
                ));
            }
        }
        if let Some(w) = a
            .writes
            .iter()
            .find(|w| self.run_files.contains(&normalise(w)))
        {
            return Some(format!(
                "{} is run on the host by a hook or an MCP server the user approved, so tools \
                 never change it (its approval covers its content)",
                rel(w)
            ));
        }
        for w in &a.writes {
            if let Some(why) = protected_write(w, workspace) {
                let r = rel(w);
                let explicitly_allowed = all_allow.iter().any(|rule| {
                    rule.pattern.is_some() && rule.matches(tool, &r, SubjectKind::Path)
                });
                if !explicitly_allowed {
                    return Some(format!(
                        "{r} is protected ({why}); a rule like `{}` allows it",
                        Rule::exact(tool, &r)
                    ));
                }
            }
        }
        None
    }

    /// Decide one call. `granted` are extra allow rules (approvals this
    /// session). `workspace` is canonical. The steps, in order: what no
    /// rule allows, deny rules, protected paths, what asks in any mode but
    /// bypass, allow rules, the mode's default.
    pub fn decide(
        &self,
        mode: PermissionMode,
        tool: &str,
        access: ToolAccess,
        a: &Assessment,
        granted: &[Rule],
        workspace: &Path,
    ) -> Verdict {
        let deny = |why: String| Verdict::Deny { why };
        if let Some(why) = self.refused_outright(mode, tool, access, a) {
            return deny(why);
        }
        let call = Call::new(tool, a);
        if let Some((r, what)) = call.cautious_hit(&self.rules.deny) {
            return deny(format!("the rule `{r}` denies {what}"));
        }
        let all_allow: Vec<Rule> = self.rules.allow.iter().chain(granted).cloned().collect();
        if let Some(why) = self.protected(tool, a, &all_allow, workspace) {
            return deny(why);
        }
        let allowed = call.allowed_by(&all_allow);
        if let Some(ask) = self.asks_anyway(mode, &call, &allowed) {
            return ask;
        }
        if allowed.all() {
            return Verdict::Allow;
        }
        mode_default(mode, access, &call, &allowed)
    }

    /// A run's own ask rules (a command's scope) on a call the rules and
    /// the mode allowed: the first that matches asks, in every mode (the
    /// user sees the change before it is made).
    pub fn run_asks(&self, tool: &str, a: &Assessment, asks: &[Rule]) -> Option<Verdict> {
        let call = Call::new(tool, a);
        let (r, _) = call.cautious_hit(asks)?;
        let allowed = call.allowed_by(&[]);
        Some(call.ask(
            format!("the rule `{r}` of this run asks first"),
            None,
            &allowed,
        ))
    }

    /// What asks although the rules or the mode would allow it: a call
    /// that needs the user, and (but in bypass) a command without a
    /// sandbox, an ask rule, a high-risk call no precise rule names.
    fn asks_anyway(
        &self,
        mode: PermissionMode,
        call: &Call<'_>,
        allowed: &Allowed,
    ) -> Option<Verdict> {
        let a = call.a;
        let specific = allowed.all() && allowed.hits.iter().flatten().all(|r| call.names(r));
        if a.needs_user && !specific {
            let why = match a.reasons.is_empty() {
                true => "this call needs the user's approval in every mode".to_string(),
                false => a.reasons.join("; "),
            };
            return Some(call.ask(why, None, allowed));
        }
        if mode == PermissionMode::Bypass {
            return None;
        }
        if a.unsandboxed {
            return Some(
                call.ask(
                    "no sandbox is available on this machine, so every command needs approval"
                        .to_string(),
                    None,
                    allowed,
                ),
            );
        }
        if let Some((r, _)) = call.cautious_hit(&self.rules.ask) {
            return Some(call.ask(format!("the rule `{r}` asks first"), None, allowed));
        }
        if a.risk == Risk::High && !specific {
            let mut why = "high risk".to_string();
            if !a.reasons.is_empty() {
                why = format!("high risk: {}", a.reasons.join("; "));
            }
            return Some(call.ask(why, None, allowed));
        }
        None
    }
}

/// The mode's answer for a call no rule decided.
fn mode_default(
    mode: PermissionMode,
    access: ToolAccess,
    call: &Call<'_>,
    allowed: &Allowed,
) -> Verdict {
    let needs = |what: &str, fix: PermissionMode| {
        call.ask(
            format!("{what} need approval in `{mode}` mode"),
            Some(fix),
            allowed,
        )
    };
    match (mode, access) {
        (PermissionMode::Bypass | PermissionMode::Auto, _) => Verdict::Allow,
        (_, ToolAccess::Read) => Verdict::Allow,
        (PermissionMode::Plan, ToolAccess::Execute) if call.a.in_sandbox => Verdict::Allow,
        (PermissionMode::AcceptEdits, ToolAccess::Write) => Verdict::Allow,
        (_, ToolAccess::Write) => needs("file changes", PermissionMode::AcceptEdits),
        (_, ToolAccess::Execute) => needs(
            "commands (and tools that are not read-only)",
            PermissionMode::Auto,
        ),
    }
}

/// One call as the rules see it: its tool, its assessment and the
/// subjects rules match (one empty subject when it has none).
struct Call<'a> {
    tool: &'a str,
    a: &'a Assessment,
    subjects: Vec<&'a str>,
}

/// The allow rule each subject matched, if any.
struct Allowed {
    hits: Vec<Option<Rule>>,
}

impl Allowed {
    fn all(&self) -> bool {
        self.hits.iter().all(Option::is_some)
    }
}

impl<'a> Call<'a> {
    fn new(tool: &'a str, a: &'a Assessment) -> Call<'a> {
        let subjects = if a.subjects.is_empty() {
            vec![""]
        } else {
            a.subjects.iter().map(String::as_str).collect()
        };
        Call { tool, a, subjects }
    }

    /// The allow rule of `rules` each subject matches.
    fn allowed_by(&self, rules: &[Rule]) -> Allowed {
        let hit = |subject: &str| -> Option<Rule> {
            rules
                .iter()
                .find(|r| {
                    if subject.is_empty() || self.a.opaque {
                        // Only a bare rule covers a call with nothing to match.
                        r.pattern.is_none() && r.matches_tool(self.tool)
                    } else {
                        r.matches(self.tool, subject, self.a.kind)
                    }
                })
                .cloned()
        };
        Allowed {
            hits: self.subjects.iter().map(|s| hit(s)).collect(),
        }
    }

    /// The first of `rules` that matches the call, and what it matched.
    /// Deny and ask rules see every subject, even those of an opaque call:
    /// for them, matching too much is the safe side.
    fn cautious_hit(&self, rules: &[Rule]) -> Option<(Rule, String)> {
        let tool = self.tool;
        if let Some(r) = rules
            .iter()
            .find(|r| r.pattern.is_none() && r.matches_tool(tool))
        {
            return Some((r.clone(), format!("every `{tool}` call")));
        }
        self.a.subjects.iter().find_map(|s| {
            rules
                .iter()
                .find(|r| r.matches(tool, s, self.a.kind))
                .map(|r| (r.clone(), format!("`{s}`")))
        })
    }

    /// Whether `r` names the call precisely: a rule with a pattern, or, for
    /// a call with nothing to match (an MCP tool), a bare rule spelling
    /// the tool's whole name.
    fn names(&self, r: &Rule) -> bool {
        r.pattern.is_some() || (self.a.subjects.is_empty() && !self.a.opaque && r.tool == self.tool)
    }

    /// Ask about the call, suggesting a precise rule for each subject no
    /// allow rule matched (none for an opaque call).
    fn ask(&self, why: String, mode_fix: Option<PermissionMode>, allowed: &Allowed) -> Verdict {
        let nothing_to_match = self.subjects.iter().all(|s| s.is_empty());
        let rules = if self.a.opaque {
            Vec::new()
        } else if nothing_to_match {
            // A call with nothing to match (an MCP tool): the bare rule
            // spelling its whole name is the precise one, and it allows it.
            vec![Rule::new(self.tool, None)]
        } else {
            self.subjects
                .iter()
                .zip(&allowed.hits)
                .filter(|(s, r)| r.is_none() && !s.is_empty())
                .map(|(s, _)| Rule::exact(self.tool, s))
                .collect()
        };
        Verdict::Ask {
            why,
            suggested_rules: rules,
            suggested_mode: mode_fix,
        }
    }
}

/// Whether `workspace` is a sub-agent's git worktree in rein's state
/// folder `state` (`state/worktrees/REPO/NAME`, or a folder in one), or
/// a scratch copy the candidates lever tries a fix in
/// (`state/scratch/COPY/workspace`): the parts of that folder a run may
/// write, when one is the call's workspace.
fn is_work_copy_of(state: &Path, workspace: &Path) -> bool {
    [
        state.join("worktrees"),
        state.join(crate::engine::SCRATCH_FOLDER),
    ]
    .iter()
    .any(|d| {
        workspace
            .strip_prefix(d)
            .is_ok_and(|rel| rel.components().count() >= 2)
    })
}
