//! The writes a tool plans, committed by the pipeline in one transaction with the replay
//! record, the audit row and the switch checks.
//!
//! A tool (through the product's services) never commits anything itself: it adds operations
//! here, and the pipeline commits them only if the call succeeds, together with everything the
//! gates need. So a write and its replay record cannot be separated by a crash, and a write in
//! flight when the kill switch flips does not commit.

use std::sync::{Arc, Mutex};

use store::{Item, Key, TransactOp};

use crate::ToolError;

type Explain = Box<dyn Fn(Option<&Item>) -> ToolError + Send + Sync>;

/// One planned operation and what to tell the model if its condition fails at commit.
pub struct Planned {
    /// The write.
    pub op: TransactOp,
    /// What to tell the model when its condition fails at commit.
    pub on_conflict: Option<Explain>,
}

impl Planned {
    /// An operation whose failure needs no explanation of its own.
    pub fn new(op: impl Into<TransactOp>) -> Self {
        Planned {
            op: op.into(),
            on_conflict: None,
        }
    }
}

/// Everything a call planned: its writes, the ids it made, its messages' recipients and its
/// preview.
#[derive(Default)]
pub struct WriteSet {
    /// The writes, in the order the body planned them.
    pub ops: Vec<Planned>,
    /// The ids of the records the call made or changed (for the audit row).
    pub ids: Vec<String>,
    /// Who the call's messages go to, one entry per message (counted per recipient, ADR 45).
    pub recipients: Vec<String>,
    /// For two-step tools: the server-written summary and the content that will go out.
    pub preview: Option<(String, serde_json::Value)>,
}

impl std::fmt::Debug for Planned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Planned")
            .field("op", &self.op)
            .field("explained", &self.on_conflict.is_some())
            .finish()
    }
}

impl std::fmt::Debug for WriteSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteSet")
            .field("ops", &self.ops)
            .field("ids", &self.ids)
            .field("recipients", &self.recipients.len())
            .field("preview", &self.preview.is_some())
            .finish()
    }
}

/// The writes of one call.
impl WriteSet {
    /// A set of one operation.
    pub fn of(op: impl Into<TransactOp>) -> Self {
        WriteSet {
            ops: vec![Planned::new(op)],
            ..WriteSet::default()
        }
    }
}

/// Where a tool's body plans its writes: the server commits them after the body returns,
/// with its own gate items, in one transaction (the body never writes itself).
#[derive(Clone, Default)]
pub struct Writes {
    inner: Arc<Mutex<WriteSet>>,
}

impl std::fmt::Debug for Writes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = self.lock();
        f.debug_struct("Writes")
            .field("ops", &set.ops.len())
            .field("ids", &set.ids)
            .finish()
    }
}

impl Writes {
    fn lock(&self) -> std::sync::MutexGuard<'_, WriteSet> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Plans an operation whose condition, if it has one, the service checked already; a
    /// failure at commit means a concurrent change and becomes a `conflict` error.
    pub fn push(&self, op: impl Into<TransactOp>) {
        self.lock().ops.push(Planned {
            op: op.into(),
            on_conflict: None,
        });
    }

    /// Plans an operation and says what its failed condition means (given the current item
    /// when the operation asked for it).
    pub fn push_or(
        &self,
        op: impl Into<TransactOp>,
        on_conflict: impl Fn(Option<&Item>) -> ToolError + Send + Sync + 'static,
    ) {
        self.lock().ops.push(Planned {
            op: op.into(),
            on_conflict: Some(Box::new(on_conflict)),
        });
    }

    /// Claims a unique business key for `holder` (a public id): the claim item is written in
    /// the same transaction as the create, so two creates with one key cannot both commit.
    /// `on_taken` gets the current holder.
    pub fn claim(
        &self,
        key: Key,
        holder: &str,
        on_taken: impl Fn(&str) -> ToolError + Send + Sync + 'static,
    ) {
        let mut item = Item::new();
        item.insert("holder".into(), store::Value::s(holder));
        let op = store::Put::new(key, item)
            .when(store::Condition::item_not_exists())
            .return_old_on_failure();
        self.push_or(op, move |current| {
            let holder = current
                .and_then(|i| i.get("holder"))
                .and_then(store::Value::as_s)
                .unwrap_or("an existing object");
            on_taken(holder)
        });
    }

