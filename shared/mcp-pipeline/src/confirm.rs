//! Two steps for notify, wake, alerting and delete: a call only prepares and stores a pending
//! action; `confirm_action` executes it after checking, in one conditional write, that the
//! token is this connection's, unused, unexpired and not rejected, that the summary is the exact
//! one shown, and that a fresh preparation still yields the same content.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use store::{Condition, Item, Put, UpdateAction, Value as SV};

use crate::{Caller, ErrorKind, TenantId, ToolError};

/// How long a prepared action can be confirmed.
pub(crate) const PENDING_TTL_SECONDS: i64 = 15 * 60;
/// The built-in tool that executes a prepared action.
pub const CONFIRM_ACTION: &str = gatehouse_tool::RESERVED_NAMES[0];
/// The built-in tool that discards a prepared action.
pub const REJECT_ACTION: &str = gatehouse_tool::RESERVED_NAMES[1];

/// A stored pending action.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    pub(crate) token: String,
    pub(crate) connection: String,
    pub(crate) tool: String,
    pub(crate) args: Map<String, Value>,
    pub(crate) content_hash: String,
    /// What the action would do, as the preview showed it (the approval page shows it too).
    pub(crate) content: Value,
    pub(crate) summary: String,
    pub(crate) status: String,
    /// Prepared while its class was approved only in the product: it stays so, whatever the
    /// mode is when someone tries to execute it (modes only make approval stricter).
    pub(crate) in_product: bool,
    /// Prepared while the client was asked to put it to its user (elicitation): only the
    /// user's answer to that request approves it, never `confirm_action` (the token sits in the
    /// request's state, which is signed, not encrypted).
    pub(crate) elicited: bool,
    /// When it was prepared (microseconds since the epoch): an action already executed by
    /// then does not stop it (ADR 42, for pending actions stored before ADR 44).
    pub(crate) prepared_at: i64,
    /// Registered on its action's mark when stored (ADR 44): it runs only while its entry is
    /// there, which a run of the same action clears.
    pub(crate) marked: bool,
    /// The records the action is about (its preview's, as the body named them): every audit
    /// row of a decision on it names them too.
    pub(crate) ids: Vec<String>,
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

/// What the person answered to the approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Accepted with `approve: true`.
    Approved,
    /// Declined, cancelled, or accepted with `approve: false`.
    Declined,
    /// No answer under `approval`, or one that says neither: the client is asked again, since
    /// a missing or garbled answer is not the person saying no (MRTR: a server "SHOULD respond
    /// with a new InputRequiredResult" when required information is missing).
    Unanswered,
}

/// The person's answer in a retry's `inputResponses`.
pub(crate) fn answer(responses: Option<&Value>) -> Answer {
    let Some(answer) = responses.and_then(|r| r.get("approval")) else {
        return Answer::Unanswered;
    };
    match answer.get("action").and_then(Value::as_str) {
        Some("decline" | "cancel") => Answer::Declined,
        Some("accept") => match answer
            .get("content")
            .and_then(|c| c.get("approve"))
            .and_then(Value::as_bool)
        {
            Some(true) => Answer::Approved,
            Some(false) => Answer::Declined,
            None => Answer::Unanswered,
        },
        _ => Answer::Unanswered,
    }
}

/// How a tool call is being run.
#[derive(Debug, Clone)]
pub(crate) enum Phase {
    /// A call from the client: two-step tools prepare.
    Call,
    /// Executing a prepared action, approved as the second field says.
    Confirm(Box<Pending>, Approver),
}

/// A decision taken by the client (`confirm_action`, `reject_action`).
pub(crate) const PATH_CLIENT: &str = "client";
/// A decision the client's user took when asked (elicitation).
pub(crate) const PATH_ELICITATION: &str = "elicitation";
/// A decision a member took on the product's page.
pub(crate) const PATH_PRODUCT_PAGE: &str = "product_page";

/// One event per decision on a pending action (`gatehouse::confirmation`): the path it was
/// decided on, the decision, and the seconds since its preview; the entry points count them
/// (ADR 54). Never who decided or what the action was.
pub(crate) fn log_decision(path: &str, decision: &str, pending: &Pending, now_micros: i64) {
    #[allow(clippy::cast_precision_loss)]
    let wait_seconds = now_micros.saturating_sub(pending.prepared_at).max(0) as f64 / 1e6;
    tracing::info!(
        target: "gatehouse::confirmation",
        path,
        decision,
        wait_seconds,
        "pending action decided"
    );
}

