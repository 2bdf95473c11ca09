//! A change a service computed: the operations to commit together, and what each failed
//! condition means. Adapters commit it: MCP tools hand it to the pipeline (which adds the
//! replay record, the audit row and the switch checks), the JSON API and pages commit it with
//! their own audit row. So every adapter runs the same checks and the same write.

use store::{Item, TransactOp};

use crate::BookingError;

type Explain = Box<dyn Fn(Option<&Item>) -> BookingError + Send + Sync>;

/// One operation and what its failed condition means.
pub struct Op {
    /// The operation.
    pub op: TransactOp,
    /// What a failed condition means (given the current item when the operation asked).
    pub on_conflict: Explain,
}

impl std::fmt::Debug for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Op")
            .field("op", &self.op)
            .finish_non_exhaustive()
    }
}

/// A message a change sends, as the outbox will carry it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// The recipient.
    pub to: String,
    /// The subject.
    pub subject: String,
    /// The text.
    pub body: String,
}

/// A computed change and its result.
#[derive(Debug)]
pub struct Change<T> {
    /// The operations, all or nothing.
    pub ops: Vec<Op>,
    /// Public ids of the objects changed.
    pub ids: Vec<String>,
    /// Recipients of the outbox messages the change sends when committed (`notified`).
    pub notified: Vec<String>,
    /// The messages themselves, as written (for previews: a person approves the exact text).
    pub messages: Vec<Outgoing>,
    /// Whether its messages count against their recipients' limit (ADR 45). A cancellation's
    /// do not: a customer is always told their visit is off, and a full limit must not keep a
    /// booking the person decided to cancel.
    pub counted: bool,
    /// What the caller gets back.
    pub value: T,
}

impl<T> Change<T> {
    pub(crate) fn new(value: T) -> Self {
        Change {
            ops: Vec::new(),
            ids: Vec::new(),
            notified: Vec::new(),
            messages: Vec::new(),
            counted: true,
            value,
        }
    }

    pub(crate) fn push(
        &mut self,
        op: impl Into<TransactOp>,
        on_conflict: impl Fn(Option<&Item>) -> BookingError + Send + Sync + 'static,
    ) {
        self.ops.push(Op {
            op: op.into(),
            on_conflict: Box::new(on_conflict),
        });
    }

    /// Several changes as one, all or nothing (a batch: one transaction, so that a batch is
    /// never half done).
    pub fn merge(changes: Vec<Change<T>>) -> Change<Vec<T>> {
        let mut all = Change::new(Vec::with_capacity(changes.len()));
        for c in changes {
            all.ops.extend(c.ops);
            all.ids.extend(c.ids);
            all.notified.extend(c.notified);
            all.messages.extend(c.messages);
            all.counted &= c.counted;
            all.value.push(c.value);
        }
        all
    }

    /// Commits the change directly (adapters without a pipeline: the JSON API, pages, seeding),
    /// with `extra` operations such as their audit row.
    pub async fn commit(
        self,
        store: &dyn store::Store,
        extra: Vec<TransactOp>,
    ) -> Result<T, BookingError> {
        let offset = extra.len();
        let mut ops = extra;
        let mut explain = Vec::with_capacity(self.ops.len());
        for op in self.ops {
            ops.push(op.op);
            explain.push(op.on_conflict);
        }
        match store.transact_write(ops).await {
            Ok(()) => Ok(self.value),
            Err(store::StoreError::TransactionCancelled { reasons }) => {
                match store::CancelReason::first_failed(&reasons) {
                    Some((i, old)) if i >= offset => Err(explain[i - offset](old)),
                    Some(_) => Err(BookingError::Rejected(
                        "the change was refused by a concurrent update; try again".into(),
                    )),
                    None => Err(store::StoreError::TransactionCancelled { reasons }.into()),
                }
            }
            Err(e) => Err(e.into()),
        }
    }
}
