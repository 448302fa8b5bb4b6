//! JSON-RPC with a language server over its standard streams: messages
//! framed by `Content-Length` headers, requests matched to answers by id,
//! the server's own requests answered (with nothing: rein offers no
//! workspace configuration, progress or registrations), and published
//! diagnostics kept per document with a counter, so a caller can wait for
//! the ones that follow a change.
//!
//! Everything the server sends is untrusted: a frame over
//! [`MAX_MESSAGE`] bytes, a bad header or bad JSON ends the connection.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use lsp_types::{Diagnostic, PublishDiagnosticsParams};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{oneshot, watch};

/// The largest message read from a server.
pub const MAX_MESSAGE: usize = 64 * 1024 * 1024;

/// Why talking to a server failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RpcError {
    #[error("the language server closed its connection")]
    Closed,
    #[error("the language server did not answer {0} in time")]
    Timeout(String),
    #[error("the language server answered {method} with an error: {message}")]
    Answered { method: String, message: String },
    #[error("could not write to the language server: {0}")]
    Write(String),
}

/// The diagnostics a server last published for one document.
#[derive(Debug, Clone, Default)]
pub struct Published {
    /// Counts the publications for this document (from 1).
    pub count: u64,
    pub items: Vec<Diagnostic>,
}

type Pending = HashMap<i64, oneshot::Sender<Result<Value, String>>>;

/// One live connection.
pub struct Connection {
    writer: tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>,
    pending: Mutex<Pending>,
    next_id: AtomicI64,
    diagnostics: Mutex<HashMap<String, Published>>,
    /// Bumped on every publication and when the connection ends.
    changed: watch::Sender<u64>,
    reader: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Connection {
    /// Talk over `input` (the server's stdout) and `output` (its stdin).
    pub fn start(
        input: impl AsyncRead + Send + Unpin + 'static,
        output: impl AsyncWrite + Send + Unpin + 'static,
    ) -> std::sync::Arc<Connection> {
        let conn = std::sync::Arc::new(Connection {
            writer: tokio::sync::Mutex::new(Box::new(output)),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicI64::new(1),
            diagnostics: Mutex::new(HashMap::new()),
            changed: watch::channel(0).0,
            reader: Mutex::new(None),
        });
        let weak = std::sync::Arc::downgrade(&conn);
        let task = tokio::spawn(async move {
            let mut input = BufReader::new(input);
            while let Ok(message) = read_message(&mut input).await {
                let Some(conn) = weak.upgrade() else { return };
                conn.dispatch(message).await;
            }
            if let Some(conn) = weak.upgrade() {
                conn.closed();
            }
        });
        if let Ok(mut r) = conn.reader.lock() {
            *r = Some(task);
        }
        conn
    }

    /// Whether the server is still connected.
    pub fn is_open(&self) -> bool {
        self.reader
            .lock()
            .map(|r| r.as_ref().is_some_and(|t| !t.is_finished()))
            .unwrap_or(false)
    }

    /// Send a request and wait for its answer, at most `timeout`.
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, RpcError> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.pending.lock() {
            p.insert(id, tx);
        }
        let sent = self
            .send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        if let Err(e) = sent {
            self.forget(id);
            return Err(e);
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(Ok(v))) => Ok(v),
            Ok(Ok(Err(message))) => Err(RpcError::Answered {
                method: method.to_string(),
                message,
            }),
            Ok(Err(_)) => Err(RpcError::Closed),
            Err(_) => {
                self.forget(id);
                Err(RpcError::Timeout(method.to_string()))
            }
        }
    }

    /// Send a notification.
    pub async fn notify(&self, method: &str, params: Value) -> Result<(), RpcError> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await
    }

    /// The diagnostics last published for `uri`.
    pub fn published(&self, uri: &str) -> Published {
        self.diagnostics
            .lock()
            .ok()
            .and_then(|d| d.get(uri).cloned())
            .unwrap_or_default()
    }

    /// A receiver that changes on every publication (and at the end).
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    async fn send(&self, message: &Value) -> Result<(), RpcError> {
        let body = message.to_string();
        let mut w = self.writer.lock().await;
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        w.write_all(frame.as_bytes())
            .await
            .map_err(|e| RpcError::Write(e.to_string()))?;
        w.flush().await.map_err(|e| RpcError::Write(e.to_string()))
    }

    fn forget(&self, id: i64) {
        if let Ok(mut p) = self.pending.lock() {
            p.remove(&id);
        }
    }

    async fn dispatch(&self, message: Value) {
        let method = message.get("method").and_then(Value::as_str);
        let id = message.get("id").cloned();
        match (method, id) {
            // A server's own request: answered, with nothing.
            (Some(method), Some(id)) => {
                let result = match method {
                    "workspace/configuration" => {
                        let n = message["params"]["items"].as_array().map_or(0, Vec::len);
                        Value::Array(vec![Value::Null; n])
                    }
                    _ => Value::Null,
                };
                let _ = self
                    .send(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
                    .await;
            }
            (Some("textDocument/publishDiagnostics"), None) => {
                if let Ok(p) =
                    serde_json::from_value::<PublishDiagnosticsParams>(message["params"].clone())
                {
                    self.store(p);
                }
            }
            (Some(_), None) => {}
            (None, Some(id)) => self.answer(id, &message),
            (None, None) => {}
        }
    }

    fn store(&self, p: PublishDiagnosticsParams) {
        if let Ok(mut d) = self.diagnostics.lock() {
            let entry = d.entry(p.uri.as_str().to_string()).or_default();
            entry.count += 1;
            entry.items = p.diagnostics;
        }
        self.changed.send_modify(|n| *n += 1);
    }

    fn answer(&self, id: Value, message: &Value) {
        let Some(id) = id.as_i64() else { return };
        let Some(tx) = self.pending.lock().ok().and_then(|mut p| p.remove(&id)) else {
            return;
        };
        let answer = match message.get("error") {
            Some(e) => Err(e["message"].as_str().unwrap_or("error").to_string()),
            None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
        };
        let _ = tx.send(answer);
    }

    fn closed(&self) {
        if let Ok(mut p) = self.pending.lock() {
            p.clear();
        }
        self.changed.send_modify(|n| *n += 1);
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Ok(mut r) = self.reader.lock()
            && let Some(t) = r.take()
        {
            t.abort();
        }
    }
}

/// Read one framed message.
async fn read_message(input: &mut (impl AsyncBufReadExt + Unpin)) -> std::io::Result<Value> {
    let bad = |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_string());
    let mut length = None;
    loop {
        let mut line = String::new();
        if input.read_line(&mut line).await? == 0 {
            return Err(bad("end of stream"));
        }
        if line.len() > 1024 {
            return Err(bad("header line too long"));
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let length = length.ok_or_else(|| bad("no Content-Length"))?;
    if length > MAX_MESSAGE {
        return Err(bad("message too large"));
    }
    let mut body = vec![0u8; length];
    input.read_exact(&mut body).await?;
    serde_json::from_slice(&body).map_err(|_| bad("not JSON"))
}
