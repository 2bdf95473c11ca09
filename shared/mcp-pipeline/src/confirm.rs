//! Two steps for notify, wake, alerting and delete: a call only prepares and stores a pending
//! action; `confirm_action` executes it after checking, in one conditional write, that the
//! token is this connection's, unused, unexpired and not rejected, that the summary is the exact
//! one shown, and that a fresh preparation still yields the same content.

use serde_json::{Map, Value, json};
use store::{Condition, Item, Key, Put, UpdateAction, Value as SV};

use crate::{Caller, ErrorKind, ToolError};

/// How long a prepared action can be confirmed.
pub(crate) const PENDING_TTL_SECONDS: i64 = 15 * 60;
/// The built-in tool that executes a prepared action.
pub const CONFIRM_ACTION: &str = "confirm_action";
/// The built-in tool that discards a prepared action.
pub const REJECT_ACTION: &str = "reject_action";

/// A stored pending action.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    pub(crate) token: String,
    pub(crate) connection: String,
    pub(crate) tool: String,
    pub(crate) args: Map<String, Value>,
    pub(crate) content_hash: String,
    pub(crate) summary: String,
    pub(crate) status: String,
}

/// What a two-step tool needs to ask for approval in the client, or to finish that approval.
#[derive(Debug, Clone)]
pub(crate) struct Approval {
    /// The tool's own part of a verified `requestState` (the pending action's token).
    pub(crate) state: Option<String>,
    /// The client's `inputResponses`.
    pub(crate) responses: Option<Value>,
    /// Whether the request declared the `elicitation` capability (2026-07-28).
    pub(crate) elicitation: bool,
    /// Digest of the normalized arguments (the seal binds it).
    pub(crate) args_digest: String,
    /// The connection (the seal binds it).
    pub(crate) principal: String,
}

/// The elicitation asking the person to approve the server-written summary.
pub(crate) fn approval_request(summary: &str) -> Value {
    json!({
        "method": "elicitation/create",
        "params": {
            "message": format!("Approve this action? {summary}"),
            "requestedSchema": {
                "type": "object",
                "properties": {"approve": {"type": "boolean", "title": "Approve", "description": summary}},
                "required": ["approve"]
            }
        }
    })
}

/// Whether the person approved (accepted the elicitation with `approve: true`).
pub(crate) fn approved(responses: Option<&Value>) -> bool {
    let Some(answer) = responses.and_then(|r| r.get("approval")) else {
        return false;
    };
    answer.get("action").and_then(Value::as_str) == Some("accept")
        && answer
            .get("content")
            .and_then(|c| c.get("approve"))
            .and_then(Value::as_bool)
            == Some(true)
}

/// How a tool call is being run.
#[derive(Debug, Clone)]
pub(crate) enum Phase {
    /// A call from the client: two-step tools prepare.
    Call,
    /// `confirm_action` re-running a prepared action to execute it.
    Confirm(Box<Pending>),
}

pub(crate) fn pending_key(tenant: &str, token: &str) -> Key {
    Key::new(format!("{tenant}#pending"), token)
}

/// A new confirmation token: `cfm_` and 24 random characters, then `.` and each record
/// handle the prepared call named, so that confirming can read those records in the
/// credential's batch. The handles add nothing secret (the caller sent them) and change
/// nothing they grant: the token is the pending action's key, so a token with other handles
/// is an unknown token.
pub(crate) fn new_token(handles: &[String]) -> String {
    use rand::Rng as _;
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut rng = rand::rng();
    let id: String = (0..24)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect();
    let mut token = format!("cfm_{id}");
    for handle in handles {
        token.push('.');
        token.push_str(handle);
    }
    token
}

/// The record handles a confirmation token names (see [`new_token`]).
pub(crate) fn token_handles(token: &str) -> impl Iterator<Item = &str> {
    token.split('.').skip(1)
}

pub(crate) fn pending_item(p: &Pending, now: i64) -> Item {
    let mut item = Item::new();
    item.insert("connection".into(), SV::s(&p.connection));
    item.insert("tool".into(), SV::s(&p.tool));
    item.insert(
        "args".into(),
        SV::s(Value::Object(p.args.clone()).to_string()),
    );
    item.insert("content_hash".into(), SV::s(&p.content_hash));
    item.insert("summary".into(), SV::s(&p.summary));
    item.insert("status".into(), SV::s(&p.status));
    item.insert(
        store::TTL_ATTRIBUTE.into(),
        SV::n(now + PENDING_TTL_SECONDS),
    );
    item
}

pub(crate) fn read_pending(token: &str, item: &Item) -> Option<Pending> {
    let s = |k: &str| item.get(k).and_then(SV::as_s).map(str::to_owned);
    Some(Pending {
        token: token.to_owned(),
        connection: s("connection")?,
        tool: s("tool")?,
        args: serde_json::from_str(&s("args")?).ok()?,
        content_hash: s("content_hash")?,
        summary: s("summary")?,
        status: s("status")?,
    })
}

/// Stores a new pending action.
pub(crate) fn store_op(tenant: &str, p: &Pending, now: i64) -> Put {
    Put::new(pending_key(tenant, &p.token), pending_item(p, now)).when(Condition::item_not_exists())
}

/// Marks a pending action used, only if it is still pending: the consumption that makes 20
/// racing confirmations execute once.
pub(crate) fn consume_op(tenant: &str, token: &str, to: &str) -> store::Update {
    store::Update::new(
        pending_key(tenant, token),
        vec![UpdateAction::Set("status".into(), SV::s(to))],
    )
    .when(Condition::eq("status", SV::s("pending")))
}

