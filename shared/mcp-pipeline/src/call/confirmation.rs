//! The confirmation tools' step, and the approvals port the product's pages use.
//!
//! `confirm_action` and `reject_action` pass every gate like any tool; their step then finds
//! the pending action ([`confirm::load`]) and either turns it down (audited, in one
//! transaction with the switch checks) or runs the prepared tool again, which executes it if
//! what it would do is unchanged. The product's approval page does the same through
//! [`Approvals`], without knowing the MCP server.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::finish::Audited;
use super::{Call, CallPlan, Exit, Stage};
use crate::TenantId;
use crate::confirm::{self, Approver, ConfirmInput, Phase, RejectInput};
use crate::gates::Committed;
use crate::server::{Interrupt, Server};
use crate::{Builtin, Parsed};
use crate::{Caller, ErrorKind, Request, ToolError, ToolResult};

impl Call<'_> {
    /// The step of `confirm_action` or `reject_action`, after every gate.
    pub(crate) async fn run_builtin(&mut self, step: Builtin, input: Parsed) -> Stage<ToolResult> {
        let (token, summary) = match step {
            Builtin::Confirm => input
                .downcast::<ConfirmInput>()
                .map(|i| (i.confirm_token, Some(i.confirm_summary))),
            Builtin::Reject => input
                .downcast::<RejectInput>()
                .map(|i| (i.confirm_token, None)),
        }
        .map_err(|_| self.internal_error("confirmation input of another type"))?;
        let (g, caller) = self.pending_scope()?;
        let loaded = confirm::load(
            g.store.as_ref(),
            &self.req.prefetched,
            caller,
            &token,
            summary.as_deref(),
        )
        .await;
        let pending = match (loaded, step) {
            (Ok(pending), _) => pending,
            // A confirmation is admitted with the action it executes; one that finds none
            // still spends the write bucket (and is refused when it is full).
            (Err(error), Builtin::Confirm) => {
                self.admit_beside(async {}).await?;
                return Err(error.into());
            }
            (Err(error), Builtin::Reject) => return Err(error.into()),
        };
        match step {
            Builtin::Reject => self.reject(g, caller, pending, confirm::PATH_CLIENT).await,
            Builtin::Confirm => self.confirm(pending, Approver::Client).await,
        }
    }

    /// Turns a pending action down (on `path`), audited, in one transaction with the switch
    /// checks.
    async fn reject(
        &mut self,
        g: &crate::gates::Gates,
        caller: &Caller,
        pending: confirm::Pending,
        path: &'static str,
    ) -> Stage<ToolResult> {
        let op = confirm::decided(caller, &pending, "rejected");
        match self
            .commit(g, op, None, Audited::outcome("rejected").of(&pending.tool))
            .await
        {
            Committed::Refused(e) => {
                Err(confirm::consumption_refused(e, "Nothing to reject").into())
            }
            _ => {
                confirm::log_decision(path, "rejected", &pending, self.now_micros);
                Ok(ToolResult::success(json!({
                    "summary": "Rejected; nothing was done.",
                    "confirm_token": pending.token,
                    "status": "REJECTED",
                    "warnings": [],
                    "next_steps": [],
                })))
            }
        }
    }

    /// Runs the prepared tool again with its stored arguments (live rights, guards and a
    /// fresh preparation all apply again) to execute it.
    pub(crate) async fn confirm(
        &mut self,
        pending: confirm::Pending,
        approver: Approver,
    ) -> Stage<ToolResult> {
        let Some(spec) = self.server.registry().get(&pending.tool).cloned() else {
            return Err(ToolError::new(
                ErrorKind::NotFound,
                "The prepared tool no longer exists",
                "Prepare the action again",
            )
            .handover("The server no longer offers the prepared action, so nothing was done; tell the user")
            .into());
        };
        if pending.elicited && matches!(approver, Approver::Client) {
            return Err(answered_in_the_client(&pending).into());
        }
        if let Some(refusal) = self.approval_in_product_needed(&pending, &approver) {
            return Err(refusal.into());
        }
        let rerun = rerun_request(self.req, &pending);
        let plan = Arc::new(CallPlan::new(
            spec,
            pending.args.clone(),
            &self.server.config().read_ahead,
        ));
        let mut inner = Call::new(
            self.server,
            &rerun,
            plan,
            Phase::Confirm(Box::new(pending), approver),
        );
        Arc::make_mut(&mut inner.exec)
            .request_id
            .clone_from(&self.exec.request_id);
        inner.notifications = self.notifications.clone();
        let (ended, _) = Box::pin(inner.run()).await;
        ended.map_err(Exit::Interrupt)
    }
}

