//! One tool call, stage by stage, in the order of the design. [`Call::stages`] lists them; each
//! stage is a small method that either hands the call on or ends it with an answer.

mod body;
mod confirmation;
mod finish;
mod fixes;
mod hints;
mod names;

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures_util::FutureExt as _;
use mcp_protocol::{LATEST_VERSION, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, RpcError};
use serde_json::{Map, Value, json};

pub(crate) use crate::plan::CallPlan;
pub use confirmation::{Approvals, PendingView};

use crate::confirm::Phase;
use crate::gates;
use crate::server::{Interrupt, Server};
use crate::{Builtin, Parsed};
use crate::{Caller, ErrorKind, ExecutionContext, Notifications, Request, ToolError, ToolResult};

/// How a call ends before its last stage.
pub(crate) enum Exit {
    /// A tool result (an error, a replay, a refusal).
    Answer(ToolResult),
    /// No tool result: an `input_required` result or a JSON-RPC error.
    Interrupt(Interrupt),
}

impl From<ToolError> for Exit {
    fn from(error: ToolError) -> Self {
        Exit::Answer(ToolResult::error(&error))
    }
}

/// A stage's result: go on with `T`, or end the call.
pub(crate) type Stage<T> = Result<T, Exit>;

/// One call in progress: what it is, who makes it, and what it holds. A call dropped before
/// its end (its client went away and the transport stopped polling it) still gives its slot
/// back, instead of blocking its connection until the slot's lease runs out.
pub(crate) struct Call<'a> {
    pub(crate) server: &'a Server,
    pub(crate) req: &'a Request,
    pub(crate) plan: Arc<CallPlan>,
    pub(crate) phase: Phase,
    /// Shared with the body and the tool's context, not copied for them.
    pub(crate) exec: Arc<ExecutionContext>,
    pub(crate) notifications: Notifications,
    /// The time the call started, in Unix seconds, from the server's clock.
    pub(crate) now: i64,
    /// The same, in microseconds (the audit row's time).
    pub(crate) now_micros: i64,
    /// The concurrency slot it holds, until given back.
    pub(crate) slot: gates::HeldSlot,
    /// The connection's loop brake as this call read it.
    pub(crate) brake: Option<gates::Brake>,
    /// The tool's own part of a verified `requestState`.
    pub(crate) request_state: Option<String>,
}

impl<'a> Call<'a> {
    /// A call of `plan` for `req`, in `phase`.
    pub(crate) fn new(
        server: &'a Server,
        req: &'a Request,
        plan: Arc<CallPlan>,
        phase: Phase,
    ) -> Self {
        let now_micros = server.config().clock.now_micros();
        let now = now_micros.div_euclid(1_000_000);
        let exec = Arc::new(execution_context(server, req, &plan, now));
        Call {
            now,
            now_micros,
            server,
            req,
            plan,
            phase,
            exec,
            notifications: Notifications::default(),
            slot: gates::HeldSlot::default(),
            brake: None,
            request_state: None,
        }
    }

    /// Runs every stage; the slot the call took goes back when it ends (`Drop`), whatever
    /// happened.
    pub(crate) async fn run(mut self) -> (Result<ToolResult, Interrupt>, Notifications) {
        let ended = match self.stages().await {
            Ok(mut result) | Err(Exit::Answer(mut result)) => {
                if let Some(error) = result.source.take() {
                    result = ToolResult::error(&self.lead_on(*error));
                    result.source = None;
                }
                self.write_out_calls(&mut result);
                self.fit_hints(&mut result);
                Ok(result)
            }
            Err(Exit::Interrupt(interrupt)) => Err(interrupt),
        };
        self.count_for_brake(&ended).await;
        // The slot goes back as the call is dropped, here or wherever it was abandoned.
        (ended, std::mem::take(&mut self.notifications))
    }

    /// The stages of a tool call, in order.
    async fn stages(&mut self) -> Stage<ToolResult> {
        self.check_visible()?;
        self.resolve_names().await?;
        let input = self.parse_arguments()?;
        let state = self.open_request_state()?;
        self.request_state.clone_from(&state);
        self.run_guards().await?;
        self.check_replay_and_brake().await?;
        match self.plan.spec.builtin_step() {
            // The action a confirmation executes is admitted with it (`run_body`'s admission).
            Some(step @ Builtin::Confirm) => self.run_builtin(step, input).await,
            Some(step @ Builtin::Reject) => {
                self.admit_beside(async {}).await?;
                self.run_builtin(step, input).await
            }
            None => {
                let ran = self.admit_beside(self.run_body(input, state)).await?;
                self.finish(ran).await
            }
        }
    }

