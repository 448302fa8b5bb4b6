//! `rein trust [DIR] | --revoke [DIR] | --list`, whether a run's folder is
//! trusted, and the question the app asks once on first opening an
//! untrusted folder whose project settings would change something.

use std::io::{BufRead, Write};
use std::path::Path;

use anyhow::anyhow;

use crate::cli::TrustArgs;
use crate::config::{Config, rein_home};
use crate::exit::{COMPLETED, Failure};
use crate::output::{err, out};
use crate::setup::workspace::resolve_workspace;
use crate::trust::ProjectReport;
use crate::trust::store::{Answer, Lookup, TrustStore};

/// The trust store of `$REIN_HOME`.
fn open_store() -> Result<TrustStore, Failure> {
    let home = rein_home().map_err(Failure::usage)?;
    TrustStore::load(&home).map_err(Failure::usage)
}

/// Whether a run in `workspace` uses its project settings in full:
/// `--trust` (this run only, not recorded), else the recorded answer.
pub fn trusted_for_run(workspace: &Path, flag: bool) -> Result<bool, Failure> {
    Ok(flag || open_store()?.is_trusted(workspace))
}

/// `rein trust`.
pub fn run(args: TrustArgs) -> Result<i32, Failure> {
    let mut store = open_store()?;
    if args.list {
        list(&store);
        return Ok(COMPLETED);
    }
    let dir = resolve_workspace(args.dir.as_deref())?;
    if args.revoke {
        store
            .record(&dir, Answer::NotTrusted)
            .map_err(Failure::harness)?;
        out(&format!(
            "not trusted: {} (its project settings may only tighten)",
            dir.display()
        ));
        return Ok(COMPLETED);
    }
    store
        .record(&dir, Answer::Trusted)
        .map_err(Failure::harness)?;
    out(&format!("trusted: {} and its subfolders", dir.display()));
    // Trust covers the files its hooks run as they are now.
    if let Some(note) = crate::hooks::record_project_hooks(&home_of(&store), &dir) {
        err(&format!("rein: note: {note}"));
    }
    if is_broad(&dir) {
        err(&format!(
            "rein: note: every repository below {} is now trusted",
            dir.display()
        ));
    }
    match Config::load(&dir, false) {
        Ok((_, report)) if report.is_empty() => {
            out("its project settings change nothing that an untrusted folder would not get anyway")
        }
        Ok((_, report)) => out(&format!(
            "its project settings now apply: {}",
            report.listing()
        )),
        Err(e) => err(&format!(
            "rein: note: its project settings cannot be read: {e:#}"
        )),
    }
    Ok(COMPLETED)
}

