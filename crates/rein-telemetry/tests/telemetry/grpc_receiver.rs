//! An h2c (HTTP/2 without TLS) gRPC receiver for the two OTLP export
//! methods: checks the path, content type, `te` and the message framing,
//! decodes the request, and answers OK in trailers or a chosen error
//! status as a trailers-only response.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, Request, Response};
use prost::Message;
use rein_telemetry::proto::metrics::ExportMetricsServiceRequest;
use rein_telemetry::proto::trace::{ExportTraceServiceRequest, Span};
use tokio::net::TcpListener;

const TRACES: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";
const METRICS: &str = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export";

#[derive(Debug, Default)]
pub struct Calls {
    pub traces: Vec<ExportTraceServiceRequest>,
    pub metrics: Vec<ExportMetricsServiceRequest>,
    /// What was wrong with a call, if anything (path, headers, framing).
    pub faults: Vec<String>,
}

pub struct GrpcReceiver {
    pub addr: SocketAddr,
    pub calls: Arc<Mutex<Calls>>,
}

impl GrpcReceiver {
    /// Answer every call with `grpc_status` (0 = OK).
    pub async fn start(grpc_status: u32) -> GrpcReceiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let calls = Arc::new(Mutex::new(Calls::default()));
        let state = calls.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let state = state.clone();
                tokio::spawn(async move {
                    let Ok(mut conn) = h2::server::handshake(stream).await else {
                        return;
                    };
                    while let Some(Ok((req, respond))) = conn.accept().await {
                        tokio::spawn(serve(req, respond, state.clone(), grpc_status));
                    }
                });
            }
        });
        GrpcReceiver { addr, calls }
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn spans(&self) -> Vec<Span> {
        let c = self.calls.lock().unwrap();
        c.traces
            .iter()
            .flat_map(|t| &t.resource_spans)
            .flat_map(|rs| &rs.scope_spans)
            .flat_map(|ss| ss.spans.clone())
            .collect()
    }
}

async fn serve(
    req: Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    state: Arc<Mutex<Calls>>,
    grpc_status: u32,
) {
    let path = req.uri().path().to_string();
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let mut faults = Vec::new();
    if header("content-type") != "application/grpc" {
        faults.push(format!("content-type {:?}", header("content-type")));
    }
    if header("te") != "trailers" {
        faults.push(format!("te {:?}", header("te")));
    }
    let mut body = req.into_body();
    let mut buf = BytesMut::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        buf.extend_from_slice(&chunk);
    }
    let message = match unframe(&buf) {
        Ok(m) => m,
        Err(e) => {
            faults.push(e);
            &[][..]
        }
    };
    {
        let mut c = state.lock().unwrap();
        if grpc_status == 0 {
            match path.as_str() {
                TRACES => c
                    .traces
                    .push(ExportTraceServiceRequest::decode(message).unwrap()),
                METRICS => c
                    .metrics
                    .push(ExportMetricsServiceRequest::decode(message).unwrap()),
                other => faults.push(format!("path {other}")),
            }
        }
        c.faults.extend(faults);
    }
    if grpc_status == 0 {
        let head = Response::builder()
            .status(200)
            .header("content-type", "application/grpc")
            .body(())
            .unwrap();
        let mut stream = respond.send_response(head, false).unwrap();
        // An empty Export…ServiceResponse, framed.
        stream
            .send_data(Bytes::from_static(&[0, 0, 0, 0, 0]), false)
            .unwrap();
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", "0".parse().unwrap());
        stream.send_trailers(trailers).unwrap();
    } else {
        // Trailers-only: the status in the headers, no body.
        let head = Response::builder()
            .status(200)
            .header("content-type", "application/grpc")
            .header("grpc-status", grpc_status.to_string())
            .header("grpc-message", "collector%20unavailable")
            .body(())
            .unwrap();
        let _ = respond.send_response(head, true);
    }
}

/// The message of one gRPC frame: flag 0, big-endian length, message.
fn unframe(buf: &[u8]) -> Result<&[u8], String> {
    if buf.len() < 5 {
        return Err(format!("a frame of {} bytes", buf.len()));
    }
    if buf[0] != 0 {
        return Err(format!("compressed flag {}", buf[0]));
    }
    let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
    if buf.len() != 5 + len {
        return Err(format!("length {len} but {} bytes follow", buf.len() - 5));
    }
    Ok(&buf[5..])
}
