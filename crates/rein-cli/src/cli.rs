//! Command-line arguments.

use std::path::PathBuf;

use std::ffi::OsString;

use clap::{Args, CommandFactory, Parser, Subcommand};

mod manage;
mod plugin;
mod run;
mod serving;

pub use manage::{
    ContextArgs, EvalArgs, EvalCommand, EvalRunArgs, HooksArgs, HooksCommand, ListArgs, McpCommand,
    MemoryCommand, SessionsCommand, TrustArgs,
};
pub use plugin::PluginCommand;
pub use run::{
    BudgetArgs, CompactArgs, EventTap, ExecArgs, InitArgs, InputFormat, McpServeArgs, ModelArgs,
    ReviewArgs, SessionArgs, Severity,
};
pub use serving::{AcpArgs, SandboxRunArgs, ServeArgs};

/// rein: a coding agent for the terminal.
#[derive(Debug, Parser)]
#[command(
    name = "rein",
    version,
    about,
    long_about = "rein: a coding agent for the terminal. With no command it opens the \
                  interactive app in the current directory.",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub app: AppArgs,
}

/// Options of the interactive app (`rein` with no command).
#[derive(Debug, Args)]
pub struct AppArgs {
    /// A first message, sent as the app opens: `rein "fix the failing
    /// test"` (a message that is one command's name, such as `exec`, runs
    /// that command instead).
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,
    #[command(flatten)]
    pub session: SessionArgs,
    #[command(flatten)]
    pub models: ModelArgs,
    /// Draw on the alternate screen instead of inline (the terminal's
    /// scrollback then keeps nothing of the session); `[tui]
    /// alternate_screen = true` in config does the same.
    #[arg(long)]
    pub alt_screen: bool,
    /// Workspace directory (default: the current directory).
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Trust the workspace for this run only (not recorded): its
    /// `.rein/` settings count like your own. `rein trust` records it.
    #[arg(long)]
    pub trust: bool,
    #[command(flatten)]
    pub otel: crate::otel::OtelArgs,
}

impl Cli {
    /// Parse `args` (the program's name first). Options written before a
    /// command (`rein --mode auto exec "..."`) count as written after it.
    pub fn parse_args(args: Vec<OsString>) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(options_after_the_command(&Cli::command(), args))
    }
}

/// Whether a command line, even one clap refuses, asks `rein exec` for JSON
/// Lines (`--json`, `--input-format`): then its refusal must end with a
/// `stopped` line too.
pub fn asks_for_json_lines(args: &[OsString]) -> bool {
    let words: Vec<&str> = args
        .iter()
        .skip(1)
        .filter_map(|a| a.to_str())
        .take_while(|a| *a != "--")
        .collect();
    words.contains(&"exec")
        && words
            .iter()
            .any(|w| *w == "--json" || w.starts_with("--input-format"))
}

/// `args` with the options that come before a command moved after it
/// (after its subcommand too: `rein -C dir sessions list` becomes `rein
/// sessions list -C dir`). Unchanged when there is no command, or when an
/// option before it is not one `rein` has (clap then says so).
fn options_after_the_command(cmd: &clap::Command, args: Vec<OsString>) -> Vec<OsString> {
    let mut i = 1;
    while let Some(token) = args.get(i).and_then(|a| a.to_str()) {
        if !token.starts_with('-') || token == "-" || token == "--" {
            break;
        }
        let Some(takes_value) = option_takes_value(cmd, token) else {
            return args;
        };
        i += if takes_value { 2 } else { 1 };
    }
    let options_end = i.min(args.len());
    if options_end == 1 {
        return args;
    }
    // The command, and its subcommands, right after the options.
    let mut path_end = options_end;
    let mut level = cmd;
    while let Some(name) = args.get(path_end).and_then(|a| a.to_str()) {
        match level.find_subcommand(name) {
            Some(sub) => {
                level = sub;
                path_end += 1;
            }
            None => break,
        }
    }
    if path_end == options_end {
        return args;
    }
    let mut out = vec![args[0].clone()];
    out.extend_from_slice(&args[options_end..path_end]);
    out.extend_from_slice(&args[1..options_end]);
    out.extend_from_slice(&args[path_end..]);
    out
}