impl Call<'_> {
    /// The refusal of an approval that did not come from the product, for an action only a
    /// person in the product may approve: the tool moves money or binds the company, or its
    /// class is approved in the product by the tenant or the connection, now or when it was
    /// prepared (ADR 15). Nothing is consumed: the link still works.
    pub(crate) fn approval_in_product_needed(
        &self,
        pending: &confirm::Pending,
        approver: &Approver,
    ) -> Option<ToolError> {
        if matches!(approver, Approver::Product(_)) {
            return None;
        }
        let spec = self.server.registry().get(&pending.tool)?;
        let by_mode = self
            .caller()
            .is_some_and(|c| c.product_approval.requires(spec.effect()));
        let url = self.server.approval_url(&pending.token);
        let why = if spec.approves_in_product() {
            "This action moves money or binds the company, so it is approved only in the product, by a person with the right"
        } else if by_mode || pending.in_product {
            "This workspace approves this kind of action only in the product, by a person with the right; the client cannot confirm it"
        } else {
            return None;
        };
        Some(
            ToolError::new(
                ErrorKind::Forbidden,
                why,
                format!("Give the user the approval link: {url}"),
            )
            .handover(format!(
                "A person approves this in the product: give the user the approval link {url}"
            ))
            .detail("approval_url", url)
            .detail("approval_mode", "product"),
        )
    }
}

/// The refusal of `confirm_action` for an action the client was asked to put to its user:
/// that request's answer is its one approval. Nothing is consumed: the request still works.
fn answered_in_the_client(pending: &confirm::Pending) -> ToolError {
    ToolError::new(
        ErrorKind::Forbidden,
        "This action waits for the user's answer to the approval request the client showed; confirm_action cannot approve it",
        format!(
            "Let the user answer the approval request, or call {} again with the same arguments for a new one",
            pending.tool
        ),
    )
    .handover("The user approves this in the client's approval prompt; ask them to answer it")
    .detail("approval_mode", "client_prompt")
}

/// The request that runs a prepared call again: the same connection and metadata, the
/// stored arguments.
fn rerun_request(req: &Request, pending: &confirm::Pending) -> Request {
    let mut params = Map::new();
    params.insert("name".into(), json!(pending.tool));
    params.insert("arguments".into(), Value::Object(pending.args.clone()));
    if let Some(meta) = req.message.params.get("_meta") {
        params.insert("_meta".into(), meta.clone());
    }
    Request {
        message: mcp_protocol::Message {
            id: req.message.id.clone(),
            method: "tools/call".into(),
            params,
            beyond_64_bits: None,
        },
        headers: req.headers.clone(),
        version_header: req.version_header.clone(),
        caller: req.caller.clone(),
        prefetched: req.prefetched.clone(),
        plan: None,
        request_id: req.request_id.clone(),
    }
}

/// A pending action as the product's approval page shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingView {
    /// How the product's pages name it: the token the page was opened with, or (in the inbox,
    /// which reads only what is stored) the token's id.
    pub token: String,
    /// The tool that prepared it.
    pub tool: String,
    /// The server-written summary.
    pub summary: String,
    /// `pending`, `used`, `rejected` or `superseded`.
    pub status: String,
    /// The connection that asked.
    pub connection: String,
    /// Whether only a person in the product may approve it (money, or the product mode).
    pub approval_in_product: bool,
    /// What it would do, as the preview showed it (recipient, message body, amounts).
    pub content: Value,
    /// When it expires unapproved (Unix seconds).
    pub expires_at: Option<i64>,
    /// The rights its tool requires of whoever approves it.
    pub rights: Vec<&'static str>,
}

