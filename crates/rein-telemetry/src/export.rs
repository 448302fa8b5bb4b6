//! `Exporter`: sends one encoded OTLP request to a signal's endpoint, over
//! HTTP/protobuf or gRPC, on the workspace's one HTTP stack (reqwest on
//! rustls with ring).

use reqwest::Url;

use crate::config::{Protocol, Signal, SignalConfig};
use crate::{TelemetryConfig, TelemetryError, grpc};

/// Why one export did not go through. Never holds a header's value.
#[derive(Debug)]
pub(crate) enum ExportFailure {
    Timeout,
    Connect(String),
    Transport(String),
    /// The receiver answered with this HTTP status.
    Status(u16),
    /// The gRPC call ended with a status other than OK.
    Grpc {
        code: u32,
        message: String,
    },
    /// A gRPC answer with no `grpc-status` at all.
    NoGrpcStatus,
}

impl ExportFailure {
    pub fn from_reqwest(e: &reqwest::Error) -> ExportFailure {
        // The URL is said once by the report; the chain of sources says
        // what failed (reqwest's messages never include headers).
        let mut text = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            text.push_str(": ");
            text.push_str(&s.to_string());
            source = s.source();
        }
        if e.is_timeout() {
            ExportFailure::Timeout
        } else if e.is_connect() {
            ExportFailure::Connect(text)
        } else {
            ExportFailure::Transport(text)
        }
    }

    /// The kind a report is said once for.
    fn kind(&self) -> String {
        match self {
            ExportFailure::Timeout => "timeout".to_string(),
            ExportFailure::Connect(_) => "connect".to_string(),
            ExportFailure::Transport(_) => "transport".to_string(),
            ExportFailure::Status(code) => format!("http-{code}"),
            ExportFailure::Grpc { code, .. } => format!("grpc-{code}"),
            ExportFailure::NoGrpcStatus => "grpc-no-status".to_string(),
        }
    }

    fn describe(&self) -> String {
        match self {
            ExportFailure::Timeout => "no answer within the timeout".to_string(),
            ExportFailure::Connect(e) => format!("cannot connect ({e})"),
            ExportFailure::Transport(e) => e.clone(),
            ExportFailure::Status(code) => format!("the receiver answered HTTP {code}"),
            ExportFailure::Grpc { code, message } if message.is_empty() => {
                format!("the receiver answered grpc-status {code}")
            }
            ExportFailure::Grpc { code, message } => {
                format!("the receiver answered grpc-status {code}: {message}")
            }
            ExportFailure::NoGrpcStatus => "the gRPC answer had no grpc-status".to_string(),
        }
    }

    /// The report's kind and line for a failed export of `signal` to `url`.
    pub fn report(&self, signal: Signal, url: &Url) -> (String, String) {
        let kind = format!("{}:{}", signal.as_str(), self.kind());
        let line = format!(
            "cannot export {} to {}: {}",
            signal.as_str(),
            shown(url),
            self.describe()
        );
        (kind, line)
    }
}

/// `url` without user name or password (they can be credentials).
fn shown(url: &Url) -> String {
    let mut url = url.clone();
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.to_string()
}

/// Makes ring the process's rustls crypto provider, as rein-providers
/// does (reqwest is built without one so that aws-lc stays out of the
/// build). Harmless when one is installed already.
fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The HTTP clients of the exporters: HTTP/1.1-or-2 for HTTP/protobuf,
/// HTTP/2 only for gRPC (with prior knowledge on `http://`: h2c).
#[derive(Debug)]
pub(crate) struct Exporter {
    http: Option<reqwest::Client>,
    grpc: Option<reqwest::Client>,
}

impl Exporter {
    pub fn new(config: &TelemetryConfig) -> Result<Exporter, TelemetryError> {
        install_tls_provider();
        let uses = |p: Protocol| config.traces.protocol == p || config.metrics.protocol == p;
        let builder =
            || reqwest::Client::builder().user_agent(concat!("rein/", env!("CARGO_PKG_VERSION")));
        let build =
            |b: reqwest::ClientBuilder| b.build().map_err(|e| TelemetryError::Http(e.to_string()));
        Ok(Exporter {
            http: uses(Protocol::HttpProtobuf)
                .then(|| build(builder()))
                .transpose()?,
            grpc: uses(Protocol::Grpc)
                .then(|| build(builder().http2_prior_knowledge()))
                .transpose()?,
        })
    }

    /// Send one encoded export request (`ExportTraceServiceRequest` or
    /// `ExportMetricsServiceRequest`) to `to`.
    pub async fn send(&self, to: &SignalConfig, message: Vec<u8>) -> Result<(), ExportFailure> {
        let client = match to.protocol {
            Protocol::HttpProtobuf => self.http.as_ref(),
            Protocol::Grpc => self.grpc.as_ref(),
        };
        let Some(client) = client else {
            return Err(ExportFailure::Transport(
                "no client for the protocol".to_string(),
            ));
        };
        // The client's own timeout covers the body too; this one also
        // bounds a stuck connection attempt.
        let call = async {
            match to.protocol {
                Protocol::HttpProtobuf => post(client, to, message).await,
                Protocol::Grpc => {
                    grpc::call(client, &to.url, &to.headers, to.timeout, &message).await
                }
            }
        };
        tokio::time::timeout(to.timeout, call)
            .await
            .unwrap_or(Err(ExportFailure::Timeout))
    }
}

/// OTLP/HTTP: POST the protobuf; any 2xx is success (a partial success in
/// the body is not looked at).
async fn post(
    client: &reqwest::Client,
    to: &SignalConfig,
    message: Vec<u8>,
) -> Result<(), ExportFailure> {
    let mut request = client
        .post(to.url.clone())
        .header("content-type", "application/x-protobuf")
        .timeout(to.timeout);
    for (key, value) in &to.headers {
        request = request.header(key.as_str(), value.as_str());
    }
    let response = request
        .body(message)
        .send()
        .await
        .map_err(|e| ExportFailure::from_reqwest(&e))?;
    let status = response.status();
    // Read the answer so the connection can be used again.
    let _ = response.bytes().await;
    if status.is_success() {
        Ok(())
    } else {
        Err(ExportFailure::Status(status.as_u16()))
    }
}