    /// The caller, when the transport bound one.
    pub(crate) fn caller(&self) -> Option<&'a Caller> {
        self.req.caller.as_ref()
    }

    /// 1. Visibility: a tool hidden by the toolset or by rights says so.
    fn check_visible(&self) -> Stage<()> {
        let Some(caller) = self.caller() else {
            return Ok(());
        };
        match self.server.hidden_from(&self.plan.spec, caller) {
            Some(hidden) => Err(hidden_error(self.plan.spec.name(), &hidden).into()),
            None => Ok(()),
        }
    }

    /// 2. Arguments: normalized in the plan (unknown fields refused, tolerant input
    ///    coerced), then typed.
    fn parse_arguments(&mut self) -> Stage<Parsed> {
        let args = self.plan.args.clone()?;
        // Not shared yet: the body has not started, so this changes it in place.
        Arc::make_mut(&mut self.exec).arguments = args.clone();
        Ok(self.plan.spec.runner().parse(Value::Object(args))?)
    }

    /// 3. A retried multi round-trip call: the echoed state must be ours, for this caller,
    ///    this tool and these arguments, and not expired; the tool sees only its own part.
    fn open_request_state(&self) -> Stage<Option<String>> {
        let refused = |why: &str| {
            Exit::Interrupt(Interrupt::Refused(RpcError::invalid_params(format!(
                "Invalid requestState: {why}"
            ))))
        };
        match self.req.message.params.get("requestState") {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(presented)) => crate::state::open(
                &self.server.config().state_key,
                presented,
                &self.principal(),
                self.plan.spec.name(),
                &self.plan.digest,
                self.now,
            )
            .map(Some)
            .map_err(|e| refused(e.reason())),
            Some(_) => Err(refused("it must be a string")),
        }
    }

    /// 4. Guards, in order; the first refusal wins and nothing else runs. A guard that
    ///    panics ends the call like a body that panics.
    async fn run_guards(&self) -> Stage<()> {
        for guard in self.plan.spec.guards() {
            let checked = AssertUnwindSafe(guard.check(&self.exec))
                .catch_unwind()
                .await;
            match checked {
                Ok(Ok(())) => {}
                Ok(Err(refusal)) => {
                    return Err(ToolError::new(
                        ErrorKind::Forbidden,
                        refusal.reason,
                        "This call is not allowed as made; do not retry it unchanged",
                    )
                    .handover("The server refused this call as made; tell the user why")
                    .detail("type", "FORBIDDEN")
                    .detail("guard", guard.name())
                    .into());
                }
                Err(panic) => return Err(body::panicked(&self.exec, &*panic).into()),
            }
        }
        Ok(())
    }

    /// 5. Replay and loop brake: a silent write sent again is answered from its replay record;
    ///    the same failing call a third time in a row is braked. Both items were read in the
    ///    credential's batch when the transport could; else in one batch here.
    async fn check_replay_and_brake(&mut self) -> Stage<()> {
        let (g, Phase::Call) = (&self.server.config().gates, &self.phase) else {
            return Ok(());
        };
        let (tenant, connection) = gates::scope(self.caller());
        let brake_key = crate::keys::brake(&tenant, &connection);
        let mut keys = vec![brake_key.clone()];
        keys.extend(self.plan.replay_key(&tenant, &connection));
        let items = match self.req.prefetched.all(&keys) {
            Some(items) => items,
            None => g
                .store
                .batch_get(&keys)
                .await
                .map_err(|e| self.internal_error(&e.to_string()))?,
        };
        if let Some(replay) = items
            .get(1)
            .and_then(Option::as_ref)
            .and_then(gates::read_replay)
        {
            return Err(self.answer_replay(replay));
        }
        let brake = gates::Brake::read(brake_key, self.plan.brake_call(), items[0].as_ref());
        let braked = brake.braked();
        self.brake = Some(brake);
        if braked {
            return Err(gates::brake_error(self.plan.spec.name()).into());
        }
        Ok(())
    }

    /// The answer to a silent write whose replay record exists: the first result for the same
    /// arguments, an error for a key used with other arguments. Visibility and guards ran
    /// before: a caller who may no longer call the tool never gets here.
    fn answer_replay(&self, replay: gates::Replay) -> Exit {
        let args = self.plan.args.as_ref().ok();
        if replay.digest != self.plan.digest {
            let key = self.plan.idempotency_key.as_deref().unwrap_or_default();
            return gates::key_reused(key, &replay.args, args.unwrap_or(&Map::new())).into();
        }
        Exit::Answer(gates::replayed_result(replay.structured))
    }

    /// After the call: a failure is counted for the loop brake; a success clears the count.
    async fn count_for_brake(&mut self, ended: &Result<ToolResult, Interrupt>) {
        let g = &self.server.config().gates;
        let Some(brake) = self.brake.take() else {
            return;
        };
        let written = match ended {
            Ok(result) if result.is_error() => {
                if told_to_wait(&result.structured)
                    || result.structured.get("loop_brake") == Some(&json!(true))
                {
                    return;
                }
                g.store.put(brake.count_failure(self.now)).await.map(|_| ())
            }
            Ok(_) => match brake.clear() {
                Some(clear) => g.store.delete(clear).await.map(|_| ()),
                None => return,
            },
            Err(_) => return,
        };
        if let Err(e) = written {
            tracing::warn!(error = %e, "could not update the loop brake");
        }
    }

    /// Who a sealed `requestState` is bound to.
    pub(crate) fn principal(&self) -> String {
        self.caller()
            .map_or("-", |c| c.connection.as_str())
            .to_owned()
    }

    /// The generic error for a failure of the server, logged with its cause.
    pub(crate) fn internal_error(&self, cause: &str) -> ToolError {
        internal_error(&self.exec, cause)
    }
}

