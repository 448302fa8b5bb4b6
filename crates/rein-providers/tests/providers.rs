//! Integration tests of rein's model providers, one module per provider.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod providers {
    mod anthropic;
    #[allow(dead_code)]
    pub mod fixtures;
    mod http;
    mod openai_chat;
    mod openai_responses;
    mod replay;
    mod sse_props;
    mod tokens;
    mod user_images;
}
