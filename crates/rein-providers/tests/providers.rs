//! Integration tests of rein's model providers, one module per provider.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod providers {
    #[allow(dead_code)]
    pub mod fixtures;
    mod http;
    mod replay;
    mod sse_props;
}