/// What the product's approval pages need of pending actions: the port they use instead of
/// the MCP server itself.
pub trait Approvals: std::fmt::Debug + Send + Sync {
    /// A pending action of `tenant` (`None`: unknown or expired).
    fn pending(&self, tenant: &TenantId, token: &str) -> BoxFuture<'_, Option<PendingView>>;
    /// The actions of `tenant` still waiting for a decision (at most 100, oldest first).
    fn waiting(&self, tenant: &TenantId) -> BoxFuture<'_, Vec<PendingView>>;
    /// Approves a pending action as `member`: the same checks as `confirm_action` (unused,
    /// unexpired, a fresh preparation with unchanged content, exactly once), with the
    /// member's live rights standing in for the connection's. `approver` carries the pending
    /// action's connection and the member's rights.
    fn approve<'a>(
        &'a self,
        token: &'a str,
        approver: Caller,
        member: &'a crate::MemberId,
    ) -> BoxFuture<'a, ToolResult>;
    /// Rejects a pending action, audited.
    fn reject<'a>(&'a self, token: &'a str, rejecter: Caller) -> BoxFuture<'a, ToolResult>;
}

impl Server {
    /// A stored pending action as the product's pages show it.
    fn pending_view(&self, token: &str, item: &store::Item) -> Option<PendingView> {
        let p = confirm::read_pending(token, item)?;
        let spec = self.registry().get(&p.tool);
        let approval_in_product = p.in_product || spec.is_some_and(|t| t.approves_in_product());
        let expires_at = store::rows::expiry(item);
        Some(PendingView {
            token: p.token,
            tool: p.tool,
            summary: p.summary,
            status: p.status,
            connection: p.connection,
            approval_in_product,
            content: p.content,
            expires_at,
            rights: spec
                .map(|t| t.required_rights().to_vec())
                .unwrap_or_default(),
        })
    }
}

impl Approvals for Server {
    fn pending(&self, tenant: &TenantId, token: &str) -> BoxFuture<'_, Option<PendingView>> {
        let (tenant, token) = (tenant.clone(), token.to_owned());
        Box::pin(async move {
            let g = &self.config().gates;
            if !(confirm::well_formed(&token) || confirm::is_id(&token)) {
                return None;
            }
            let item = g
                .store
                .get(&crate::keys::pending(&tenant, &token))
                .await
                .ok()??;
            self.pending_view(&token, &item)
        })
    }

    fn waiting(&self, tenant: &TenantId) -> BoxFuture<'_, Vec<PendingView>> {
        let partition = crate::keys::pending(tenant, "-").pk;
        Box::pin(async move {
            let query = store::Query::partition(partition).limit(100);
            let Ok(page) = self.config().gates.store.query(query).await else {
                return Vec::new();
            };
            let mut views: Vec<PendingView> = page
                .items
                .iter()
                .filter_map(|(key, item)| self.pending_view(&key.sk, item))
                .filter(|v| v.status == "pending")
                .collect();
            views.sort_by_key(|v| v.expires_at);
            views
        })
    }

    fn approve<'a>(
        &'a self,
        token: &'a str,
        approver: Caller,
        member: &'a crate::MemberId,
    ) -> BoxFuture<'a, ToolResult> {
        Box::pin(self.decide(token, approver, Some(member.as_str())))
    }

    fn reject<'a>(&'a self, token: &'a str, rejecter: Caller) -> BoxFuture<'a, ToolResult> {
        Box::pin(self.decide(token, rejecter, None))
    }
}

