//! Stages 6 and 7: the body inside its interceptors and exception handlers, under its
//! deadline, with admission beside it.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::FutureExt as _;
use futures_util::future::{BoxFuture, Either};
use mcp_protocol::{META_LOG_LEVEL, META_PROTOCOL_VERSION};
use serde_json::{Value, json};

use super::{Call, Stage};

use crate::Next;
use crate::Parsed;
use crate::confirm::{Approver, Phase};
use crate::log_rank;
use crate::{CallContext, CallError, ErrorKind, ToolError, ToolResult, gates};

/// How admission waits, and how often, for a slot whose release is on its way from another
/// instance (see `docs/adr` on slot release).
const SLOT_WAIT: std::time::Duration = std::time::Duration::from_millis(25);
const SLOT_WAIT_ATTEMPTS: u32 = 6;

/// What the body left behind.
pub(crate) struct Ran {
    /// What the interceptors returned.
    pub(crate) result: ToolResult,
    /// Whether the tool's body itself ran: an interceptor may answer without calling it, and
    /// then nothing the call planned is committed.
    pub(crate) body_ran: bool,
    /// The writes the body planned.
    pub(crate) writes: crate::WriteSet,
    /// The body asked the client for input (an `input_required` result, not yet sealed).
    pub(crate) input_required: Option<Value>,
    /// The body ran past its deadline and was dropped.
    pub(crate) timed_out: bool,
}

impl<'a> Call<'a> {
    /// 6. Admission (rate buckets and a concurrency slot, one transaction) beside `work`.
    ///    A body only reads and plans its writes, so running it before admission is known
    ///    changes nothing, and a refusal drops everything it planned; the caller waits for one
    ///    round trip instead of two.
    pub(crate) async fn admit_beside<T>(&mut self, work: impl Future<Output = T>) -> Stage<T> {
        let (admitted, out) = futures_util::future::join(self.admission(), work).await;
        match admitted {
            Ok(()) => Ok(out),
            Err(exit) => {
                self.notifications.take();
                Err(exit)
            }
        }
    }

    /// Admits the call, waiting briefly for a slot whose release is on its way, and puts the
    /// slot in `self.slot`; takes none when the call has no connection (a transport that does
    /// not authenticate, as the conformance fixture).
    async fn admission(&self) -> Stage<()> {
        let g = &self.server.config().gates;
        let Some(caller) = self.caller() else {
            return Ok(());
        };
        let spec = &self.plan.spec;
        // A lease outlives the deadline a little, so a crashed instance frees its slot. An
        // action `confirm_action` executes is admitted once for both: the confirmation's
        // write bucket, the action's class and the slot, in one transaction. One a person
        // approves on the product's page takes no slot of the connection.
        let lease = Some(i64::try_from(spec.time_limit().as_secs()).unwrap_or(60) + 5);
        let (lease_seconds, also_write) = match &self.phase {
            Phase::Call => (lease, false),
            Phase::Confirm(_, Approver::Client) => (lease, true),
            Phase::Confirm(..) => (None, false),
        };
        let ask = gates::Ask {
            class: spec.effect(),
            expensive: spec.is_expensive(),
            request_id: &self.exec.request_id,
            lease_seconds,
            also_write,
            now: self.now,
        };
        self.server.releases().settle(caller).await;
        let mut waited = 0;
        loop {
            let mut pending = Unanswered {
                server: self.server,
                caller,
                ask,
                answered: false,
            };
            // An error leaves `pending` unanswered: the store's last answer may follow an
            // attempt of the same transaction that landed (clients resend on a lost answer,
            // throttling or a conflict), so the slots it could have taken are given back.
            let answered = gates::admit(g, caller, ask).await?;
            pending.answered = true;
            match answered {
                Ok(slot) => {
                    self.slot.put(slot);
                    return Ok(());
                }
                Err(refusal) => {
                    // A slot can still be held by the call before this one, when that call ran
                    // on another instance and its release is still on its way. Wait a little
                    // before saying other calls are running; a refused attempt counted nothing.
                    let busy = refusal.details.get("concurrency") == Some(&json!(true));
                    if !busy || waited == SLOT_WAIT_ATTEMPTS {
                        return Err(refusal.into());
                    }
                    waited += 1;
                    self.server.sleep(SLOT_WAIT).await;
                }
            }
        }
    }