/// Who approved a prepared action, as its audit row records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Approver {
    /// The client called `confirm_action` (a client that honours the descriptor's mark
    /// prompts its user first; one that does not let the model decide).
    Client,
    /// The user accepted the approval request the client showed (elicitation).
    Elicitation,
    /// A member approved it on the product's page.
    Product(String),
}

impl Approver {
    /// How it was decided, for metrics (never the member).
    pub(crate) fn path(&self) -> &'static str {
        match self {
            Approver::Client => PATH_CLIENT,
            Approver::Elicitation => PATH_ELICITATION,
            Approver::Product(_) => PATH_PRODUCT_PAGE,
        }
    }

    /// The audit row's words for it.
    pub(crate) fn label(&self) -> String {
        match self {
            Approver::Client => "client_prompt".into(),
            Approver::Elicitation => "elicitation".into(),
            Approver::Product(member) => format!("product_page:{member}"),
        }
    }
}

/// Reads a pending action (from the credential's batch when it was read there) and checks it
/// against `caller` and the presented summary: the one way every confirmation, rejection and
/// approval finds its action. A token of the wrong shape reads nothing.
pub(crate) async fn load(
    store: &dyn store::Store,
    prefetched: &crate::Prefetched,
    caller: &Caller,
    token: &str,
    summary: Option<&str>,
) -> Result<Pending, ToolError> {
    load_named(store, prefetched, caller, token, summary, false).await
}

/// As [`load`], also by the pending action's id when `by_id` (the product's pages, where a
/// signed-in member with the action's rights decides; an agent must present the token).
pub(crate) async fn load_named(
    store: &dyn store::Store,
    prefetched: &crate::Prefetched,
    caller: &Caller,
    token: &str,
    summary: Option<&str>,
    by_id: bool,
) -> Result<Pending, ToolError> {
    if !(well_formed(token) || (by_id && is_id(token))) {
        return check(None, caller, summary);
    }
    let key = crate::keys::pending(&caller.tenant, token);
    let item = match prefetched.one(&key) {
        Some(item) => item,
        None => store.get(&key).await.map_err(|e| {
            tracing::error!(error = %e, "could not read a pending action");
            ToolError::store_unavailable()
        })?,
    };
    check(item.and_then(|i| read_pending(token, &i)), caller, summary)
}

/// A new confirmation token: `cfm_` and 24 random characters, then `.` and each record
/// handle the prepared call named, so that confirming can read those records in the
/// credential's batch. The handles add nothing secret (the caller sent them) and change
/// nothing they grant: the token is the pending action's key, so a token with other handles
/// is an unknown token.
pub(crate) fn new_token(handles: &[String], randomness: &dyn crate::Randomness) -> String {
    let id = outside::random_text(randomness, 24);
    let mut token = format!("cfm_{id}");
    for handle in handles {
        token.push('.');
        token.push_str(handle);
    }
    token
}

