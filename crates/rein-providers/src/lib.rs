//! rein-providers: the model backends rein can talk to, each in its own
//! module behind rein-core's [`rein_core::Provider`] trait.
//!
//! - [`replay`]: plays a JSON script of model turns (demos, tests, bug
//!   reports).

pub mod anthropic;
pub mod catalog;
pub mod http;
pub mod mock_server;
pub mod openai_chat;
pub mod openai_responses;
pub mod protocol;
pub mod replay;
pub mod retry_after;
pub mod sse;

pub use replay::{
    ReplayError, ReplayFailure, ReplayProvider, ReplayScript, ReplayToolCall, ReplayTurn,
};