    /// 7. The body inside the interceptors (the first registered outermost), its errors
    ///    through the exception handlers, under the tool's deadline, with the records the call
    ///    named served from the credential's batch.
    pub(crate) fn run_body(
        &self,
        input: Parsed,
        state: Option<String>,
    ) -> impl Future<Output = Ran> + 'a {
        let ctx = self.tool_context(state);
        let writes = ctx.writes.clone();
        let exec = Arc::clone(&self.exec);
        let spec = Arc::clone(&self.plan.spec);
        let warnings = self.plan.warnings.clone();
        let ahead = self.read_ahead();
        let server = self.server;
        async move {
            let body_ran = AtomicBool::new(false);
            let input_required: Mutex<Option<Value>> = Mutex::new(None);
            let input = Mutex::new(Some(input));
            let innermost = || -> BoxFuture<'_, ToolResult> {
                let taken = input
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take();
                let ctx = ctx.clone();
                let (exec, spec, warnings) = (&exec, &spec, &warnings);
                let (body_ran, input_required) = (&body_ran, &input_required);
                Box::pin(async move {
                    let Some(input) = taken else {
                        return ToolResult::error(&super::internal_error(
                            exec,
                            "an interceptor ran the tool twice",
                        ));
                    };
                    body_ran.store(true, Ordering::SeqCst);
                    let outcome = AssertUnwindSafe(spec.runner().run(ctx, input))
                        .catch_unwind()
                        .await;
                    let asked = |ir| {
                        *input_required
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(ir)
                    };
                    translate(outcome, exec, spec, warnings, asked).await
                })
            };
            let next = Next {
                rest: spec.interceptors(),
                ctx: &exec,
                innermost: &innermost,
            };
            let guarded = AssertUnwindSafe(next.run()).catch_unwind();
            let timer = server.sleep(spec.time_limit());
            let ran = store::read_ahead::scope(
                Arc::new(ahead),
                futures_util::future::select(guarded, timer),
            )
            .await;
            let (result, timed_out) = match ran {
                Either::Left((Ok(result), _)) => (result, false),
                Either::Left((Err(panic), _)) => {
                    (ToolResult::error(&panicked(&exec, &*panic)), false)
                }
                Either::Right(((), _)) => (ToolResult::error(&deadline_error(&spec)), true),
            };
            let taken = input_required
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            Ran {
                result,
                body_ran: body_ran.load(Ordering::SeqCst),
                writes: writes.take(),
                input_required: taken,
                timed_out,
            }
        }
    }

    /// What the tool sees of the call.
    fn tool_context(&self, state: Option<String>) -> CallContext {
        let msg = &self.req.message;
        CallContext {
            exec: Arc::clone(&self.exec),
            input_responses: msg.params.get("inputResponses").cloned(),
            request_state: state,
            writes: crate::Writes::default(),
            progress_token: msg.meta_field("progressToken").cloned(),
            log_level: msg
                .meta_field(META_LOG_LEVEL)
                .and_then(Value::as_str)
                .and_then(log_rank),
            progress_sent: Arc::new(Mutex::new(f64::MIN)),
            notifications: self.notifications.clone(),
        }
    }

    /// The records the call names, read in the credential's batch, looked up by the keys
    /// named from the *authenticated* caller: an item read for another claim is not found.
    fn read_ahead(&self) -> store::read_ahead::ReadAheadItems {
        let Some(caller) = self.caller() else {
            return Default::default();
        };
        self.plan
            .record_keys(&caller.tenant, &self.server.config().read_ahead)
            .filter_map(|key| self.req.prefetched.one(&key).map(|item| (key, item)))
            .collect()
    }

    /// Whether the client can answer an approval request in the call: a 2026-07-28 request
    /// declaring form-mode elicitation (an `input_required` result means nothing to an older
    /// client, and a URL-only client cannot show a form).
    pub(crate) fn client_elicits(&self) -> bool {
        self.req
            .message
            .meta_field(META_PROTOCOL_VERSION)
            .and_then(Value::as_str)
            == Some(mcp_protocol::LATEST_VERSION)
            && mcp_protocol::elicits_forms(&self.exec.client_capabilities)
    }
}