/// Whether `reference` has the shape of a token's id (64 lower-case hex digits).
pub(crate) fn is_id(reference: &str) -> bool {
    reference.len() == 64
        && reference
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The record handles a confirmation token names (see [`new_token`]), at most as many as a
/// call reads ahead.
pub(crate) fn token_handles(token: &str) -> impl Iterator<Item = &str> {
    token.split('.').skip(1).take(crate::MAX_READ_AHEAD)
}

/// Whether `token` has the shape [`new_token`] gives: `cfm_`, 24 letters or digits, and at
/// most a few `.handle` parts of letters, digits and `_`. Anything else names no pending
/// action and is answered as unknown without reading the store, so that a crafted token
/// can neither make a key the store refuses nor a batch too large to read.
pub(crate) fn well_formed(token: &str) -> bool {
    let mut parts = token.split('.');
    let id_ok = parts
        .next()
        .and_then(|id| id.strip_prefix("cfm_"))
        .is_some_and(|id| id.len() == 24 && id.bytes().all(|b| b.is_ascii_alphanumeric()));
    let handles: Vec<&str> = parts.collect();
    id_ok
        && handles.len() <= crate::MAX_READ_AHEAD
        && handles.iter().all(|h| {
            (1..=64).contains(&h.len()) && h.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        })
}

pub(crate) fn pending_item(p: &Pending, now: i64) -> Item {
    let mut item = Item::new();
    item.insert("connection".into(), SV::s(&p.connection));
    item.insert("tool".into(), SV::s(&p.tool));
    item.insert("args".into(), SV::s(crate::object_text(&p.args)));
    item.insert("content_hash".into(), SV::s(&p.content_hash));
    item.insert("content".into(), SV::s(crate::to_text(&p.content)));
    item.insert("summary".into(), SV::s(&p.summary));
    item.insert("status".into(), SV::s(&p.status));
    if p.in_product {
        item.insert("in_product".into(), SV::Bool(true));
    }
    if p.elicited {
        item.insert("elicited".into(), SV::Bool(true));
    }
    if p.marked {
        item.insert("marked".into(), SV::Bool(true));
    }
    item.insert("prepared_at".into(), SV::n(p.prepared_at));
    if !p.ids.is_empty() {
        item.insert("ids".into(), SV::L(p.ids.iter().map(SV::s).collect()));
    }
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
        content: s("content")
            .and_then(|c| serde_json::from_str(&c).ok())
            .unwrap_or(Value::Null),
        summary: s("summary")?,
        status: s("status")?,
        in_product: matches!(item.get("in_product"), Some(SV::Bool(true))),
        elicited: matches!(item.get("elicited"), Some(SV::Bool(true))),
        prepared_at: prepared_at(item),
        marked: matches!(item.get("marked"), Some(SV::Bool(true))),
        // Stored before the ids were kept: none.
        ids: match item.get("ids") {
            Some(SV::L(ids)) => ids.iter().filter_map(SV::as_s).map(str::to_owned).collect(),
            _ => Vec::new(),
        },
    })
}

/// When a stored pending action was prepared; one stored before the time was kept is dated
/// from its expiry (prepared a lifetime before it).
fn prepared_at(item: &Item) -> i64 {
    let number = |name: &str| {
        item.get(name)
            .and_then(SV::as_n)
            .and_then(|n| n.to_string().parse::<i64>().ok())
    };
    number("prepared_at").unwrap_or_else(|| {
        number(store::TTL_ATTRIBUTE).map_or(0, |expiry| (expiry - PENDING_TTL_SECONDS) * 1_000_000)
    })
}

/// Stores a new pending action.
pub(crate) fn store_op(tenant: &TenantId, p: &Pending, now: i64) -> Put {
    Put::new(crate::keys::pending(tenant, &p.token), pending_item(p, now))
        .when(Condition::item_not_exists())
}

/// Marks a pending action used, only if it is still pending: the consumption that makes 20
/// racing confirmations execute once.
pub(crate) fn consume_op(tenant: &TenantId, token: &str, to: &str) -> store::Update {
    store::Update::new(
        crate::keys::pending(tenant, token),
        vec![UpdateAction::Set("status".into(), SV::s(to))],
    )
    .when(Condition::eq("status", SV::s("pending")))
}

/// The writes of a decision on `pending` that does not run it (`rejected`, `superseded`): its
/// consumption, naming the records the action was about, as its preview's audit row did.
pub(crate) fn decided(caller: &Caller, pending: &Pending, to: &str) -> crate::WriteSet {
    crate::WriteSet {
        ops: vec![consumption(caller, &pending.token, to)],
        ids: pending.ids.clone(),
        ..crate::WriteSet::default()
    }
}

/// [`consume_op`] as a planned write whose failure is explained by what decided the pending
/// action first (executed, rejected, replaced), read from the item as it is now and worded by
/// [`check`] for this caller: of two decisions at once, the second is told the first.
pub(crate) fn consumption(caller: &Caller, token: &str, to: &str) -> crate::PlannedWrite {
    let op = consume_op(&caller.tenant, token, to).return_old_on_failure();
    let (caller, token) = (caller.clone(), token.to_owned());
    crate::PlannedWrite {
        op: op.into(),
        on_conflict: Some(Box::new(move |now: Option<&Item>| {
            let decided = now.and_then(|item| read_pending(&token, item));
            // `check` refuses every state but pending, in which the condition cannot fail.
            check(decided, &caller, None).err().unwrap_or_else(|| {
                no_longer_pending("Prepare the action again if it is still wanted")
            })
        })),
    }
}

