//! The OpenAPI 3.1 document of `rein serve`, served at `/openapi.json`:
//! the routes of [`super::routes`], their bodies and answers. A test
//! checks every route it lists answers, and every route answers as listed.

use serde_json::{Value, json};

/// The document.
pub fn document() -> Value {
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "rein serve",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Sessions of the rein agent over HTTP. Every route but /health needs \
                            `Authorization: Bearer TOKEN`. Events are Server-Sent Events in the \
                            `rein exec --json` format, numbered for Last-Event-ID."
        },
        "security": [{"bearer": []}],
        "paths": guarded(paths()),
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": schemas()
        }
    })
}

/// Every operation but `/health` can be refused by the guard: 401
/// without the token, 403 for a web page's request.
fn guarded(mut paths: Value) -> Value {
    for (path, item) in paths.as_object_mut().into_iter().flatten() {
        if path == "/health" {
            continue;
        }
        for (method, op) in item.as_object_mut().into_iter().flatten() {
            if method == "parameters" {
                continue;
            }
            if let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) {
                responses.insert("401".into(), error());
                responses.insert("403".into(), error());
            }
        }
    }
    paths
}

fn paths() -> Value {
    let session_id =
        json!({"name": "id", "in": "path", "required": true, "schema": {"type": "string"}});
    json!({
        "/health": {"get": {
            "operationId": "health", "security": [],
            "summary": "Whether the server answers (no token needed)",
            "responses": {"200": ok("Status")}
        }},
        "/openapi.json": {"get": {
            "operationId": "openapi", "summary": "This document",
            "responses": {"200": {"description": "The document", "content": {"application/json": {}}}}
        }},
        "/sessions": {
            "get": {
                "operationId": "listSessions", "summary": "The sessions of this server's root, newest first",
                "responses": {"200": ok("SessionList"), "401": error()}
            },
            "post": {
                "operationId": "createSession", "summary": "A new session in a workspace under the root",
                "requestBody": {"required": false, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CreateSession"}}}},
                "responses": {"201": ok("Session"), "400": error(), "401": error()}
            }
        },
        "/sessions/{id}": {
            "parameters": [session_id],
            "get": {
                "operationId": "getSession", "summary": "A session, with its run's status when served",
                "responses": {"200": ok("Session"), "404": error()}
            },
            "delete": {
                "operationId": "deleteSession", "summary": "Cancel its run and delete it (its folder stays)",
                "responses": {"204": {"description": "Deleted"}, "404": error()}
            }
        },
        "/sessions/{id}/prompt": {
            "parameters": [session_id],
            "post": {
                "operationId": "prompt", "summary": "Start a run with a prompt; follow it on /events",
                "requestBody": body("Prompt"),
                "responses": {"202": ok("Accepted"), "400": error(), "404": error(),
                              "409": error()}
            }
        },
        "/sessions/{id}/cancel": {
            "parameters": [session_id],
            "post": {
                "operationId": "cancel",
                "summary": "Stop the running prompt, on whichever server runs it",
                "responses": {"202": {"description": "Cancelling"}, "404": error(),
                              "409": error(), "503": error(), "504": error()}
            }
        },
        "/sessions/{id}/mode": {
            "parameters": [session_id],
            "post": {
                "operationId": "setMode", "summary": "The permission mode of the next turn",
                "requestBody": body("Mode"),
                "responses": {"200": ok("Mode"), "400": error(), "404": error(),
                              "503": error(), "504": error()}
            }
        },
        "/sessions/{id}/approvals/{call_id}": {
            "parameters": [session_id,
                {"name": "call_id", "in": "path", "required": true, "schema": {"type": "string"}}],
            "post": {
                "operationId": "answerApproval", "summary": "Answer a call waiting for approval",
                "requestBody": body("Approval"),
                "responses": {"204": {"description": "Answered"}, "400": error(), "404": error(),
                              "409": error(), "503": error(), "504": error()}
            }
        },
        "/sessions/{id}/events": {
            "parameters": [session_id,
                {"name": "Last-Event-ID", "in": "header", "required": false,
                 "schema": {"type": "string", "pattern": "^[0-9]{1,20}$"}},
                {"name": "after", "in": "query", "required": false,
                 "schema": {"type": "integer", "minimum": 0}}],
            "get": {
                "operationId": "events",
                "summary": "The session's events as Server-Sent Events, after Last-Event-ID",
                "responses": {"200": {"description": "An event stream; each `data:` is one event",
                                      "content": {"text/event-stream": {}}},
                              "400": error(), "404": error()}
            }
        }
    })
}

fn schemas() -> Value {
    json!({
        "Error": {"type": "object", "required": ["error"],
                  "properties": {"error": {"type": "string"}}},
        "Status": {"type": "object", "properties": {"status": {"type": "string"}}},
        "Accepted": {"type": "object", "properties": {"session_id": {"type": "string"}}},
        "Budget": {"type": "object", "additionalProperties": false, "properties": {
            "max_turns": {"type": ["integer", "null"], "minimum": 1, "maximum": u32::MAX},
            "max_tokens": {"type": ["integer", "null"], "minimum": 1, "maximum": u64::MAX},
            "max_cost_usd": {"type": ["number", "null"], "exclusiveMinimum": 0},
            "max_wall_time_secs": {"type": ["integer", "null"], "minimum": 1, "maximum": rein_core::MAX_WALL_TIME.as_secs()}}},
        "CreateSession": {"type": "object", "additionalProperties": false, "properties": {
            "workspace": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,100}$",
                          "description": "A folder right under the server's root (made when missing)"},
            "title": {"type": "string"},
            "mode": {"$ref": "#/components/schemas/ModeName"},
            "budget": {"$ref": "#/components/schemas/Budget"}}},
        "ModeName": {"type": "string", "enum": ["default", "accept-edits", "plan", "auto"],
                     "description": "Also `bypass`, on a server started with `--mode bypass` only"},
        "Mode": {"type": "object", "required": ["mode"], "additionalProperties": false,
                 "properties": {"mode": {"$ref": "#/components/schemas/ModeName"}}},
        "Prompt": {"type": "object", "required": ["text"], "additionalProperties": false,
                   "properties": {"text": {"type": "string", "minLength": 1}}},
        "Approval": {"type": "object", "required": ["decision"], "additionalProperties": false,
                     "properties": {
                        "decision": {"type": "string", "enum": ["approve", "deny"]},
                        "scope": {"type": "string", "enum": ["once", "session", "project"]},
                        "feedback": {"type": "string"}}},
        "Session": {"type": "object", "required": ["id", "workspace"], "properties": {
            "id": {"type": "string"}, "workspace": {"type": "string"},
            "title": {"type": "string"}, "model": {"type": "string"},
            "created_at": {"type": "integer"}, "updated_at": {"type": "integer"},
            "message_count": {"type": "integer"},
            "last_stop": {"type": ["string", "null"]},
            "parent_id": {"type": ["string", "null"]},
            "running": {"type": "boolean"},
            "server": {"type": "string", "description": "The server running it (PostgreSQL)"},
            "mode": {"type": "string"},
            "pending_approvals": {"type": "array", "items": {"type": "object"}}}},
        "SessionList": {"type": "object", "properties": {"sessions": {
            "type": "array", "items": {"$ref": "#/components/schemas/Session"}}}}
    })
}

fn ok(schema: &str) -> Value {
    json!({"description": "OK", "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{schema}")}}}})
}

fn error() -> Value {
    json!({"description": "The error, in one line", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}})
}

fn body(schema: &str) -> Value {
    json!({"required": true, "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{schema}")}}}})
}
