//! What each part of a Chat Completions request costs in tokens
//! (`o200k_base`, the tokenizer of GPT-4o/4.1/5): each message, each tool
//! (its name, description and JSON schema as sent) and the rest. The
//! request is one saved by `scripts/bench-turns.sh` (`BENCH_KEEP_REQUEST`).
//!
//! Usage: cargo run --release -p rein-providers --example request_tokens -- REQUEST.json

use rein_core::TokenCounter;
use rein_providers::tokens::{Encoding, TiktokenCounter};

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: request_tokens REQUEST.json");
        std::process::exit(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read {path}: {e}");
            std::process::exit(1);
        }
    };
    let req: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {path} is not JSON: {e}");
            std::process::exit(1);
        }
    };
    let counter = TiktokenCounter::new(Encoding::O200kBase);
    let count = |v: &serde_json::Value| {
        let s = v.to_string();
        (s.len(), counter.count(&s))
    };
    println!("| part | bytes | tokens |");
    println!("| --- | --- | --- |");
    let mut total = (0, 0);
    let mut row = |name: String, (bytes, tokens): (usize, u64)| {
        total.0 += bytes;
        total.1 += tokens;
        println!("| {name} | {bytes} | {tokens} |");
    };
    for m in req["messages"].as_array().into_iter().flatten() {
        let role = m["role"].as_str().unwrap_or("?");
        row(format!("message: {role}"), count(&m["content"]));
    }
    for t in req["tools"].as_array().into_iter().flatten() {
        let f = &t["function"];
        let name = f["name"].as_str().unwrap_or("?");
        row(format!("tool: {name}"), count(t));
    }
    let (bytes, tokens) = count(&req);
    println!("| whole request (as JSON) | {bytes} | {tokens} |");
    println!("| (sum of the parts above) | {} | {} |", total.0, total.1);
}