/// A pending action that was decided or replaced meanwhile, when what decided it is unknown.
pub(crate) fn no_longer_pending(fix: &str) -> ToolError {
    ToolError::new(ErrorKind::Conflict, "This action is no longer pending", fix)
        .handover("It was decided or replaced meanwhile: tell the user, and prepare it again only if they still want it")
}

/// What a refused consumption answers: a kill-switch refusal, or the decision that came first
/// (as [`consumption`] words it, naming the status), as they are; anything else (a concurrent
/// transaction, an outage) as no longer pending, with `fix`.
pub(crate) fn consumption_refused(error: ToolError, fix: &str) -> ToolError {
    let decided = error.kind == ErrorKind::Conflict && error.details.contains_key("status");
    if error.kind == ErrorKind::Rejected || decided {
        error
    } else {
        no_longer_pending(fix)
    }
}

/// The key of an action's mark: the tool and what its preview showed, so however its
/// arguments were spelled (a technician's bare id or handle, a trailing blank).
fn mark_key(tenant: &TenantId, p: &Pending) -> store::Key {
    let action = crate::digest(&json!({"tool": p.tool, "content": p.content_hash}));
    crate::keys::executed(tenant, &action)
}

/// The attribute a preview registers on its action's mark: its id (its token's digest),
/// shortened. A pending action loaded by the approval page carries its id where its token
/// would be; both give the same attribute.
fn registration(p: &Pending) -> String {
    let id = crate::keys::pending_id(&p.token);
    format!("prepared_{}", id.get(..32).unwrap_or(&id))
}

/// Registers a preview on its action's mark, in the transaction that stores it (ADR 44). With
/// `first_since_run`, only while the action has not run since the mark was made: a failure
/// means it ran meanwhile, and the preview is registered again without the condition and says
/// so ([`ran_meanwhile_error`]).
pub(crate) fn register_op(
    tenant: &TenantId,
    p: &Pending,
    now: i64,
    first_since_run: bool,
) -> store::Update {
    let update = store::Update::new(
        mark_key(tenant, p),
        vec![
            UpdateAction::Set(registration(p), SV::n(p.prepared_at)),
            UpdateAction::Set(
                store::TTL_ATTRIBUTE.into(),
                SV::n(now + PENDING_TTL_SECONDS + 60),
            ),
        ],
    );
    if first_since_run {
        update
            .when(Condition::NotExists("executed_at".into()))
            .return_old_on_failure()
    } else {
        update
    }
}

/// The action of a preview ran since its mark was made: when (microseconds since the epoch),
/// if the store returned the mark.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RanMeanwhile(Option<i64>);

/// The refusal a conditional [`register_op`] explains itself with: the action ran since its
/// mark was made (never shown: the preview is stored again, and says so).
pub(crate) fn ran_meanwhile_error(current: Option<&Item>) -> ToolError {
    let executed_at = current
        .and_then(|mark| mark.get("executed_at"))
        .and_then(SV::as_n)
        .and_then(|n| n.to_string().parse::<i64>().ok());
    let error = ToolError::new(
        ErrorKind::Conflict,
        "The same action ran since it was last prepared",
        "Prepare it again",
    )
    .detail("status", "ran_meanwhile");
    match executed_at {
        Some(at) => error.detail("executed_at", at),
        None => error,
    }
}

/// What a refused commit says of [`ran_meanwhile_error`], if it is that refusal.
pub(crate) fn ran_meanwhile(error: &ToolError) -> Option<RanMeanwhile> {
    (error.details.get("status").and_then(Value::as_str) == Some("ran_meanwhile"))
        .then(|| RanMeanwhile(error.details.get("executed_at").and_then(Value::as_i64)))
}

/// Tells the person, in a preview, that the same action already ran a little earlier: approving
/// does it again.
pub(crate) fn warn_ran_before(
    preview: &mut Value,
    tool: &str,
    ran: &RanMeanwhile,
    now_micros: i64,
) {
    let ago = match ran.0.map(|at| ((now_micros - at) / 1_000_000).max(0)) {
        None => "within the last 15 minutes".to_owned(),
        Some(s) if s < 120 => format!("{s} seconds ago"),
        Some(s) => format!("{} minutes ago", s / 60),
    };
    let warning = format!(
        "The same {tool} was confirmed and executed {ago}; confirming this preview does it a second time"
    );
    match preview.get_mut("warnings").and_then(Value::as_array_mut) {
        Some(list) => list.push(json!(warning)),
        None => preview["warnings"] = json!([warning]),
    }
}