impl Server {
    /// A decision made on the product's page: approve as `member`, or reject (`None`),
    /// through the same confirmation step and log line as a tool call.
    async fn decide(&self, token: &str, who: Caller, member: Option<&str>) -> ToolResult {
        let Some(reject) = self.registry().get(confirm::REJECT_ACTION).cloned() else {
            return ToolResult::error(&ToolError::new(
                ErrorKind::Internal,
                "This server has no tools that prepare actions",
                "Nothing to decide",
            ));
        };
        let started = self.config().clock.now_micros();
        let request = Request {
            message: mcp_protocol::Message {
                id: Some(mcp_protocol::RequestId::String(format!("approval-{token}"))),
                method: "tools/call".into(),
                params: Map::new(),
                beyond_64_bits: None,
            },
            headers: None,
            version_header: None,
            caller: Some(who),
            prefetched: Default::default(),
            plan: None,
            request_id: Some(self.new_request_id()),
        };
        let plan = Arc::new(CallPlan::new(reject, Map::new(), &self.config().read_ahead));
        let effect = plan.spec.effect();
        let mut call = Call::new(self, &request, plan, Phase::Call);
        let ended = match call.page_step(token, member).await {
            Ok(result) | Err(Exit::Answer(result)) => Ok(result),
            Err(Exit::Interrupt(i)) => Err(i),
        };
        let name = if member.is_some() {
            "approve"
        } else {
            "reject"
        };
        crate::server::log_call(&request, name, effect, &ended, self.took_ms(started));
        match ended {
            Ok(result) => result,
            Err(Interrupt::Refused(e)) => ToolResult::error(&ToolError::new(
                ErrorKind::Rejected,
                e.message,
                "Prepare the action again",
            )),
            Err(Interrupt::InputRequired(_)) => ToolResult::error(&ToolError::new(
                ErrorKind::Internal,
                "The action asked for more input",
                "Prepare it again",
            )),
        }
    }
}

impl<'a> Call<'a> {
    /// Whether a person deciding on the product's page may decide `pending` (ADR 48): a
    /// rejection needs what an approval needs, the rights of the tool that prepared it. Only
    /// the connection that prepared an action may turn it down without them, and it does so
    /// through `reject_action`, never here. Refused, nothing is consumed.
    fn may_decide(
        &self,
        pending: &confirm::Pending,
        caller: &Caller,
        approving: bool,
    ) -> Stage<()> {
        let Some(spec) = self.server.registry().get(&pending.tool) else {
            // The approval answers that the tool is gone; a rejection of it needs no right.
            return Ok(());
        };
        let missing: Vec<&str> = spec
            .required_rights()
            .iter()
            .copied()
            .filter(|r| !caller.rights.contains(*r))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let verb = if approving { "Approving" } else { "Rejecting" };
        Err(ToolError::new(
            ErrorKind::Forbidden,
            format!(
                "{verb} this action needs {}, which you do not have",
                missing.join(" and ")
            ),
            "Ask a member who has it to decide",
        )
        .handover("A member with the action's rights decides it on this page")
        .detail("missing_rights", missing)
        .into())
    }

    /// Where pending actions are kept, and whose they are: a pending action belongs to a
    /// connection, so deciding one needs the caller.
    fn pending_scope(&self) -> Stage<(&'a crate::gates::Gates, &'a Caller)> {
        let Some(caller) = self.caller() else {
            return Err(ToolError::new(
                ErrorKind::Forbidden,
                "Deciding a prepared action needs an authenticated connection",
                "Call it through a connection",
            )
            .handover("This client is not signed in to a workspace; the user connects it with an MCP token")
            .into());
        };
        Ok((&self.server.config().gates, caller))
    }

    /// The page's step: find the pending action, check that the member may decide it, then
    /// execute it as `member` or reject it.
    async fn page_step(&mut self, token: &str, member: Option<&str>) -> Stage<ToolResult> {
        let (g, caller) = self.pending_scope()?;
        let store = g.store.as_ref();
        let pending =
            confirm::load_named(store, &self.req.prefetched, caller, token, None, true).await?;
        self.may_decide(&pending, caller, member.is_some())?;
        match member {
            Some(member) => {
                self.confirm(pending, Approver::Product(member.to_owned()))
                    .await
            }
            None => {
                self.reject(g, caller, pending, confirm::PATH_PRODUCT_PAGE)
                    .await
            }
        }
    }
}
