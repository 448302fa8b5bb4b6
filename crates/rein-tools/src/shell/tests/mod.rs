#![allow(clippy::unwrap_used, clippy::expect_used)]

mod classify;
mod parse;
mod subjects;