/// The mark an executed action leaves: the same action runs once for all the previews
/// registered before it ran, whichever of them is confirmed and by whom. The put replaces the
/// mark, dropping every registration; a preview registered after it is a new decision, and runs
/// (ADR 44). A pending action stored before registrations existed runs if the action has not
/// run since it was prepared (ADR 42).
pub(crate) fn executed_op(tenant: &TenantId, p: &Pending, now_micros: i64) -> Put {
    let mut item = Item::new();
    item.insert("tool".into(), SV::s(&p.tool));
    item.insert("connection".into(), SV::s(&p.connection));
    item.insert("executed_at".into(), SV::n(now_micros));
    let expiry = now_micros.div_euclid(1_000_000) + PENDING_TTL_SECONDS;
    item.insert(store::TTL_ATTRIBUTE.into(), SV::n(expiry));
    let condition = if p.marked {
        Condition::Exists(registration(p))
    } else {
        let ran_before =
            Condition::Cmp("executed_at".into(), store::CmpOp::Lt, SV::n(p.prepared_at));
        // A mark that only previews registered on has not run.
        Condition::Or(
            Box::new(Condition::NotExists("executed_at".into())),
            Box::new(ran_before),
        )
    };
    Put::new(mark_key(tenant, p), item).when(condition)
}

/// The refusal of a second execution of the same action (see [`executed_op`]).
pub(crate) fn executed_already(tool: &str) -> ToolError {
    ToolError::new(
        ErrorKind::Conflict,
        format!("The same {tool} was confirmed and executed after this preview was prepared; it was not done again"),
        "Do not confirm it again",
    )
    .handover("It is done already (another preview of the same action ran): tell the user. If they want it done a second time, prepare it again and confirm the new preview")
    .detail("status", "executed_already")
}

/// The structured result of a preparation. What the tool would return once it executed goes
/// under `if_confirmed`, so that nothing in a preview reads as done (a cancel preview's booking
/// is still a draft; its `notified` names who *would* be told).
pub(crate) fn preview_result(structured: Value, pending: &Pending, content: &Value) -> Value {
    let Value::Object(mut tool_output) = structured else {
        return structured;
    };
    let warnings = tool_output.remove("warnings").unwrap_or_else(|| json!([]));
    tool_output.remove("summary");
    tool_output.remove("next_steps");
    let confirm = json!({"confirm_token": pending.token, "confirm_summary": pending.summary});
    let reject = json!({"confirm_token": pending.token});
    let mut preview = json!({
        "summary": format!("Prepared, not done yet: {} Confirm to execute.", pending.summary),
        "status": "PREVIEW",
        "confirm_token": pending.token,
        "confirm_summary": pending.summary,
        "preview": content,
        "expires_in_seconds": PENDING_TTL_SECONDS,
        "warnings": warnings,
        "next_steps": [
            format!("After the user approves the summary: {CONFIRM_ACTION} {confirm}"),
            format!("If the user declines: {REJECT_ACTION} {reject}"),
        ],
    });
    if !tool_output.is_empty() {
        preview["if_confirmed"] = Value::Object(tool_output);
    }
    preview
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
        .handover("The approval this names is unknown or expired, so nothing was done; ask the user whether the action is still wanted, and prepare it again if so")
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
            .handover("It is done already: tell the user it was executed; there is nothing left to confirm or reject")
            .detail("status", "used"));
        }
        "rejected" => {
            return Err(ToolError::new(
                ErrorKind::Conflict,
                "This action was rejected",
                "Prepare it again if it is still wanted",
            )
            .handover("The user declined this action, so it was not done; prepare it again only if they ask for it")
            .detail("status", "rejected"));
        }
        _ => {
            return Err(ToolError::new(
                ErrorKind::Conflict,
                "This preview is no longer valid",
                "Use the newer preview's confirm_token",
            )
            .handover("A newer preview replaced this one: show the user that preview's summary and confirm with its confirm_token if they approve")
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
            // Not a next call: the summary is what the user approves, so it comes from them.
            .handover("Show the user the preview's summary (expected_summary); confirm with that exact text only after they approve it")
            .detail("expected_summary", pending.summary.clone()));
    }
    Ok(pending)
}

