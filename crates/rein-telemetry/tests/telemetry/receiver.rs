//! An OTLP/HTTP receiver: records every request's path and content type
//! and decodes traces and metrics; answers with a chosen HTTP status.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use prost::Message;
use rein_telemetry::proto::metrics::{ExportMetricsServiceRequest, Metric};
use rein_telemetry::proto::trace::{ExportTraceServiceRequest, Span};
use tokio::net::TcpListener;

/// One request as it arrived.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub content_type: String,
    /// Header names and values, for checking configured headers arrive.
    pub headers: Vec<(String, String)>,
}

#[derive(Debug, Default)]
pub struct Received {
    pub requests: Vec<Seen>,
    pub traces: Vec<ExportTraceServiceRequest>,
    pub metrics: Vec<ExportMetricsServiceRequest>,
    /// The bodies as they arrived (path, bytes), for a decoder of others.
    pub bodies: Vec<(String, Bytes)>,
}

/// A receiver running until the test ends.
pub struct Receiver {
    pub addr: SocketAddr,
    pub received: Arc<Mutex<Received>>,
}

impl Receiver {
    /// Answer every request with `status` (200 for a healthy collector).
    pub async fn start(status: u16) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Received::default()));
        let state = received.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let state = state.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| answer(req, state.clone(), status));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Receiver { addr, received }
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn spans(&self) -> Vec<Span> {
        let r = self.received.lock().unwrap();
        r.traces
            .iter()
            .flat_map(|t| &t.resource_spans)
            .flat_map(|rs| &rs.scope_spans)
            .flat_map(|ss| ss.spans.clone())
            .collect()
    }

    /// The metrics of the last metrics export (they are cumulative).
    pub fn latest_metrics(&self) -> Vec<Metric> {
        let r = self.received.lock().unwrap();
        r.metrics
            .last()
            .map(|m| {
                m.resource_metrics
                    .iter()
                    .flat_map(|rm| &rm.scope_metrics)
                    .flat_map(|sm| sm.metrics.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The bodies of accepted requests, in arrival order.
    pub fn bodies(&self) -> Vec<(String, Bytes)> {
        self.received.lock().unwrap().bodies.clone()
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.received.lock().unwrap().requests.clone()
    }
}

async fn answer(
    req: Request<Incoming>,
    state: Arc<Mutex<Received>>,
    status: u16,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let seen = Seen {
        path: parts.uri.path().to_string(),
        content_type: parts
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string(),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
            .collect(),
    };
    {
        let mut r = state.lock().unwrap();
        if status == 200 {
            r.bodies.push((seen.path.clone(), body.clone()));
            match seen.path.as_str() {
                "/v1/traces" => r
                    .traces
                    .push(ExportTraceServiceRequest::decode(body.as_ref()).unwrap()),
                "/v1/metrics" => r
                    .metrics
                    .push(ExportMetricsServiceRequest::decode(body.as_ref()).unwrap()),
                _ => {}
            }
        }
        r.requests.push(seen);
    }
    Ok(Response::builder()
        .status(status)
        .header("content-type", "application/x-protobuf")
        .body(Full::new(Bytes::new()))
        .unwrap())
}
