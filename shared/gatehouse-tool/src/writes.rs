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

    /// For notify, wake, alerting and delete tools: what will happen, in one server-written
    /// sentence the person approves, and the exact content that will go out. The pipeline
    /// stores this as a pending action; only `confirm_action` executes it, and only while a
    /// fresh preparation yields the same content.
    pub fn preview(&self, summary: impl Into<String>, content: serde_json::Value) {
        self.lock().preview = Some((summary.into(), content));
    }

    /// Names a public id this call changed (recorded in the audit row).
    pub fn touch(&self, public_id: impl Into<String>) {
        self.lock().ids.push(public_id.into());
    }

    /// Names the recipient of a message this call sends (once per message): executing a
    /// notify action counts its messages against each recipient's limit (ADR 45). A notify
    /// tool that names none is counted per record it touches.
    pub fn notify(&self, recipient: impl Into<String>) {
        self.lock().recipients.push(recipient.into());
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
