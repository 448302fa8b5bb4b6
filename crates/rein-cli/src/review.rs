//! `rein review` and `rein init`: the built-in `/review` and `/init`
//! commands run headless, as `rein exec --command` runs any command.
//!
//! `rein review` runs in plan mode (the agent only reads; its `git`
//! commands run in the read-only sandbox), then reads the answer's
//! findings, one line each, `P1 path:line - reason` ([`parse`]), and
//! prints the answer, or with `--json` one object:
//!
//! ```json
//! {"findings": [{"severity": "P1", "file": "src/a.rs", "line": 42, "reason": "…"}],
//!  "summary": "…", "session_id": "…", "stop_reason": "completed"}
//! ```
//!
//! Exit codes: those of `rein exec`, or [`FINDINGS`] when the run completed
//! and a finding at `--fail-on` or worse exists.

use serde::Serialize;

pub use crate::cli::Severity;
use crate::cli::{ExecArgs, InitArgs, ReviewArgs, SessionArgs};
use crate::exit::{self, Failure};
use crate::output;

/// The exit code when a finding reaches `--fail-on`.
pub use crate::exit::FINDINGS;

/// One finding of the answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub severity: Severity,
    pub file: String,
    pub line: u32,
    pub reason: String,
}

/// What `--json` prints.
#[derive(Debug, Serialize)]
struct Report<'a> {
    findings: &'a [Finding],
    summary: String,
    session_id: Option<&'a str>,
    stop_reason: rein_core::StopReason,
}

/// `rein review`.
pub async fn run(args: ReviewArgs) -> Result<i32, Failure> {
    let exec = ExecArgs {
        images: Vec::new(),
        prompt: args.base.into_iter().collect(),
        command: Some("review".into()),
        input_format: None,
        json: false,
        session: SessionArgs {
            mode: Some("plan".into()),
            ..SessionArgs::default()
        },
        budget: args.budget,
        models: args.models,
        workspace: args.workspace,
        trust: args.trust,
        otel: Default::default(),
        output_schema: None,
        output_last_message: None,
        keep_answer: true,
        cancel: None,
        tap: None,
    };
    let (code, outcome) = crate::exec::run_task(exec).await?;
    let findings = parse(&outcome.final_text);
    if args.json {
        let report = Report {
            findings: &findings,
            summary: summary(&outcome.final_text),
            session_id: outcome.session_id.as_deref(),
            stop_reason: outcome.reason,
        };
        let line = serde_json::to_string(&report).map_err(Failure::harness)?;
        output::out(&line);
    } else if outcome.reason == rein_core::StopReason::Completed {
        output::out(outcome.final_text.trim_end());
    }
    if code != exit::COMPLETED {
        return Ok(code);
    }
    let failing = args
        .fail_on
        .is_some_and(|level| findings.iter().any(|f| f.severity <= level));
    Ok(if failing { FINDINGS } else { exit::COMPLETED })
}

/// `rein init`.
pub async fn init(args: InitArgs) -> Result<i32, Failure> {
    crate::exec::run(ExecArgs {
        images: Vec::new(),
        prompt: args.words,
        command: Some("init".into()),
        input_format: None,
        json: false,
        session: SessionArgs::default(),
        budget: args.budget,
        models: args.models,
        workspace: args.workspace,
        trust: args.trust,
        otel: Default::default(),
        output_schema: None,
        output_last_message: None,
        keep_answer: false,
        cancel: None,
        tap: None,
    })
    .await
}

/// The findings of an answer: lines `P1 path:line - reason` (also with
/// `:column`, a leading `-` or `*`, bold markers, or an en or em dash).
pub fn parse(answer: &str) -> Vec<Finding> {
    let mut found: Vec<Finding> = answer.lines().filter_map(finding).collect();
    found.sort_by_key(|f| f.severity);
    found
}

fn finding(line: &str) -> Option<Finding> {
    let line = line
        .trim()
        .trim_start_matches(['-', '*', '•'])
        .trim()
        .replace("**", "");
    let (level, rest) = line.split_once(char::is_whitespace)?;
    let severity = match level.trim_matches(['[', ']', ':']) {
        "P0" => Severity::P0,
        "P1" => Severity::P1,
        "P2" => Severity::P2,
        "P3" => Severity::P3,
        _ => return None,
    };
    let rest = rest.trim().trim_matches('`');
    let (place, reason) = rest
        .split_once(" - ")
        .or_else(|| rest.split_once(" — "))
        .or_else(|| rest.split_once(" – "))
        .or_else(|| rest.split_once(": "))?;
    let mut parts = place.trim().trim_matches('`').split(':');
    let file = parts.next()?.to_string();
    let line_no = parts.next()?.trim().parse().ok()?;
    if file.is_empty() || file.contains(char::is_whitespace) {
        return None;
    }
    Some(Finding {
        severity,
        file,
        line: line_no,
        reason: reason.trim().to_string(),
    })
}

/// The answer without its finding lines.
fn summary(answer: &str) -> String {
    answer
        .lines()
        .filter(|l| finding(l).is_none())
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_are_read_in_the_forms_models_write_them_and_sorted_by_severity() {
        let answer = "Here is what I found.\n\n\
                      P2 src/lib.rs:10 - the error is dropped\n\
                      - **P0** `src/auth.rs:42` — the token is logged\n\
                      * P1 src/db.rs:7:3 – the lock is taken twice\n\
                      P3 notes.md - no line\n\
                      P9 x.rs:1 - not a level\n\
                      \nOverall the change is risky.";
        let f = parse(answer);
        let got: Vec<(Severity, &str, u32)> = f
            .iter()
            .map(|f| (f.severity, f.file.as_str(), f.line))
            .collect();
        assert_eq!(
            got,
            vec![
                (Severity::P0, "src/auth.rs", 42),
                (Severity::P1, "src/db.rs", 7),
                (Severity::P2, "src/lib.rs", 10),
            ]
        );
        assert_eq!(f[0].reason, "the token is logged");
        let s = summary(answer);
        assert!(
            s.starts_with("Here is what I found.") && s.ends_with("risky."),
            "{s}"
        );
        assert!(!s.contains("src/auth.rs"), "{s}");
        assert!(parse("No findings.\n\nClean change.").is_empty());
    }
}
