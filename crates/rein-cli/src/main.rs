//! The `rein` command.

mod acp;
mod agents;
mod cli;
mod cmdline;
mod config;
mod context_cmd;
mod eval;
mod exec;
mod exit;
mod home;
mod hooks;
mod hooks_cmd;
mod hosting;
mod mcp;
mod mcp_cmd;
mod mcp_serve;
mod memory;
mod memory_cmd;
mod model;
mod otel;
mod output;
mod permissions;
mod plugin;
mod providers;
mod review;
mod rewind;
mod sandbox_config;
mod sandbox_run;
mod serve;
mod sessions;
mod settings_file;
mod setup;
mod skills;
mod trust;
mod trust_cmd;
mod tui;

use rein_tools::sandbox::{netbridge, server};

/// glibc gives each thread that allocates while another holds the main
/// arena an arena of its own (up to 8 per core), and keeps what each one
/// grew to: with the runtime's workers and blocking threads that is
/// megabytes of peak memory for a program that allocates little at once.
/// Two arenas are plenty here.
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called first thing
    // in main, before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

fn main() {
    limit_malloc_arenas();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // Inside the sandbox, as the bridge to the network proxy of a command
    // whose network is a list of hosts: nothing else of rein runs.
    if args.get(1).is_some_and(|a| a == netbridge::BRIDGE_ARG) {
        std::process::exit(netbridge::main(&args[2..]));
    }
    // Inside the sandbox, as the supervisor of a session's commands.
    if args.get(1).is_some_and(|a| a == server::SERVER_ARG) {
        std::process::exit(server::main(&args[2..]));
    }
    if let Ok(exe) = std::env::current_exe() {
        netbridge::register(exe.clone());
        server::register(exe);
    }
    let json_lines = cli::asks_for_json_lines(&args);
    let cli = match cli::Cli::parse_args(args) {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version are not errors.
            let code = if e.use_stderr() { exit::USAGE } else { 0 };
            let _ = e.print();
            if e.use_stderr() && json_lines {
                let first = e.render().to_string();
                let first = first.lines().next().unwrap_or_default();
                let error = first.trim_start_matches("error: ").to_string();
                exec::print_stopped_before_running(rein_core::StopReason::UsageError, error);
            }
            std::process::exit(code);
        }
    };
    // A password on the command line is in the process list: blank it
    // before anything else runs.
    if let Some(cli::Command::Serve(args)) = &cli.command {
        cmdline::hide_store_password(args.store.as_deref());
    }
    // `rein sandbox-run` replaces its whole environment first: before any
    // thread exists, so before the runtime.
    if let Some(cli::Command::SandboxRun(args)) = &cli.command {
        std::process::exit(sandbox_run::main(args));
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            output::err(&format!("rein: cannot start the async runtime: {e}"));
            std::process::exit(exit::HARNESS_ERROR);
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            None => tui::run(cli.app).await,
            Some(cli::Command::Exec(args)) => exec::run(args).await,
            Some(cli::Command::Compact(args)) => exec::compact(args).await,
            Some(cli::Command::Review(args)) => review::run(args).await,
            Some(cli::Command::Init(args)) => review::init(args).await,
            Some(cli::Command::Sessions(cmd)) => sessions::run(cmd).await,
            Some(cli::Command::Model(cmd)) => model::run(cmd),
            Some(cli::Command::Memory(cmd)) => memory_cmd::run(cmd).await,
            Some(cli::Command::Trust(args)) => trust_cmd::run(args),
            Some(cli::Command::Mcp(cmd)) => mcp_cmd::run(cmd).await,
            Some(cli::Command::Eval(args)) => eval::run(args).await,
            Some(cli::Command::Context(args)) => context_cmd::run(args),
            Some(cli::Command::Hooks(cmd)) => match cmd {
                cli::HooksCommand::List(args) => hooks_cmd::list(args),
            },
            Some(cli::Command::Agents(args)) => agents::list_agents(args),
            Some(cli::Command::Worktrees(args)) => agents::list_worktrees(args),
            Some(cli::Command::Plugin(cmd)) => config::rein_home()
                .map_err(exit::Failure::usage)
                .and_then(|home| plugin::run(cmd.into(), &home)),
            Some(cli::Command::Rewind(args)) => rewind::run(args).await,
            Some(cli::Command::Acp(args)) => acp::run(args).await,
            Some(cli::Command::Serve(args)) => serve::run(args).await,
            // Run above, before the runtime.
            Some(cli::Command::SandboxRun(_)) => Ok(sandbox_run::NOT_RUN),
        }
    });
    let code = match result {
        Ok(code) => code,
        Err(failure) => {
            output::err(&format!("rein: {:#}", failure.error));
            failure.code
        }
    };
    // Do not wait for tasks still winding down (a signal watcher, say).
    runtime.shutdown_background();
    // The running sandboxes end before the program does.
    server::shutdown();
    std::process::exit(code);
}
