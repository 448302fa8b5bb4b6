//! Elicitation: a server asking the user for input in the middle of a call
//! (`elicitation/create`, form mode). Steps:
//!
//! 1. rein announces form elicitation in its handshake.
//! 2. A front end that can ask a person (an editor over ACP that offers
//!    forms) installs an [`Asker`] on the hub: a form request goes to it,
//!    bounded by [`ASK_WAIT`] (no answer in time cancels).
//! 3. Otherwise, the request is answered by the server's configured policy
//!    (`elicitation` in `[mcp_servers.NAME]`): `decline` (the default)
//!    declines; `accept-defaults` accepts with every field's default from
//!    the requested schema, and declines when a required field has none
//!    (a guess would be worse than no answer).
//! 4. URL-mode requests (a page to open) are declined: rein opens nothing
//!    a server names.
//!
//! Without a person the answer is immediate: an elicitation never hangs.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};

/// `elicitation = "…"` of a server: how rein answers its questions when no
/// person is asked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ElicitationPolicy {
    /// Decline every request (the server goes on without the input).
    #[default]
    Decline,
    /// Accept with the schema's defaults; decline when a required field
    /// has no default.
    AcceptDefaults,
}

/// How long a person may take to answer a form.
pub const ASK_WAIT: Duration = Duration::from_secs(300);

/// A person's answer to a form.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Accept(Map<String, Value>),
    Decline,
    Cancel,
}

/// A front end's way to ask a person: `server` asks `message`, with the
/// form `schema` (the MCP requested schema, as JSON). `None` when no one
/// can be asked after all (the server's policy answers).
#[async_trait::async_trait]
pub trait Asker: Send + Sync {
    async fn ask(&self, server: &str, message: &str, schema: &Value) -> Option<Answer>;
}

/// Where a hub's [`Asker`] sits once the front end installs one.
#[derive(Clone, Default)]
pub struct AskerSlot(Arc<Mutex<Option<Arc<dyn Asker>>>>);

impl AskerSlot {
    pub fn set(&self, asker: Arc<dyn Asker>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(asker);
    }

    fn get(&self) -> Option<Arc<dyn Asker>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl std::fmt::Debug for AskerSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AskerSlot")
    }
}

/// The answer to `request` from server `server`: the person's, when an
/// asker is installed and answers in time, else `policy`'s.
pub(crate) async fn respond(
    slot: &AskerSlot,
    server: &str,
    policy: ElicitationPolicy,
    request: &ElicitRequestParams,
) -> ElicitResult {
    if let (
        Some(asker),
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        },
    ) = (slot.get(), request)
    {
        let schema = serde_json::to_value(requested_schema).unwrap_or(Value::Null);
        match tokio::time::timeout(ASK_WAIT, asker.ask(server, message, &schema)).await {
            Ok(Some(Answer::Accept(content))) => {
                return ElicitResult::new(ElicitationAction::Accept)
                    .with_content(Value::Object(content));
            }
            Ok(Some(Answer::Decline)) => return decline(),
            Ok(Some(Answer::Cancel)) | Err(_) => {
                return ElicitResult::new(ElicitationAction::Cancel);
            }
            Ok(None) => {}
        }
    }
    answer(policy, request)
}

/// The answer `policy` gives to `request`.
pub(crate) fn answer(policy: ElicitationPolicy, request: &ElicitRequestParams) -> ElicitResult {
    let ElicitRequestParams::FormElicitationParams {
        requested_schema, ..
    } = request
    else {
        return decline();
    };
    match policy {
        ElicitationPolicy::Decline => decline(),
        ElicitationPolicy::AcceptDefaults => {
            let schema = serde_json::to_value(requested_schema).unwrap_or(Value::Null);
            match defaults(&schema) {
                Some(content) => ElicitResult::new(ElicitationAction::Accept)
                    .with_content(Value::Object(content)),
                None => decline(),
            }
        }
    }
}

fn decline() -> ElicitResult {
    ElicitResult::new(ElicitationAction::Decline)
}

/// Every property's `default` of an object schema; `None` when a required
/// property has none.
pub(crate) fn defaults(schema: &Value) -> Option<Map<String, Value>> {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let content: Map<String, Value> = properties
        .iter()
        .filter_map(|(name, property)| Some((name.clone(), property.get("default")?.clone())))
        .collect();
    let required = schema.get("required").and_then(Value::as_array);
    let complete = required
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .all(|name| content.contains_key(name));
    complete.then_some(content)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form(schema: Value) -> ElicitRequestParams {
        serde_json::from_value(json!({
            "mode": "form", "message": "Who are you?", "requestedSchema": schema,
        }))
        .unwrap()
    }

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
            "verified": {"type": "boolean", "default": true},
            "nickname": {"type": "string"},
        }})
    }

    #[test]
    fn accept_defaults_fills_every_default_and_leaves_the_rest_out() {
        let result = answer(ElicitationPolicy::AcceptDefaults, &form(schema()));
        assert_eq!(result.action, ElicitationAction::Accept);
        assert_eq!(
            result.content.unwrap(),
            json!({"name": "John Doe", "age": 30, "score": 95.5,
                   "status": "active", "verified": true})
        );
    }

    #[test]
    fn a_required_field_without_a_default_is_declined_not_guessed() {
        let mut s = schema();
        s["required"] = json!(["nickname"]);
        let result = answer(ElicitationPolicy::AcceptDefaults, &form(s));
        assert_eq!(result.action, ElicitationAction::Decline);
        assert!(result.content.is_none());
    }

    #[test]
    fn decline_is_the_default_policy_and_url_requests_are_declined() {
        let result = answer(ElicitationPolicy::default(), &form(schema()));
        assert_eq!(result.action, ElicitationAction::Decline);
        let url: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "url", "message": "Open this", "url": "https://x.example/", "elicitationId": "1",
        }))
        .unwrap();
        let result = answer(ElicitationPolicy::AcceptDefaults, &url);
        assert_eq!(result.action, ElicitationAction::Decline);
    }
}
