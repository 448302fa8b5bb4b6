//! The flags of the commands that look after rein's state: sessions,
//! memory, trust, MCP servers, hooks, agents, context and evals.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::ModelArgs;

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
    /// Serve rein itself over MCP (stdio): a `rein` tool that runs a task
    /// as `rein exec` does, and `rein_result`.
    Serve(crate::cli::McpServeArgs),
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
    /// Every task's time limit in seconds, instead of its own (for a slow
    /// or shared machine, where time says nothing of the model).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_secs: Option<u64>,
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

/// Arguments of `rein agents` and `rein worktrees`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// One JSON object per line.
    #[arg(long)]
    pub json: bool,
    /// Workspace directory (default: the current directory).
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}