/// The confirmation tools, registered by the server when it has two-step tools and a store.
pub(crate) fn tools() -> [crate::ToolSpec; 2] {
    use crate::Builtin;
    [
        crate::ToolSpec::builtin(ConfirmAction, Builtin::Confirm),
        crate::ToolSpec::builtin(RejectAction, Builtin::Reject),
    ]
}

/// Turns a preview into one a person approves in the product: the summary says so, the
/// handover gives the link, and the next step is the rejection.
pub(crate) fn approve_in_product(preview: &mut Value, pending: &Pending, url: &str) {
    let Value::Object(obj) = preview else { return };
    obj.insert(
        "summary".into(),
        json!(format!(
            "Prepared, not done yet: {} A person with the right must approve it in the product.",
            pending.summary
        )),
    );
    obj.insert("approval_url".into(), json!(url));
    obj.insert(
        "handover".into(),
        json!(format!(
            "Give the user this link to approve it in the product: {url}"
        )),
    );
    obj.insert(
        "next_steps".into(),
        json!([format!(
            "If the user declines: {REJECT_ACTION} {}",
            json!({"confirm_token": pending.token})
        )]),
    );
}

/// The confirm_token and confirm_summary of a preview, exactly as the preview gave them.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub(crate) struct ConfirmInput {
    /// The preview's confirm_token.
    #[schemars(length(max = 300))]
    pub(crate) confirm_token: String,
    /// The preview's confirm_summary, unchanged.
    pub(crate) confirm_summary: String,
}

/// The confirm_token of the preview the user declined.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub(crate) struct RejectInput {
    /// The preview's confirm_token.
    #[schemars(length(max = 300))]
    pub(crate) confirm_token: String,
}

/// What a confirmation or rejection answers besides the executed tool's own fields.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub(crate) struct Decided {
    /// The token of the action decided.
    pub(crate) confirm_token: String,
    /// `DONE`, `REJECTED`, or `PREVIEW` when the content changed and a new preview was made.
    pub(crate) status: String,
}

/// The tool that executes a prepared action. An ordinary tool to the pipeline (listed,
/// validated, limited, braked and audited like any other), whose step the pipeline runs
/// itself: it re-runs the prepared tool (`crate::call::confirmation`).
pub(crate) struct ConfirmAction;

impl crate::Tool for ConfirmAction {
    type Input = ConfirmInput;
    type Output = Decided;
    const NAME: &'static str = CONFIRM_ACTION;
    const TITLE: &'static str = "Confirm a prepared action";
    const DESCRIPTION: &'static str = "Executes an action that a notify, wake, alerting or delete tool prepared, after the user approved its confirm_summary. Send the confirm_token and the confirm_summary exactly as the preview gave them. Executes at most once; if the content changed since the preview, returns a new preview instead. Example: {\"confirm_token\": \"cfm_...\", \"confirm_summary\": \"...\"}";
    const CORE_DESCRIPTION: Option<&'static str> = Some(
        "Executes a prepared action after the user approved it; send confirm_token and confirm_summary exactly as the preview gave them. Example: {\"confirm_token\": \"cfm_...\", \"confirm_summary\": \"...\"}",
    );
    type Effect = crate::effects::SilentWrite;

    async fn call(
        &self,
        _ctx: crate::ToolContext<Self::Effect>,
        _input: ConfirmInput,
    ) -> Result<crate::Success<Decided>, crate::CallError> {
        Err(builtin_body())
    }
}

/// The tool that discards a prepared action.
pub(crate) struct RejectAction;

impl crate::Tool for RejectAction {
    type Input = RejectInput;
    type Output = Decided;
    const NAME: &'static str = REJECT_ACTION;
    const TITLE: &'static str = "Reject a prepared action";
    const DESCRIPTION: &'static str = "Discards an action that a notify, wake, alerting or delete tool prepared, when the user declines it. Nothing is sent. Example: {\"confirm_token\": \"cfm_...\"}";
    type Effect = crate::effects::SilentWrite;

    async fn call(
        &self,
        _ctx: crate::ToolContext<Self::Effect>,
        _input: RejectInput,
    ) -> Result<crate::Success<Decided>, crate::CallError> {
        Err(builtin_body())
    }
}

/// Never reached: the pipeline runs the confirmation tools' step itself.
fn builtin_body() -> crate::CallError {
    crate::CallError::Tool(ToolError::new(
        ErrorKind::Internal,
        "This step is run by the pipeline",
        "Call it through the server",
    ))
}