/// The `$REIN_HOME` a store was read from.
fn home_of(store: &TrustStore) -> std::path::PathBuf {
    store
        .path()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// `/` and the home directory: trusting them trusts every clone below.
fn is_broad(dir: &Path) -> bool {
    let home = std::env::var_os("HOME").and_then(|h| std::fs::canonicalize(h).ok());
    dir.parent().is_none() || home.as_deref() == Some(dir)
}

/// `rein trust --list`.
fn list(store: &TrustStore) {
    let mut any = false;
    for (folder, answer) in store.entries() {
        any = true;
        let word = match answer {
            Answer::Trusted => "trusted    ",
            Answer::NotTrusted => "not trusted",
        };
        out(&format!("{word}  {folder}"));
    }
    if !any {
        out(&format!(
            "no folders recorded (in {}); run `rein trust DIR` to trust one",
            store.path().display()
        ));
    }
}

/// The app, before it takes the terminal: whether `workspace` is trusted,
/// asking once (and recording the answer) when nothing is recorded and its
/// project settings would change something.
pub fn trusted_for_app(workspace: &Path, flag: bool) -> Result<bool, Failure> {
    if flag {
        return Ok(true);
    }
    let mut store = open_store()?;
    match store.lookup(workspace) {
        Lookup::Trusted(_) => return Ok(true),
        Lookup::NotTrusted(_) => return Ok(false),
        Lookup::Unknown => {}
    }
    let (_, report) = Config::load(workspace, false).map_err(Failure::usage)?;
    if report.is_empty() {
        return Ok(false);
    }
    let stdin = std::io::stdin();
    let answer = ask(
        workspace,
        &report,
        &mut stdin.lock(),
        &mut std::io::stderr(),
    )
    .map_err(|e| Failure::harness(anyhow!("cannot ask about trust: {e}")))?;
    match answer {
        Some(a) => {
            store.record(workspace, a).map_err(Failure::harness)?;
            if a == Answer::Trusted
                && let Some(note) = crate::hooks::record_project_hooks(&home_of(&store), workspace)
            {
                err(&format!("rein: note: {note}"));
            }
            Ok(a == Answer::Trusted)
        }
        None => Ok(false),
    }
}

/// Show what the project settings would change and read the answer:
/// `y` trusts, `n` declines, end of input answers nothing (not recorded).
pub fn ask(
    workspace: &Path,
    report: &ProjectReport,
    input: &mut impl BufRead,
    output: &mut impl Write,
) -> std::io::Result<Option<Answer>> {
    writeln!(output, "{}", question(workspace, report))?;
    loop {
        write!(output, "Trust this folder? [y] trust  [n] don't trust: ")?;
        output.flush()?;
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 {
            writeln!(output)?;
            return Ok(None);
        }
        match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => return Ok(Some(Answer::Trusted)),
            "n" | "no" => return Ok(Some(Answer::NotTrusted)),
            _ => {}
        }
    }
}

/// The text above the question: the folder and what trusting it changes.
pub fn question(workspace: &Path, report: &ProjectReport) -> String {
    let mut text = format!(
        "rein: {} is not a trusted folder. Its project settings would change:\n",
        rein_tui::cells::sanitize(&workspace.display().to_string())
    );
    for (file, items) in &report.files {
        let items: Vec<String> = items.iter().map(ToString::to_string).collect();
        text.push_str(&format!("  {file}: {}\n", items.join(", ")));
    }
    text.push_str(
        "Trusted, they count like your own settings (this folder and its subfolders). \
         Not trusted, they may only tighten (deny and ask rules, lower limits).",
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trust::Ignored;
    use rein_core::PermissionMode;

    fn report() -> ProjectReport {
        let mut r = ProjectReport::default();
        r.add(
            ".rein/config.toml",
            vec![
                Ignored::Provider("evil".into()),
                Ignored::ProviderSection("evil".into()),
                Ignored::Mode(PermissionMode::Auto),
                Ignored::AllowRules(2),
                Ignored::Network,
            ],
        );
        r.add(".rein/settings.json", vec![Ignored::EnvAllow(1)]);
        r
    }

    #[test]
    fn the_question_shows_what_each_file_would_change() {
        let text = question(Path::new("/src/app"), &report());
        assert!(text.contains("/src/app is not a trusted folder"), "{text}");
        assert!(
            text.contains(
                "  .rein/config.toml: provider \"evil\", [providers.evil], mode \"auto\", allow rules (2), network\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("  .rein/settings.json: env_allow (1)\n"),
            "{text}"
        );
    }

    #[test]
    fn answers_are_y_or_n_other_text_asks_again_and_end_of_input_records_nothing() {
        let ask_with = |typed: &str| {
            let mut shown = Vec::new();
            let a = ask(
                Path::new("/w"),
                &report(),
                &mut typed.as_bytes(),
                &mut shown,
            )
            .unwrap();
            (a, String::from_utf8(shown).unwrap())
        };
        assert_eq!(ask_with("y\n").0, Some(Answer::Trusted));
        assert_eq!(ask_with("YES\n").0, Some(Answer::Trusted));
        assert_eq!(ask_with("n\n").0, Some(Answer::NotTrusted));
        let (a, shown) = ask_with("maybe\n\nno\n");
        assert_eq!(a, Some(Answer::NotTrusted));
        assert_eq!(shown.matches("Trust this folder?").count(), 3, "{shown}");
        assert_eq!(ask_with("").0, None);
        assert_eq!(ask_with("maybe").0, None);
    }
}