/// What guards, interceptors and the tool see of the call.
fn execution_context(
    server: &Server,
    req: &Request,
    plan: &CallPlan,
    now: i64,
) -> ExecutionContext {
    let msg = &req.message;
    ExecutionContext {
        tool_name: plan.spec.name().to_owned(),
        request_id: req
            .request_id
            .clone()
            .unwrap_or_else(|| server.new_request_id()),
        protocol_version: msg
            .meta_field(META_PROTOCOL_VERSION)
            .and_then(Value::as_str)
            .unwrap_or(LATEST_VERSION)
            .to_owned(),
        client_capabilities: msg
            .meta_field(META_CLIENT_CAPABILITIES)
            .cloned()
            .unwrap_or_else(|| json!({})),
        headers: req.headers.clone(),
        arguments: Map::new(),
        caller: req.caller.clone(),
        now,
        metadata: server.metadata_of(&plan.spec),
    }
}

pub(crate) fn hidden_error(tool: &str, hidden: &crate::Hidden) -> ToolError {
    match hidden {
        crate::Hidden::Toolset { needs, has } => ToolError::new(
            ErrorKind::Forbidden,
            format!("The tool {tool} is not in this connection's {} toolset (it is in {})", has.as_str(), needs.as_str()),
            "Use the tools this connection lists, or ask the person who manages connections for one with a larger toolset",
        )
        .handover(format!("This connection cannot call {tool}; the user can do it in the product, or connect with the {} toolset", needs.as_str()))
        .detail("hidden_by", "toolset")
        .detail("toolset", has.as_str()),
        crate::Hidden::Rights(missing) => ToolError::new(
            ErrorKind::Forbidden,
            format!("The tool {tool} needs the right {} which this connection does not have now", missing.join(", ")),
            "Ask a person with that right to do this, or to grant the right to the member who created this connection",
        )
        .handover(format!("This connection lacks the right {}; someone who has it can do this, or grant it", missing.join(", ")))
        .detail("hidden_by", "rights")
        .detail("missing_rights", missing.clone()),
    }
}

pub(crate) fn internal_error(exec: &ExecutionContext, cause: &str) -> ToolError {
    tracing::error!(request_id = %exec.request_id, tool = %exec.tool_name, cause, "tool failed");
    ToolError::new(
        ErrorKind::Internal,
        format!("The server failed while running {} (request {})", exec.tool_name, exec.request_id),
        "Nothing suggests your arguments were wrong; try again later, and quote the request id if it keeps failing",
    )
    .handover(format!("The server failed (request {}); if it keeps failing, the user reports that request id to whoever runs gatehouse", exec.request_id))
    .detail("request_id", exec.request_id.clone())
}

/// Whether an error told the caller to wait and come back (the store was out, a limit was
/// reached, an identical call was running): such a call did nothing wrong, and repeating it is
/// what it was told to do, so the loop brake does not count it.
fn told_to_wait(structured: &serde_json::Value) -> bool {
    let code = structured.get("code").and_then(serde_json::Value::as_str);
    matches!(code, Some("unavailable" | "rate_limited"))
        || structured.get("retryable") == Some(&json!(true))
}

impl Drop for Call<'_> {
    fn drop(&mut self) {
        // At the end of `run`, or wherever the call was abandoned half-way.
        self.server.give_back(self.slot.take());
    }
}
