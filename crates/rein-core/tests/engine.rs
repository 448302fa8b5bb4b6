//! Scenario tests of the agent loop, with a scripted provider standing in
//! for a remote model and small tools standing in for real ones.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod engine {
    mod budget_scenarios;
    mod budget_tree_scenarios;
    mod child_scenarios;
    mod compaction_scenarios;
    mod context_scenarios;
    mod hook_scenarios;
    mod image_scenarios;
    mod limit_scenarios;
    pub mod long_task;
    mod loop_scenarios;
    mod permission_scenarios;
    mod profile_scenarios;
    mod scope_scenarios;
    mod stream_scenarios;
    mod subagent_scenarios;
    pub mod support;
    mod tool_scenarios;
}
