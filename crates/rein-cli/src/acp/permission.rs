//! Approvals over ACP: the gate's [`ApprovalRequest`] becomes a
//! `session/request_permission` with rein's four answers (once, this
//! session, always in this project, deny), and the option the user picks
//! becomes the gate's [`ApprovalDecision`].

use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields,
};
use rein_core::{ApprovalDecision, ApprovalRequest, ApprovalScope};

/// One answer rein offers; its wire id is [`Answer::id`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Once,
    Session,
    Project,
    Deny,
}

impl Answer {
    const ALL: [Answer; 4] = [Answer::Once, Answer::Session, Answer::Project, Answer::Deny];

    /// The option id sent to the client and read back from its answer.
    pub fn id(self) -> &'static str {
        match self {
            Answer::Once => "allow_once",
            Answer::Session => "allow_session",
            Answer::Project => "allow_project",
            Answer::Deny => "deny",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Answer::Once => "Allow once",
            Answer::Session => "Allow for this session",
            Answer::Project => "Always allow in this project",
            Answer::Deny => "Deny",
        }
    }

    fn kind(self) -> PermissionOptionKind {
        match self {
            Answer::Once => PermissionOptionKind::AllowOnce,
            Answer::Session | Answer::Project => PermissionOptionKind::AllowAlways,
            Answer::Deny => PermissionOptionKind::RejectOnce,
        }
    }

    fn decision(self) -> ApprovalDecision {
        let scope = match self {
            Answer::Once => ApprovalScope::Once,
            Answer::Session => ApprovalScope::Session,
            Answer::Project => ApprovalScope::Project,
            Answer::Deny => return ApprovalDecision::deny(),
        };
        ApprovalDecision::Approve { scope }
    }
}

/// The options offered for `request`. "This session" and "this project"
/// need a rule to remember: a call with no suggested rule is offered once
/// or deny only.
pub fn options(request: &ApprovalRequest) -> Vec<PermissionOption> {
    let lasting = !request.suggested_rules.is_empty();
    Answer::ALL
        .into_iter()
        .filter(|a| lasting || matches!(a, Answer::Once | Answer::Deny))
        .map(|a| PermissionOption::new(a.id(), a.label(), a.kind()))
        .collect()
}

/// The tool call the request is about, as the client shows it beside the
/// options: its title says what it does and why it asks.
pub fn tool_call(request: &ApprovalRequest) -> ToolCallUpdate {
    let title = format!("{} — {}", one_line(&request.summary), request.why);
    ToolCallUpdate::new(
        request.call_id.clone(),
        ToolCallUpdateFields::new()
            .title(title)
            .status(ToolCallStatus::Pending),
    )
}

/// What the gate is told for the client's answer. Anything but one of
/// the options offered (a cancelled prompt, an unknown id, an option that
/// was not offered for this call) denies.
pub fn decision(request: &ApprovalRequest, outcome: &RequestPermissionOutcome) -> ApprovalDecision {
    let RequestPermissionOutcome::Selected(selected) = outcome else {
        return ApprovalDecision::deny();
    };
    let offered = options(request);
    let picked = Answer::ALL.into_iter().find(|a| {
        *selected.option_id.0 == *a.id() && offered.iter().any(|o| *o.option_id.0 == *a.id())
    });
    picked.map_or_else(ApprovalDecision::deny, Answer::decision)
}

/// The first line of `text`, for a title.
fn one_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::SelectedPermissionOutcome;
    use rein_core::{PermissionMode, Risk};

    fn request(rules: &[&str]) -> ApprovalRequest {
        ApprovalRequest {
            call_id: "c1".into(),
            tool: "bash".into(),
            summary: "cargo test\n(second line)".into(),
            risk: Risk::High,
            why: "commands need approval".into(),
            suggested_rules: rules.iter().map(|r| r.parse().unwrap()).collect(),
            suggested_mode: None,
            mode: PermissionMode::Default,
        }
    }

    fn pick(id: &str) -> RequestPermissionOutcome {
        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id.to_string()))
    }

    #[test]
    fn each_offered_option_maps_to_its_scope() {
        let r = request(&["Bash(cargo test:*)"]);
        let ids: Vec<String> = options(&r)
            .iter()
            .map(|o| o.option_id.0.to_string())
            .collect();
        assert_eq!(
            ids,
            ["allow_once", "allow_session", "allow_project", "deny"]
        );
        assert_eq!(decision(&r, &pick("allow_once")), ApprovalDecision::once());
        assert_eq!(
            decision(&r, &pick("allow_session")),
            ApprovalDecision::Approve {
                scope: ApprovalScope::Session
            }
        );
        assert_eq!(
            decision(&r, &pick("allow_project")),
            ApprovalDecision::Approve {
                scope: ApprovalScope::Project
            }
        );
        assert_eq!(decision(&r, &pick("deny")), ApprovalDecision::deny());
    }

    #[test]
    fn lasting_options_are_not_offered_or_accepted_without_a_rule() {
        let r = request(&[]);
        let ids: Vec<String> = options(&r)
            .iter()
            .map(|o| o.option_id.0.to_string())
            .collect();
        assert_eq!(ids, ["allow_once", "deny"]);
        // A client answering with an option it was not offered is refused.
        assert_eq!(
            decision(&r, &pick("allow_project")),
            ApprovalDecision::deny()
        );
    }

    #[test]
    fn cancelled_or_unknown_answers_deny() {
        let r = request(&["Bash(ls)"]);
        assert_eq!(
            decision(&r, &RequestPermissionOutcome::Cancelled),
            ApprovalDecision::deny()
        );
        assert_eq!(
            decision(&r, &pick("allow_everything")),
            ApprovalDecision::deny()
        );
    }

    #[test]
    fn the_title_is_the_summary_first_line_and_why() {
        let t = tool_call(&request(&[]));
        assert_eq!(
            t.fields.title.as_deref(),
            Some("cargo test — commands need approval")
        );
    }
}
