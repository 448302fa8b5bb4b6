//! `rein serve`'s routes: each request is checked by the guard, then
//! matched by method and path and served by one handler below. The
//! OpenAPI document (`/openapi.json`) describes the same routes.

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode, header};
use rein_core::{ApprovalDecision, ApprovalScope};
use serde::{Deserialize, Serialize};

use super::auth::Verdict;
use super::control;
use super::http::{Body, Failure, empty, json, read_json};
use super::state::{CreateSession, Server};
use crate::setup::command_context::LiveRun;

/// Answer one request.
pub async fn handle(server: Arc<Server>, request: Request<Incoming>) -> Response<Body> {
    let origin = header_text(&request, header::ORIGIN);
    let mut response = match guarded(&server, request).await {
        Ok(r) => r,
        Err(f) => f.into_response(),
    };
    // Only the pages the user allowed learn they may read the answer.
    if let Some(origin) = origin.filter(|o| server.guard.origin_allowed(o))
        && let Ok(value) = header::HeaderValue::from_str(&origin)
    {
        let headers = response.headers_mut();
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, value);
        headers.insert(header::VARY, header::HeaderValue::from_static("Origin"));
    }
    response
}

fn header_text(request: &Request<Incoming>, name: header::HeaderName) -> Option<String> {
    request
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// The guard, then the route.
async fn guarded(
    server: &Arc<Server>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Failure> {
    let path = request.uri().path().to_string();
    if path == "/health" {
        if request.method() != Method::GET {
            return Ok(not_allowed(request.method(), &path, "GET"));
        }
        return Ok(json(StatusCode::OK, &serde_json::json!({"status": "ok"})));
    }
    let verdict = server.guard.check(
        header_text(&request, header::AUTHORIZATION).as_deref(),
        header_text(&request, header::ORIGIN).as_deref(),
        header_text(&request, header::HOST).as_deref(),
    );
    // A preflight carries no token; an allowed page's gets its answer.
    if request.method() == Method::OPTIONS && !matches!(verdict, Verdict::Forbidden(_)) {
        return Ok(preflight());
    }
    match verdict {
        Verdict::Allowed => {}
        Verdict::Unauthenticated => {
            let mut r = Failure::new(
                StatusCode::UNAUTHORIZED,
                "missing or wrong token: send `Authorization: Bearer TOKEN`",
            )
            .into_response();
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
            return Ok(r);
        }
        Verdict::Forbidden(why) => return Err(Failure::new(StatusCode::FORBIDDEN, why)),
    }
    route(server, request, &path).await
}

fn preflight() -> Response<Body> {
    let mut r = empty(StatusCode::NO_CONTENT);
    let h = r.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        header::HeaderValue::from_static("GET, POST, DELETE"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        header::HeaderValue::from_static("authorization, content-type, last-event-id"),
    );
    r
}

/// Match the method and path.
async fn route(
    server: &Arc<Server>,
    request: Request<Incoming>,
    path: &str,
) -> Result<Response<Body>, Failure> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let method = request.method().clone();
    match (&method, parts.as_slice()) {
        (&Method::GET, ["openapi.json"]) => Ok(json(StatusCode::OK, &super::openapi::document())),
        (&Method::GET, ["sessions"]) => list(server).await,
        (&Method::POST, ["sessions"]) => create(server, request).await,
        (&Method::GET, ["sessions", id]) => get(server, id).await,
        (&Method::DELETE, ["sessions", id]) => {
            server.delete(id).await?;
            Ok(empty(StatusCode::NO_CONTENT))
        }
        (&Method::POST, ["sessions", id, "prompt"]) => prompt(server, id, request).await,
        (&Method::POST, ["sessions", id, "cancel"]) => {
            let info = server.stored(id).await?;
            control::send(server, &info.id, control::Ask::Cancel).await?;
            Ok(empty(StatusCode::ACCEPTED))
        }
        (&Method::POST, ["sessions", id, "mode"]) => mode(server, id, request).await,
        (&Method::POST, ["sessions", id, "approvals", call]) => {
            approve(server, id, call, request).await
        }
        (&Method::GET, ["sessions", id, "events"]) => events(server, id, &request).await,
        (_, parts) => match allowed(parts) {
            Some(allow) => Ok(not_allowed(&method, path, allow)),
            None => Err(Failure::not_found(format!(
                "no route {path} (see /openapi.json)"
            ))),
        },
    }
}

/// The methods a route's path is served with (for a 405's `Allow`).
fn allowed(parts: &[&str]) -> Option<&'static str> {
    Some(match parts {
        ["openapi.json"] => "GET",
        ["sessions"] => "GET, POST",
        ["sessions", _] => "GET, DELETE",
        ["sessions", _, "prompt" | "cancel" | "mode"] => "POST",
        ["sessions", _, "events"] => "GET",
        ["sessions", _, "approvals", _] => "POST",
        _ => return None,
    })
}