/// Whether `token`, an option of the app, takes its value from the next
/// argument (`--mode auto`, `-C dir`); `None` for an option rein does not
/// know here.
fn option_takes_value(cmd: &clap::Command, token: &str) -> Option<bool> {
    let takes = |arg: &clap::Arg| arg.get_action().takes_values();
    if let Some(long) = token.strip_prefix("--") {
        let (name, attached) = match long.split_once('=') {
            Some((n, _)) => (n, true),
            None => (long, false),
        };
        let arg = cmd.get_arguments().find(|a| a.get_long() == Some(name))?;
        return Some(takes(arg) && !attached);
    }
    let mut chars = token[1..].chars();
    let short = chars.next()?;
    let arg = cmd.get_arguments().find(|a| a.get_short() == Some(short))?;
    // `-Cdir`: the value is attached.
    Some(takes(arg) && chars.next().is_none())
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one task headless in the workspace and print the answer.
    Exec(ExecArgs),
    /// List, show or delete stored sessions.
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// List, locate and check the local model files.
    #[command(subcommand)]
    Model(crate::model::ModelCommand),
    /// List, show or remove long-term memories.
    #[command(subcommand)]
    Memory(MemoryCommand),
    /// Compact a session now: summarise all but its last turns.
    Compact(CompactArgs),
    /// Review the uncommitted changes (or this branch against --base)
    /// with a read-only agent: findings P0 (critical) to P3.
    Review(ReviewArgs),
    /// Write or update the project's AGENTS.md with the agent (the
    /// built-in `/init` command).
    Init(InitArgs),
    /// Trust a folder: its `.rein/` settings then count like your own
    /// (untrusted, they may only tighten). Covers its subfolders.
    Trust(TrustArgs),
    /// The MCP servers of your config: start each and list its tools.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Run a suite of tasks on a model and report what was solved;
    /// `rein eval compare A.jsonl B.jsonl` shows what changed.
    Eval(EvalArgs),
    /// Show the instructions a run here would follow: your AGENTS.md and
    /// the project's, from its root down to this folder, and what was cut.
    Context(ContextArgs),
    /// The hooks of your settings.json and the project's (Claude Code's
    /// `hooks` block).
    #[command(subcommand)]
    Hooks(HooksCommand),
    /// The sub-agents the `task` tool can start here: built-in, yours
    /// (`$REIN_HOME/agents`) and the project's (`.rein/agents`,
    /// `.claude/agents`).
    Agents(ListArgs),
    /// The git worktrees isolated sub-agents left with changes.
    Worktrees(ListArgs),
    /// Claude Code plugins: install one from a folder, list, remove,
    /// enable or disable them.
    #[command(subcommand)]
    Plugin(PluginCommand),
    /// Take a session back to a checkpoint: its files, its conversation
    /// or both (`--list` shows them).
    Rewind(crate::rewind::RewindArgs),
    /// Serve an editor over the Agent Client Protocol on stdin and stdout
    /// (Zed, JetBrains, Neovim: see the README).
    Acp(AcpArgs),
    /// Serve sessions over HTTP (OpenAPI at /openapi.json, events as
    /// Server-Sent Events), with a token, on loopback by default.
    Serve(ServeArgs),
    /// Run one command in rein's sandbox from a spec `rein acp` wrote (the
    /// editor's terminal starts it); not for people.
    #[command(hide = true)]
    SandboxRun(SandboxRunArgs),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moved(line: &[&str]) -> Vec<String> {
        let args = line.iter().map(OsString::from).collect();
        options_after_the_command(&Cli::command(), args)
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect()
    }

    #[test]
    fn options_before_a_command_are_moved_after_it_and_its_subcommand() {
        assert_eq!(
            moved(&["rein", "--mode", "auto", "exec", "hi"]),
            ["rein", "exec", "--mode", "auto", "hi"]
        );
        assert_eq!(
            moved(&[
                "rein", "-C", "/w", "--plan", "sessions", "list", "--limit", "3"
            ]),
            [
                "rein", "sessions", "list", "-C", "/w", "--plan", "--limit", "3"
            ]
        );
        assert_eq!(
            moved(&["rein", "--mode=auto", "-C/w", "exec", "hi"]),
            ["rein", "exec", "--mode=auto", "-C/w", "hi"]
        );
    }

    #[test]
    fn a_line_without_a_command_or_with_an_unknown_option_is_left_alone() {
        for line in [
            &["rein", "--mode", "auto", "fix the test"][..],
            &["rein", "exec", "--mode", "auto", "hi"],
            &["rein", "--bogus", "exec", "hi"],
            &["rein", "--mode", "auto"],
            &["rein"],
        ] {
            assert_eq!(moved(line), line, "{line:?}");
        }
    }

    #[test]
    fn a_prompt_opens_the_app_and_a_command_name_runs_the_command() {
        let cli = Cli::parse_args(
            ["rein", "--mode", "auto", "fix the test"]
                .map(OsString::from)
                .to_vec(),
        )
        .unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.app.prompt.as_deref(), Some("fix the test"));
        assert_eq!(cli.app.session.mode.as_deref(), Some("auto"));
        let cli = Cli::parse_args(
            ["rein", "--mode", "auto", "exec", "hi"]
                .map(OsString::from)
                .to_vec(),
        )
        .unwrap();
        match cli.command {
            Some(Command::Exec(e)) => {
                assert_eq!(e.prompt, ["hi"]);
                assert_eq!(e.session.mode.as_deref(), Some("auto"));
            }
            other => panic!("{other:?}"),
        }
    }
}