    /// Names a public id this call changed (recorded in the audit row).
    pub fn touch(&self, public_id: impl Into<String>) {
        self.lock().ids.push(public_id.into());
    }

    /// Whether anything was planned.
    pub fn is_empty(&self) -> bool {
        self.lock().ops.is_empty()
    }

    #[doc(hidden)]
    pub fn take(&self) -> WriteSet {
        std::mem::take(&mut *self.lock())
    }
}

/// A read's plan: nothing. A read tool's `ctx.writes` has no method, so a read cannot plan a
/// write:
///
/// ```compile_fail
/// # fn body(ctx: gatehouse_tool::ToolContext<gatehouse_tool::effects::Read>, op: store::Delete) {
/// ctx.writes.push(op);
/// # }
/// ```
///
/// where a silent write's can:
///
/// ```
/// # fn body(ctx: gatehouse_tool::ToolContext<gatehouse_tool::effects::SilentWrite>, op: store::Delete) {
/// ctx.writes.push(op);
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct NoWrites;

/// A two-step tool's plan (notify, wake, alerting, delete): the writes, and the preview a
/// person approves. Its body runs twice: called, it prepares (its writes are dropped, its
/// preview is stored as a pending action); confirmed, it runs again and its writes commit only
/// if the preview's content is the same.
///
/// A silent write cannot preview:
///
/// ```compile_fail
/// # fn body(ctx: gatehouse_tool::ToolContext<gatehouse_tool::effects::SilentWrite>) {
/// ctx.writes.preview("Send it", serde_json::json!({}));
/// # }
/// ```
///
/// and a two-step body answers with its preview:
///
/// ```
/// # use gatehouse_tool::{Prepared, Success, ToolContext, effects::Notify};
/// fn body(ctx: ToolContext<Notify>) -> Prepared<()> {
///     let preview = ctx.writes.preview("Send it", serde_json::json!({}));
///     preview.answer(Success::new("Sent.", ()))
/// }
/// ```
#[derive(Debug, Clone, Default)]
pub struct TwoStepWrites(pub(crate) Writes);

impl TwoStepWrites {
    /// What will happen, in one server-written sentence the person approves, and the exact
    /// content that will go out. The pipeline stores this as a pending action; only
    /// `confirm_action` (or an approval) executes it, and only while a fresh preparation
    /// yields the same content. The answer it gives back is what the body returns
    /// ([`Preview::answer`]): a two-step body cannot succeed without one.
    #[must_use = "a two-step body returns its preview: `Ok(preview.answer(success))`"]
    pub fn preview(&self, summary: impl Into<String>, content: serde_json::Value) -> Preview {
        self.0.lock().preview = Some((summary.into(), content));
        Preview(())
    }

    /// Names the recipient of a message this call sends (once per message): executing a
    /// notify action counts its messages against each recipient's limit (ADR 45). A notify
    /// tool that names none is counted per record it touches.
    pub fn notify(&self, recipient: impl Into<String>) {
        self.0.lock().recipients.push(recipient.into());
    }
}

impl std::ops::Deref for TwoStepWrites {
    type Target = Writes;

    fn deref(&self) -> &Writes {
        &self.0
    }
}

/// Proof that a two-step body planned its preview ([`TwoStepWrites::preview`]).
#[derive(Debug)]
pub struct Preview(());

impl Preview {
    /// The body's answer: its success, after its preview.
    pub fn answer<O>(self, success: crate::Success<O>) -> Prepared<O> {
        Prepared(success)
    }
}

/// What a two-step body returns: its success, made only from a [`Preview`]. A body that
/// returns a success without one does not compile:
///
/// ```compile_fail
/// # use gatehouse_tool::{Prepared, Success};
/// fn body() -> Prepared<()> {
///     Success::new("Sent.", ())
/// }
/// ```
#[derive(Debug)]
pub struct Prepared<O>(crate::Success<O>);

impl<O> Prepared<O> {
    pub(crate) fn into_success(self) -> crate::Success<O> {
        self.0
    }
}
