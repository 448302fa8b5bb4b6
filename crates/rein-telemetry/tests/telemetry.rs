//! rein-telemetry's scenario tests, in one binary: real OTLP receivers on
//! 127.0.0.1 (HTTP/1.1 with hyper, h2c gRPC with h2) decode what rein
//! sends with the crate's own message types, and the official Python
//! opentelemetry-proto classes decode the same bodies (`independent`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "telemetry/content_off.rs"]
mod content_off;
#[path = "telemetry/endings.rs"]
mod endings;
#[path = "telemetry/env.rs"]
mod env;
#[path = "telemetry/events.rs"]
mod events;
#[path = "telemetry/failures.rs"]
mod failures;
#[path = "telemetry/grpc.rs"]
mod grpc;
#[path = "telemetry/grpc_receiver.rs"]
mod grpc_receiver;
#[path = "telemetry/independent.rs"]
mod independent;
#[path = "telemetry/receiver.rs"]
mod receiver;
#[path = "telemetry/spans.rs"]
mod spans;