/// The structured result of a preparation.
pub(crate) fn preview_result(mut structured: Value, pending: &Pending, content: &Value) -> Value {
    if let Value::Object(obj) = &mut structured {
        obj.insert(
            "summary".into(),
            json!(format!(
                "Prepared, not done yet: {} Confirm to execute.",
                pending.summary
            )),
        );
        obj.insert("status".into(), json!("PREVIEW"));
        obj.insert("confirm_token".into(), json!(pending.token));
        obj.insert("confirm_summary".into(), json!(pending.summary));
        obj.insert("preview".into(), content.clone());
        obj.insert("expires_in_seconds".into(), json!(PENDING_TTL_SECONDS));
        let confirm = json!({"confirm_token": pending.token, "confirm_summary": pending.summary});
        let reject = json!({"confirm_token": pending.token});
        obj.insert(
            "next_steps".into(),
            json!([
                format!("After the user approves the summary: {CONFIRM_ACTION} {confirm}"),
                format!("If the user declines: {REJECT_ACTION} {reject}"),
            ]),
        );
    }
    structured
}

/// The arguments of `confirm_action` / `reject_action`.
pub(crate) fn parse_args(
    args: &Map<String, Value>,
    with_summary: bool,
) -> Result<(String, Option<String>), ToolError> {
    let allowed: &[&str] = if with_summary {
        &["confirm_token", "confirm_summary"]
    } else {
        &["confirm_token"]
    };
    let unknown: Vec<&String> = args
        .keys()
        .filter(|k| !allowed.contains(&k.as_str()))
        .collect();
    if !unknown.is_empty() {
        let names = unknown
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(ToolError::validation(
            format!("Unknown argument {names}"),
            format!("Use only these arguments: {}", allowed.join(", ")),
        )
        .detail("allowed", allowed.to_vec()));
    }
    let token = args
        .get("confirm_token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            ToolError::validation(
                "`confirm_token` is required",
                "Send the confirm_token of the preview",
            )
        })?;
    let summary = if with_summary {
        Some(
            args.get("confirm_summary")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    ToolError::validation(
                        "`confirm_summary` is required",
                        "Send the confirm_summary of the preview, unchanged",
                    )
                })?,
        )
    } else {
        None
    };
    Ok((token.to_owned(), summary))
}

/// Checks a pending action against the caller and the presented summary.
pub(crate) fn check(
    pending: Option<Pending>,
    caller: &Caller,
    summary: Option<&str>,
) -> Result<Pending, ToolError> {
    let unknown = || {
        ToolError::new(
            ErrorKind::NotFound,
            "This confirm_token is unknown or has expired",
            "Prepare the action again to get a new preview",
        )
    };
    // A foreign connection's token is answered like an unknown one: it names nothing.
    let pending = pending
        .filter(|p| p.connection == caller.connection)
        .ok_or_else(unknown)?;
    match pending.status.as_str() {
        "pending" => {}
        "used" => {
            return Err(ToolError::new(
                ErrorKind::Conflict,
                "This action was already confirmed and executed",
                "Do not confirm it again",
            )
            .detail("status", "used"));
        }
        "rejected" => {
            return Err(ToolError::new(
                ErrorKind::Conflict,
                "This action was rejected",
                "Prepare it again if it is still wanted",
            )
            .detail("status", "rejected"));
        }
        _ => {
            return Err(ToolError::new(
                ErrorKind::Conflict,
                "This preview is no longer valid",
                "Use the newer preview's confirm_token",
            )
            .detail("status", pending.status.clone()));
        }
    }
    if let Some(summary) = summary
        && summary != pending.summary
    {
        return Err(ToolError::new(
                ErrorKind::Validation,
                "The confirm_summary differs from the summary of the preview",
                "Send the confirm_summary exactly as the preview gave it, after the user approved that text",
            )
            .detail("expected_summary", pending.summary.clone()));
    }
    Ok(pending)
}

/// The built-in tools' `tools/list` entries.
pub(crate) fn descriptors() -> Vec<Value> {
    let error_schema = json!({"type": "object"});
    vec![
        json!({
            "name": CONFIRM_ACTION,
            "title": "Confirm a prepared action",
            "description": "Executes an action that a notify, wake, alerting or delete tool prepared, after the user approved its confirm_summary. Send the confirm_token and the confirm_summary exactly as the preview gave them. Executes at most once; if the content changed since the preview, returns a new preview instead. Example: {\"confirm_token\": \"cfm_...\", \"confirm_summary\": \"...\"}",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "confirm_token": {"type": "string", "description": "The preview's confirm_token."},
                    "confirm_summary": {"type": "string", "description": "The preview's confirm_summary, unchanged."}
                },
                "required": ["confirm_token", "confirm_summary"],
                "additionalProperties": false
            },
            "outputSchema": error_schema,
            "annotations": crate::EffectClass::Alerting.annotations("Confirm a prepared action"),
        }),
        json!({
            "name": REJECT_ACTION,
            "title": "Reject a prepared action",
            "description": "Discards an action that a notify, wake, alerting or delete tool prepared, when the user declines it. Nothing is sent. Example: {\"confirm_token\": \"cfm_...\"}",
            "inputSchema": {
                "type": "object",
                "properties": {"confirm_token": {"type": "string", "description": "The preview's confirm_token."}},
                "required": ["confirm_token"],
                "additionalProperties": false
            },
            "outputSchema": error_schema,
            "annotations": crate::EffectClass::SilentWrite.annotations("Reject a prepared action"),
        }),
    ]
}
