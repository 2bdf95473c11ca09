//! Stage 8: after the body. A silent write commits with its replay record; a two-step tool
//! stores its preview, asks the client for approval, or executes what was approved. Every
//! state change commits in one transaction with the hooks' switch checks and audit row.

use serde_json::{Value, json};

use super::body::Ran;
use super::{Call, Exit, Stage};
use crate::confirm::{self, Approver, Pending, Phase};
use crate::gates::{self, Committed, ReplayRecord};
use crate::server::Interrupt;
use crate::{Caller, EffectClass, ErrorKind, TenantId, ToolError, ToolResult};
use crate::{PlannedWrite as Planned, WriteSet};

/// A two-step action as its body just prepared it: the pending action to store, and the
/// content (what would go out) that a confirmation approves.
struct Fresh {
    pending: Pending,
    content: Value,
}

impl Call<'_> {
    /// 8. A request for input is sealed and returned; a failure, or an answer the
    ///    interceptors gave without running the body, commits nothing; a read plans nothing;
    ///    a write commits or prepares.
    pub(crate) async fn finish(&mut self, ran: Ran) -> Stage<ToolResult> {
        if let Some(asked) = ran.input_required {
            return Err(self.seal_input_required(asked));
        }
        if ran.result.is_error() {
            // A body cut at its deadline, or told to wait, has met the store's slowness
            // already: reading again would only add to the wait.
            let waits = ran.result.structured.get("retry_after_seconds").is_some();
            if !(ran.timed_out || waits) {
                self.decided_already().await?;
            }
            return Ok(ran.result);
        }
        if ran.timed_out || !ran.body_ran {
            return Ok(ran.result);
        }
        let g = &self.server.config().gates;
        match self.plan.spec.effect() {
            EffectClass::Read if ran.writes.ops.is_empty() => Ok(ran.result),
            EffectClass::Read => Err(self.internal_error("a read tool planned writes").into()),
            EffectClass::SilentWrite => self.commit_write(g, ran).await,
            _ => self.two_step(g, ran).await,
        }
    }

    /// The body's `input_required`, its state sealed to this caller, tool and arguments.
    fn seal_input_required(&self, mut asked: Value) -> Exit {
        if let Some(state) = asked.get("requestState").and_then(Value::as_str) {
            asked["requestState"] = json!(self.seal(state));
        }
        asked["_meta"] =
            json!({mcp_protocol::META_SERVER_INFO: self.server.config().info.to_json()});
        Exit::Interrupt(Interrupt::InputRequired(asked))
    }

    fn seal(&self, state: &str) -> String {
        let config = self.server.config();
        crate::state::seal(
            &config.state_key,
            state,
            &self.principal(),
            self.plan.spec.name(),
            &self.plan.digest,
            self.now,
            config.state_ttl_seconds,
        )
    }

    /// Commits `writes` with the hooks' operations (switch checks, audit row) and `replay`,
    /// giving the slot back beside the commit.
    pub(crate) async fn commit(
        &mut self,
        g: &gates::Gates,
        writes: WriteSet,
        replay: Option<ReplayRecord<'_>>,
        audit: Audited<'_>,
    ) -> Committed {
        let ids = writes.ids.clone();
        let approval = audit.approval.map(Approver::label);
        let call = gates::CommitContext {
            caller: self.caller(),
            tool: audit.tool.unwrap_or(self.plan.spec.name()),
            ids: &ids,
            request_id: &self.exec.request_id,
            outcome: audit.outcome,
            approval: approval.as_deref(),
            now_micros: self.now_micros,
        };
        gates::commit(g, &call, writes, replay, self.now, &self.slot).await
    }

    /// A silent write: its writes, its replay record and its audit row, at once.
    async fn commit_write(&mut self, g: &gates::Gates, ran: Ran) -> Stage<ToolResult> {
        let Ran { result, writes, .. } = ran;
        let plan = std::sync::Arc::clone(&self.plan);
        let (tenant, connection) = gates::scope(self.caller());
        let args = plan.args.as_ref().map_err(Clone::clone)?;
        let replay = plan
            .replay_key(&tenant, &connection)
            .map(|key| ReplayRecord {
                key,
                result: &result.structured,
                digest: &plan.digest,
                args,
                idempotency_key: plan.idempotency_key.as_deref(),
            });
        match self.commit(g, writes, replay, Audited::ok()).await {
            Committed::Done => Ok(result),
            Committed::Replayed(first) => Ok(first),
            Committed::Refused(error) => Err(error.into()),
        }
    }

    /// A notify, wake, alerting or delete tool after its body: prepare, or execute what was
    /// approved if what would go out is unchanged.
    async fn two_step(&mut self, g: &gates::Gates, ran: Ran) -> Stage<ToolResult> {
        let Some(caller) = self.caller() else {
            return Err(ToolError::new(
                ErrorKind::Forbidden,
                "This tool prepares actions for a person to confirm, which needs an authenticated connection",
                "Call it through a connection",
            )
            .handover("This client is not signed in to a workspace; the user connects it with an MCP token")
            .into());
        };
        if let Some(token) = self.elicited_token() {
            self.take_elicited_answer(g, caller, &token).await?;
        }
        let fresh = self.pending_of(&ran, caller)?;
        match self.phase.clone() {
            Phase::Call => self.store_preview(g, ran, fresh).await,
            Phase::Confirm(old, _) if old.content_hash != fresh.pending.content_hash => {
                self.supersede(g, &old, fresh).await
            }
            Phase::Confirm(old, approver) => self.execute(g, ran, &old, approver).await,
        }
    }

    /// The pending action a retried call names in its sealed state (the client asked its user).
    fn elicited_token(&self) -> Option<String> {
        matches!(self.phase, Phase::Call)
            .then(|| self.request_state.clone())
            .flatten()
    }

    /// A confirmation, or a retry carrying the approval state, of an action that was decided
    /// already (executed, declined, replaced) is answered with that, not with the error its
    /// body met: a booking confirmed by this very action is no draft any more, and a customer
    /// deleted by a confirmation sent twice at once is gone; saying so hides that it is done.
    async fn decided_already(&self) -> Stage<()> {
        // A page names the pending action by its id; it was found for this caller already.
        let (token, by_id) = match &self.phase {
            Phase::Confirm(pending, _) => (Some(pending.token.clone()), true),
            Phase::Call => (self.elicited_token(), false),
        };
        let (Some(token), Some(caller)) = (token, self.caller()) else {
            return Ok(());
        };
        let store = self.server.config().gates.store.as_ref();
        // Read afresh: what was read before the body is what the other call changed since.
        let unread = crate::Prefetched::default();
        match confirm::load_named(store, &unread, caller, &token, None, by_id).await {
            Err(decided) if decided.kind == ErrorKind::Conflict => Err(decided.into()),
            // Unknown whether it was decided meanwhile: the body's error may be the other
            // call's doing, so the caller is told to try again (which reads it then).
            Err(outage) if outage.kind == ErrorKind::Unavailable => Err(outage.into()),
            _ => Ok(()),
        }
    }

    /// The user's answer to the approval request: approved moves the call to executing the
    /// pending action; declined turns it down (audited) and ends the call; no answer, or one
    /// that says neither, asks again.
    async fn take_elicited_answer(
        &mut self,
        g: &gates::Gates,
        caller: &Caller,
        token: &str,
    ) -> Stage<()> {
        let pending =
            confirm::load(g.store.as_ref(), &self.req.prefetched, caller, token, None).await?;
        let responses = self.req.message.params.get("inputResponses");
        match confirm::answer(responses) {
            confirm::Answer::Approved => {
                // The mode may have become `product` since the client was asked.
                if let Some(refusal) =
                    self.approval_in_product_needed(&pending, &Approver::Elicitation)
                {
                    return Err(refusal.into());
                }
                self.phase = Phase::Confirm(Box::new(pending), Approver::Elicitation);
                return Ok(());
            }
            confirm::Answer::Unanswered => return Err(self.ask_for_approval(&pending, token)),
            confirm::Answer::Declined => {}
        }
        let declined = confirm::decided(caller, &pending, "rejected");
        let audit = Audited::outcome("declined").of(&pending.tool);
        match self.commit(g, declined, None, audit).await {
            Committed::Refused(e) => {
                Err(confirm::consumption_refused(e, "Nothing was done").into())
            }
            _ => {
                let path = confirm::PATH_ELICITATION;
                confirm::log_decision(path, "declined", &pending, self.now_micros);
                Err(Exit::Answer(ToolResult::success(json!({
                    "summary": "The user did not approve; nothing was done.",
                    "status": "DECLINED",
                    "warnings": [],
                    "next_steps": [],
                }))))
            }
        }
    }

    /// Asks the client's user to approve the pending action's server-written summary; the
    /// sealed state names the pending action.
    fn ask_for_approval(&self, pending: &Pending, token: &str) -> Exit {
        Exit::Interrupt(Interrupt::InputRequired(json!({
            "resultType": "input_required",
            "inputRequests": {"approval": confirm::approval_request(&pending.summary)},
            "requestState": self.seal(token),
            "_meta": {mcp_protocol::META_SERVER_INFO: self.server.config().info.to_json()},
        })))
    }

    /// The pending action this run prepared, with the preview's content.
    fn pending_of(&self, ran: &Ran, caller: &Caller) -> Stage<Fresh> {
        let Some((summary, content)) = ran.writes.preview.clone() else {
            return Err(self
                .internal_error("a two-step tool prepared no preview")
                .into());
        };
        let token = confirm::new_token(&self.plan.records, self.server.randomness());
        let pending = Pending {
            token,
            connection: caller.connection.as_str().to_owned(),
            tool: self.plan.spec.name().to_owned(),
            args: self.plan.args.clone().unwrap_or_default(),
            content_hash: crate::digest(&content),
            content: content.clone(),
            summary,
            status: "pending".into(),
            in_product: self.plan.spec.approves_in_product()
                || caller.product_approval.requires(self.plan.spec.effect()),
            elicited: false,
            prepared_at: self.now_micros,
            marked: true,
            ids: ran.writes.ids.clone(),
        };
        Ok(Fresh { pending, content })
    }

    /// Stores the preview as a pending action (audited as prepared), then asks the client's
    /// user for approval, or answers the preview with the confirm step or the approval link.
    async fn store_preview(
        &mut self,
        g: &gates::Gates,
        ran: Ran,
        fresh: Fresh,
    ) -> Stage<ToolResult> {
        let Fresh {
            pending: mut fresh,
            content,
        } = fresh;
        let tenant = self.caller().map(|c| c.tenant.clone()).unwrap_or_default();
        fresh.elicited = self.client_elicits() && !fresh.in_product;
        let ran_meanwhile = self.store_registered(g, &tenant, &fresh, &ran).await?;
        if fresh.elicited {
            // The client can ask its user: ask for approval of the server-written summary;
            // the sealed state names the pending action.
            return Err(self.ask_for_approval(&fresh, &fresh.token));
        }
        let mut preview = confirm::preview_result(ran.result.structured, &fresh, &content);
        if let Some(ran) = ran_meanwhile {
            confirm::warn_ran_before(&mut preview, &fresh.tool, &ran, self.now_micros);
        }
        if fresh.in_product {
            let url = self.server.approval_url(&fresh.token);
            confirm::approve_in_product(&mut preview, &fresh, &url);
        }
        Ok(ToolResult::success(preview))
    }

    /// Stores the preview as a pending action (audited as prepared), registered on its
    /// action's mark (ADR 44). If the action ran since the mark was made, the preview is stored
    /// again, registered anyway (a new decision, if the person approves it knowing), and that
    /// it ran is returned for the preview to say.
    async fn store_registered(
        &mut self,
        g: &gates::Gates,
        tenant: &TenantId,
        fresh: &Pending,
        ran: &Ran,
    ) -> Stage<Option<confirm::RanMeanwhile>> {
        let now = self.now;
        let stored = |first_since_run| {
            let mut stored = WriteSet::of(confirm::store_op(tenant, fresh, now));
            stored.ops.push(Planned {
                op: confirm::register_op(tenant, fresh, now, first_since_run).into(),
                on_conflict: Some(Box::new(confirm::ran_meanwhile_error)),
            });
            stored.ids = ran.writes.ids.clone();
            stored
        };
        let first = stored(true);
        let ran_meanwhile = match self
            .commit(g, first, None, Audited::outcome("prepared"))
            .await
        {
            Committed::Refused(error) => match confirm::ran_meanwhile(&error) {
                Some(ran) => ran,
                None => return Err(error.into()),
            },
            _ => return Ok(None),
        };
        let again = stored(false);
        match self
            .commit(g, again, None, Audited::outcome("prepared"))
            .await
        {
            Committed::Refused(error) => Err(error.into()),
            _ => Ok(Some(ran_meanwhile)),
        }
    }

    /// What would go out changed since the person approved it: the old token dies and a new
    /// preview is shown instead of executing.
    async fn supersede(
        &mut self,
        g: &gates::Gates,
        old: &Pending,
        fresh: Fresh,
    ) -> Stage<ToolResult> {
        let Fresh {
            pending: mut fresh,
            content,
        } = fresh;
        fresh.in_product |= old.in_product;
        let Some(caller) = self.caller() else {
            return Err(self
                .internal_error("a replaced action without its caller")
                .into());
        };
        let tenant = caller.tenant.clone();
        let mut ops = confirm::decided(caller, old, "superseded");
        ops.ops
            .push(Planned::new(confirm::store_op(&tenant, &fresh, self.now)));
        ops.ops.push(Planned::new(confirm::register_op(
            &tenant, &fresh, self.now, false,
        )));
        let audit = Audited::outcome("superseded");
        if let Committed::Refused(e) = self.commit(g, ops, None, audit).await {
            return Err(confirm::consumption_refused(e, "Prepare the action again").into());
        }
        let preview = confirm::preview_result(json!({}), &fresh, &content);
        let mut error = ToolError::new(
            ErrorKind::Conflict,
            "What this action would do changed since the preview; nothing was executed and the old confirm_token is dead",
            "Show the user the new confirm_summary and confirm with the new confirm_token if they approve",
        )
        .detail("changed_since_preview", true)
        .detail("confirm_token", fresh.token.clone())
        .detail("confirm_summary", fresh.summary.clone())
        // The new preview's confirmation, as `confirm_action`'s description promises: for
        // after the user approved the new summary.
        .next_call(format!(
            "{} {}",
            confirm::CONFIRM_ACTION,
            json!({"confirm_token": fresh.token, "confirm_summary": fresh.summary})
        ));
        error
            .details
            .insert("preview".into(), preview["preview"].clone());
        Err(error.into())
    }

    /// Executes an approved action: its writes, its per-object limits and the pending
    /// action's consumption, in one transaction, so that it executes at most once.
    async fn execute(
        &mut self,
        g: &gates::Gates,
        ran: Ran,
        old: &Pending,
        approver: Approver,
    ) -> Stage<ToolResult> {
        let Ran {
            result, mut writes, ..
        } = ran;
        // Confirming needed the caller (`pending_scope`).
        let Some(caller) = self.caller() else {
            return Err(self
                .internal_error("an approved action without its caller")
                .into());
        };
        let (tenant, consume) = (
            caller.tenant.clone(),
            confirm::consumption(caller, &old.token, "used"),
        );
        if self.plan.spec.effect() == EffectClass::Notify {
            let buckets =
                gates::object_buckets(g, &tenant, &writes.ids, &writes.recipients, self.now);
            writes.ops.extend(buckets);
        }
        // The pending action's own conditions come first: when the same confirmation commits
        // twice at once, the loser is told the action was decided (the first failed condition
        // explains a refused commit), not that its record changed, which sends a model to read
        // it and act again.
        let tool = old.tool.clone();
        let mark = Planned {
            op: confirm::executed_op(&tenant, old, self.now_micros).into(),
            on_conflict: Some(Box::new(move |_| confirm::executed_already(&tool))),
        };
        writes.ops.splice(0..0, [consume, mark]);
        let audit = Audited {
            approval: Some(&approver),
            ..Audited::ok()
        };
        match self.commit(g, writes, None, audit).await {
            Committed::Done | Committed::Replayed(_) => {
                confirm::log_decision(approver.path(), "confirmed", old, self.now_micros);
                let mut done = result;
                if let Value::Object(obj) = &mut done.structured {
                    obj.insert("status".into(), json!("DONE"));
                    obj.insert("confirm_token".into(), json!(old.token));
                }
                Ok(done)
            }
            Committed::Refused(error) => Err(error.into()),
        }
    }
}

/// How a commit is recorded in the audit trail.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Audited<'a> {
    /// The tool named (default: the tool called).
    pub(crate) tool: Option<&'a str>,
    pub(crate) outcome: &'a str,
    pub(crate) approval: Option<&'a Approver>,
}

impl<'a> Audited<'a> {
    pub(crate) fn ok() -> Self {
        Self::outcome("ok")
    }

    pub(crate) fn outcome(outcome: &'a str) -> Self {
        Audited {
            tool: None,
            outcome,
            approval: None,
        }
    }

    pub(crate) fn of(self, tool: &'a str) -> Self {
        Audited {
            tool: Some(tool),
            ..self
        }
    }
}