/// A body's ending as a tool result: its success shaped, its tool error as is, its input
/// request set aside, any other error through the exception handlers, a panic as the
/// generic error.
async fn translate(
    outcome: std::thread::Result<Result<crate::Success<Value>, CallError>>,
    exec: &crate::ExecutionContext,
    spec: &crate::ToolSpec,
    warnings: &[String],
    asked: impl FnOnce(Value),
) -> ToolResult {
    match outcome {
        Ok(Ok(success)) => match crate::shape_success(&success, warnings) {
            Ok(structured) => ToolResult::success(structured),
            Err(e) => ToolResult::error(&super::internal_error(exec, &e.to_string())),
        },
        Ok(Err(CallError::Tool(e))) => ToolResult::error(&e),
        Ok(Err(CallError::InputRequired(ir))) => {
            let mut result = json!({"resultType": "input_required"});
            if let Some(requests) = ir.input_requests {
                result["inputRequests"] = requests;
            }
            if let Some(state) = ir.request_state {
                result["requestState"] = json!(state);
            }
            asked(result);
            ToolResult::success(json!({}))
        }
        Ok(Err(CallError::Other(error))) => {
            for handler in spec.handlers() {
                if let Some(translated) = handler.catch(error.as_ref(), exec).await {
                    return ToolResult::error(&translated);
                }
            }
            ToolResult::error(&super::internal_error(exec, &format!("{error:#?}")))
        }
        Err(panic) => ToolResult::error(&panicked(exec, &*panic)),
    }
}

pub(crate) fn panicked(
    exec: &crate::ExecutionContext,
    panic: &(dyn std::any::Any + Send),
) -> ToolError {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".to_owned());
    super::internal_error(exec, &format!("panic: {text}"))
}

fn deadline_error(spec: &crate::ToolSpec) -> ToolError {
    ToolError::new(
        ErrorKind::Internal,
        format!(
            "{} took longer than its deadline of {} seconds; nothing was done",
            spec.name(),
            spec.time_limit().as_secs()
        ),
        "Try again later, or narrow the request",
    )
    .detail("retry_after_seconds", 30)
    .detail("deadline_seconds", spec.time_limit().as_secs())
}

/// An admission not yet answered. When the call is dropped before the answer (its client went
/// away), the transaction may still land and take a slot no one will give back; dropping this
/// gives back every slot the call could have taken (each delete only removes a slot naming
/// this call), at once and again once that transaction has surely ended.
struct Unanswered<'s> {
    server: &'s crate::server::Server,
    caller: &'s crate::Caller,
    ask: gates::Ask<'s>,
    answered: bool,
}

/// How long a dropped call's admission may still be on its way to the store: past every
/// backend's bound on one store call.
const ADMISSION_IN_FLIGHT: std::time::Duration = std::time::Duration::from_secs(10);

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        let gates = &self.server.config().gates;
        let slots = gates::possible_slots(gates, self.caller, &self.ask);
        if slots.is_empty() {
            return;
        }
        let store = std::sync::Arc::clone(&gates.store);
        // Where the answer waits for deferred work (Lambda), the second pass would hold it
        // for ten seconds: there the slot's lease frees what lands after the first.
        let runtime = &self.server.config().runtime;
        let later =
            (!runtime.answer_waits_for_deferred).then(|| self.server.sleep(ADMISSION_IN_FLIGHT));
        let give_back = async move {
            let release_all = || {
                let each = slots
                    .iter()
                    .map(|slot| gates::release(std::sync::Arc::clone(&store), slot.clone()));
                futures_util::future::join_all(each)
            };
            release_all().await;
            if let Some(wait) = later {
                wait.await;
                release_all().await;
            }
        };
        (self.server.config().runtime.defer.0)(Box::pin(give_back));
    }
}
