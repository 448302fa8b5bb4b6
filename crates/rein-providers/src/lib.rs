//! rein-providers: the model backends rein can talk to, each in its own
//! module behind rein-core's [`rein_core::Provider`] trait.
//!
//! - [`replay`]: plays a JSON script of model turns (demos, tests, bug
//!   reports).
//! - [`local`] (feature `local`): a GGUF model run in-process with llama.cpp.
//!
//! [`tokens`] counts tokens with OpenAI's tokenizers offline and
//! [`catalog`] knows context windows and prices of well-known models.

pub mod anthropic;
pub mod catalog;
pub mod http;
#[cfg(feature = "local")]
pub mod local;
#[cfg(feature = "mock-server")]
pub mod mock_server;
pub mod openai_chat;
pub mod openai_responses;
pub mod protocol;
pub mod replay;
pub mod retry_after;
pub mod sse;
pub mod tokens;

#[cfg(feature = "local")]
pub use local::{LocalConfig, LocalProvider};
pub use replay::{
    ReplayError, ReplayFailure, ReplayProvider, ReplayScript, ReplayToolCall, ReplayTurn,
};
