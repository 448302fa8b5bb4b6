//! The flags of a run: `rein exec`, `rein compact`, and what the app
//! shares with them (session, budget, model).

use std::path::PathBuf;

use clap::Args;

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
    /// brings: lean, tools, first-call, nudge, single-call, read-first,
    /// check, evidence, candidates, hints (comma-separated or repeated).
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
    #[arg(value_name = "PROMPT", required_unless_present_any = ["command", "input_format"])]
    pub prompt: Vec<String>,
    /// `stream-json`: read the conversation from stdin, one JSON object
    /// per line (messages, approval answers, interrupts), events out as
    /// with --json; the session stays open until stdin closes.
    #[arg(long, value_enum, value_name = "FORMAT", conflicts_with_all = ["prompt", "command"])]
    pub input_format: Option<InputFormat>,
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
    /// The final answer must be JSON valid under this JSON Schema; when
    /// it is not, the model is told once and asked again (exit 12 if it
    /// still is not).
    #[arg(long, value_name = "FILE")]
    pub output_schema: Option<PathBuf>,
    /// Also write the final answer to FILE.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output_last_message: Option<PathBuf>,
    /// Attach an image (PNG, JPEG, GIF or WebP, at most 20 MiB) to the
    /// prompt; repeatable. Refused for a model that does not take images
    /// (the local model).
    #[arg(long = "image", value_name = "FILE", conflicts_with = "input_format")]
    pub images: Vec<PathBuf>,
    /// The answer is shown by the caller (`rein review`), not printed.
    #[arg(skip)]
    pub keep_answer: bool,
    /// Stops the run (`rein mcp serve`'s cancellation); None: Ctrl-C.
    #[arg(skip)]
    pub cancel: Option<rein_core::CancellationToken>,
    /// Sees every event of the run besides the output.
    #[arg(skip)]
    pub tap: Option<EventTap>,
}

/// A function every event of a run is shown to.
#[derive(Clone)]
pub struct EventTap(pub std::sync::Arc<dyn Fn(&rein_core::Event) + Send + Sync>);

impl std::fmt::Debug for EventTap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EventTap")
    }
}

/// `rein review`.
#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// Review this branch against BASE (a ref: `main`, `HEAD~3`), besides
    /// the uncommitted changes; default: the uncommitted changes only.
    #[arg(long, value_name = "REF")]
    pub base: Option<String>,
    /// Print the findings as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
    /// Exit 11 when a finding at this severity or a worse one exists.
    #[arg(long, value_name = "P0|P1|P2|P3", ignore_case = true)]
    pub fail_on: Option<Severity>,
    #[command(flatten)]
    pub budget: BudgetArgs,
    #[command(flatten)]
    pub models: ModelArgs,
    /// Workspace directory (default: the current directory).
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Trust the workspace for this run only (see `rein exec --trust`).
    #[arg(long)]
    pub trust: bool,
}

/// `rein init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// What AGENTS.md should stress (optional words for the agent).
    #[arg(value_name = "WORDS")]
    pub words: Vec<String>,
    #[command(flatten)]
    pub budget: BudgetArgs,
    #[command(flatten)]
    pub models: ModelArgs,
    /// Workspace directory (default: the current directory).
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Trust the workspace for this run only (see `rein exec --trust`).
    #[arg(long)]
    pub trust: bool,
}

/// How bad a review finding is: P0 (critical) to P3 (minor).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, clap::ValueEnum)]
#[value(rename_all = "verbatim")]
pub enum Severity {
    P0,
    P1,
    P2,
    P3,
}

/// `rein mcp serve`.
#[derive(Debug, Args)]
pub struct McpServeArgs {
    #[command(flatten)]
    pub budget: BudgetArgs,
    #[command(flatten)]
    pub models: ModelArgs,
    /// The project folder the runs work in (default: the current
    /// directory); a call's `cwd` must lie inside it.
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Trust the folder for these runs (see `rein exec --trust`).
    #[arg(long)]
    pub trust: bool,
}

/// How `rein exec` reads its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InputFormat {
    /// One JSON object per line on stdin.
    StreamJson,
}