/// 405, saying which methods the path takes.
fn not_allowed(method: &Method, path: &str, allow: &'static str) -> Response<Body> {
    let mut r = Failure::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{method} is not served on {path} (only {allow})"),
    )
    .into_response();
    r.headers_mut()
        .insert(header::ALLOW, header::HeaderValue::from_static(allow));
    r
}

/// A session as the routes show it.
#[derive(Serialize)]
struct SessionView {
    #[serde(flatten)]
    info: rein_core::SessionInfo,
    #[serde(flatten)]
    status: Option<super::served::Status>,
}

async fn list(server: &Arc<Server>) -> Result<Response<Body>, Failure> {
    let sessions = server.list(1000).await?;
    Ok(json(
        StatusCode::OK,
        &serde_json::json!({ "sessions": sessions }),
    ))
}

async fn create(
    server: &Arc<Server>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Failure> {
    let body: CreateSession = read_json(request.into_body()).await?;
    let served = server.create(body).await?;
    let info = server.host.store().get_session(&served.id).await?;
    let view = SessionView {
        info,
        status: Some(served.status()),
    };
    Ok(json(StatusCode::CREATED, &view))
}

async fn get(server: &Arc<Server>, id: &str) -> Result<Response<Body>, Failure> {
    let info = server.stored(id).await?;
    let Some(leases) = &server.leases else {
        let status = server.served_now(id).map(|s| s.status());
        return Ok(json(StatusCode::OK, &SessionView { info, status }));
    };
    // Any server answers the same: the lease says who runs it and what
    // its run waits for.
    let running = leases.store.running(&info.id).await?;
    let mode = match leases.store.session_mode(&info.id).await? {
        Some(stored) => Some(stored),
        None => server.served_now(id).map(|s| s.mode().to_string()),
    };
    let waiting: serde_json::Value = match &running {
        Some((_, w)) => serde_json::from_str(w).unwrap_or_default(),
        None => serde_json::json!([]),
    };
    let mut view = serde_json::to_value(&info).unwrap_or_default();
    if let Some(fields) = view.as_object_mut() {
        fields.insert("running".into(), running.is_some().into());
        fields.insert(
            "server".into(),
            running.map(|(owner, _)| owner).unwrap_or_default().into(),
        );
        fields.insert("pending_approvals".into(), waiting);
        if let Some(mode) = mode {
            fields.insert("mode".into(), mode.into());
        }
    }
    Ok(json(StatusCode::OK, &view))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PromptBody {
    text: String,
}

async fn prompt(
    server: &Arc<Server>,
    id: &str,
    request: Request<Incoming>,
) -> Result<Response<Body>, Failure> {
    let body: PromptBody = read_json(request.into_body()).await?;
    if body.text.trim().is_empty() {
        return Err(Failure::bad_request("the prompt is empty"));
    }
    let served = server.session(id).await?;
    // A mode set through another server.
    if let Some(leases) = &server.leases
        && let Some(mode) = leases.store.session_mode(&served.id).await?
        && let Ok(mode) = mode.parse()
    {
        served.set_mode(mode);
    }
    let expanded = served
        .hosted
        .prompts
        .commands
        .expand(&body.text)
        .map_err(|e| Failure::bad_request(e.to_string()))?;
    // The session's run slot first: nothing of a prompt to a busy
    // session runs. Then a command's `!` lines and `@path` files, through
    // the gate, before the run is accepted (a cancel of the session stops
    // them; dropping the slot on a refusal gives it back); a line that
    // needs asking is refused (the client is not listening yet), and so
    // is the prompt.
    let slot = served
        .reserve()
        .map_err(|e| Failure::conflict(e.to_string()))?;
    let live = LiveRun {
        engine: &served.hosted.engine,
        session_id: Some(id),
        mode: served.mode(),
        events: rein_core::no_events(),
        cancel: slot.cancel_token(),
    };
    let prepared = (served.hosted.prompts.prepare(&expanded, &live).await)
        .map_err(|e| Failure::bad_request(e.to_string()))?;
    super::leases::start_run(server, &served, slot, prepared).await?;
    Ok(json(
        StatusCode::ACCEPTED,
        &serde_json::json!({"session_id": id}),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModeBody {
    mode: String,
}

async fn mode(
    server: &Arc<Server>,
    id: &str,
    request: Request<Incoming>,
) -> Result<Response<Body>, Failure> {
    let body: ModeBody = read_json(request.into_body()).await?;
    let mode = server.mode(Some(&body.mode))?.unwrap_or_default();
    let info = server.stored(id).await?;
    match &server.leases {
        // Kept for every server's next prompt, and sent to a running one.
        Some(leases) => {
            leases
                .store
                .set_session_mode(&info.id, &mode.to_string())
                .await?;
            if let Some(served) = server.served_now(&info.id) {
                served.set_mode(mode);
            }
            match control::send(server, &info.id, control::Ask::Mode(mode)).await {
                Ok(()) => {}
                // Nothing runs: the next prompt reads the stored mode.
                Err(f) if f.status == StatusCode::CONFLICT => {}
                Err(f) => return Err(f),
            }
        }
        None => server.session(id).await?.set_mode(mode),
    }
    Ok(json(StatusCode::OK, &serde_json::json!({"mode": mode})))
}

/// `POST /sessions/{id}/approvals/{call_id}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
struct ApprovalBody {
    decision: Decision,
    #[serde(default)]
    scope: Option<ApprovalScope>,
    #[serde(default)]
    feedback: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Decision {
    Approve,
    Deny,
}

async fn approve(
    server: &Arc<Server>,
    id: &str,
    call: &str,
    request: Request<Incoming>,
) -> Result<Response<Body>, Failure> {
    let body: ApprovalBody = read_json(request.into_body()).await?;
    let decision = match body.decision {
        Decision::Approve => ApprovalDecision::Approve {
            scope: body.scope.unwrap_or(ApprovalScope::Once),
        },
        Decision::Deny => ApprovalDecision::Deny {
            feedback: body.feedback,
        },
    };
    let info = server.stored(id).await?;
    let ask = control::Ask::Approval {
        call_id: call.to_string(),
        decision,
    };
    control::send(server, &info.id, ask).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// `GET /sessions/{id}/events`: Server-Sent Events, from the event after
/// `Last-Event-ID` (or `?after=N`) on.
async fn events(
    server: &Arc<Server>,
    id: &str,
    request: &Request<Incoming>,
) -> Result<Response<Body>, Failure> {
    // The position first: a bad one opens no session.
    let from_query = request.uri().query().and_then(|q| {
        q.split('&')
            .find_map(|kv| kv.strip_prefix("after="))
            .map(str::to_string)
    });
    let from_header = header_text(request, header::HeaderName::from_static("last-event-id"));
    let mut after = 0;
    // Both are checked; the header (what a browser sends on reconnect) wins.
    for given in [from_query, from_header].into_iter().flatten() {
        after = given.trim().parse::<u64>().map_err(|_| {
            Failure::bad_request(format!("Last-Event-ID or after `{given}` is not a number"))
        })?;
    }
    // The stored log is read on any server: no engine is opened for it.
    let info = server.stored(id).await?;
    let stream = server.feed.stream(&info.id, after, server.closing.clone());
    let mut response = Response::new(http_body_util::BodyExt::boxed_unsync(stream));
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/event-stream"),
    );
    h.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-cache"),
    );
    // A proxy (nginx) passes each event on as it comes, unbuffered.
    h.insert(
        header::HeaderName::from_static("x-accel-buffering"),
        header::HeaderValue::from_static("no"),
    );
    Ok(response)
}
