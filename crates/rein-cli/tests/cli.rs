//! End-to-end tests of the `rein` binary with the replay provider.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli {
    mod acp;
    mod approval_content;
    mod bad_input;
    mod cancel;
    mod commands;
    mod commands_live;
    mod context;
    mod crash_soak;
    mod eval;
    mod exec;
    mod exec_display;
    mod fault_soak;
    mod github_action;
    mod hooks;
    mod hooks_claude;
    mod host_isolation;
    mod http_providers;
    mod lsp;
    mod mcp;
    mod mcp_conformance;
    mod mcp_http;
    mod mcp_lifetime;
    mod mcp_serve;
    mod memory;
    mod model;
    mod network;
    mod otel;
    mod permissions;
    mod plugins;
    mod postgres;
    mod postgres_serve;
    mod review;
    mod rewind;
    mod same_prompt;
    mod sandbox;
    mod sandbox_server;
    pub mod serve;
    mod sessions;
    mod skills;
    mod stream_input;
    mod subagents;
    pub mod support;
    mod trust;
    mod tui;
    mod tui_rewind;
    mod workspace_sanity;
}
