//! A local HTTP/1.1 server that plays scripted responses and records the
//! requests it gets: it stands in for a model service in tests and bug
//! reports, speaking the real wire format (chunked bodies, real SSE bytes,
//! pauses, and connections dropped mid-body). Built only with the
//! `mock-server` feature: it is test equipment, not part of rein.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

mod faults;
pub use faults::Fault;

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Lower-case names.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON (Null when it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// One piece of a scripted response body.
#[derive(Debug, Clone)]
pub enum Part {
    /// Bytes sent as one chunk.
    Bytes(Vec<u8>),
    /// Wait before the next part.
    Pause(Duration),
    /// Close the connection without ending the body.
    Drop,
}

/// A connection closed with no response at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HangUp {
    /// Before the request is read (as a refused connection looks to a client
    /// behind a load balancer).
    OnAccept,
    /// After the request is read, before any header.
    AfterRequest,
}

/// A scripted response.
#[derive(Debug, Clone)]
pub struct MockResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub parts: Vec<Part>,
    /// Close the connection instead of answering.
    pub hang_up: Option<HangUp>,
}

impl MockResponse {
    /// A 200 event stream sent as one chunk.
    pub fn sse(body: impl Into<Vec<u8>>) -> Self {
        MockResponse {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            parts: vec![Part::Bytes(body.into())],
            hang_up: None,
        }
    }

    /// A 200 event stream sent in the given pieces.
    pub fn sse_parts(parts: Vec<Part>) -> Self {
        MockResponse {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            parts,
            hang_up: None,
        }
    }

    /// A JSON body with a status.
    pub fn json(status: u16, body: &serde_json::Value) -> Self {
        MockResponse {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            parts: vec![Part::Bytes(body.to_string().into_bytes())],
            hang_up: None,
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers
            .push((name.to_ascii_lowercase(), value.to_string()));
        self
    }
}

/// Answers a request when nothing is queued: a test's stand-in for a
/// model that reads the conversation (or the workspace) to decide.
pub type Responder = Arc<dyn Fn(&RecordedRequest) -> MockResponse + Send + Sync>;

#[derive(Default)]
struct Shared {
    queue: VecDeque<MockResponse>,
    responder: Option<Responder>,
    requests: Vec<RecordedRequest>,
    /// Responses taken from the queue, hang-ups included.
    served: usize,
}

/// The server; it stops when dropped.
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock(shared: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MockServer {
    /// Listen on a free loopback port.
    pub async fn start() -> std::io::Result<MockServer> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Mutex::new(Shared::default()));
        let s2 = shared.clone();
        let task = tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                let s3 = s2.clone();
                tokio::spawn(async move {
                    let _ = serve(sock, s3).await;
                });
            }
        });
        Ok(MockServer { addr, shared, task })
    }

    /// Base URL, e.g. `http://127.0.0.1:41234`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queue the response to the next request.
    pub fn push(&self, response: MockResponse) {
        lock(&self.shared).queue.push_back(response);
    }

    /// Answer with `responder` whenever the queue is empty (instead of a
    /// 500 saying nothing was queued).
    pub fn respond_with(&self, responder: Responder) {
        lock(&self.shared).responder = Some(responder);
    }

    /// Requests received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared).requests.clone()
    }

    /// Connections answered from the queue so far, hang-ups included.
    pub fn served(&self) -> usize {
        lock(&self.shared).served
    }

    /// Responses still queued.
    pub fn queued(&self) -> usize {
        lock(&self.shared).queue.len()
    }
}

async fn read_request(sock: &mut TcpStream) -> std::io::Result<Option<RecordedRequest>> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
        let n = sock.read(&mut tmp).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut words = first.split_whitespace();
    let method = words.next().unwrap_or_default().to_string();
    let path = words.next().unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            Some((k.trim().to_ascii_lowercase(), v.trim().to_string()))
        })
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < len {
        let n = sock.read(&mut tmp).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&tmp[..n]);
    }
    Ok(Some(RecordedRequest {
        method,
        path,
        headers,
        body,
    }))
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

async fn serve(mut sock: TcpStream, shared: Arc<Mutex<Shared>>) -> std::io::Result<()> {
    {
        let mut s = lock(&shared);
        if s.queue.front().and_then(|r| r.hang_up) == Some(HangUp::OnAccept) {
            s.queue.pop_front();
            s.served += 1;
            return Ok(());
        }
    }
    let Some(request) = read_request(&mut sock).await? else {
        return Ok(());
    };
    let response = {
        let mut s = lock(&shared);
        let next = s
            .queue
            .pop_front()
            .or_else(|| s.responder.as_ref().map(|answer| answer(&request)));
        s.requests.push(request);
        s.served += usize::from(next.is_some());
        next
    };
    if response.as_ref().is_some_and(|r| r.hang_up.is_some()) {
        return Ok(());
    }
    let response = response.unwrap_or_else(|| {
        MockResponse::json(
            500,
            &serde_json::json!({"error": {"message": "mock server: no response queued"}}),
        )
    });
    let mut head = format!(
        "HTTP/1.1 {} {}\r\n",
        response.status,
        reason(response.status)
    );
    for (k, v) in &response.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("transfer-encoding: chunked\r\nconnection: close\r\n\r\n");
    sock.write_all(head.as_bytes()).await?;
    sock.flush().await?;
    for part in response.parts {
        match part {
            Part::Bytes(b) if !b.is_empty() => {
                sock.write_all(format!("{:x}\r\n", b.len()).as_bytes())
                    .await?;
                sock.write_all(&b).await?;
                sock.write_all(b"\r\n").await?;
                sock.flush().await?;
            }
            Part::Bytes(_) => {}
            Part::Pause(d) => tokio::time::sleep(d).await,
            Part::Drop => return Ok(()),
        }
    }
    sock.write_all(b"0\r\n\r\n").await?;
    sock.flush().await?;
    sock.shutdown().await
}
