//! The outbox's messages as stored (a platform primitive, ADR 49): a product queues a message
//! in the same transaction as the change that causes it, with an entry in the due index that
//! the dispatcher's sweep reads. This crate owns the message format and every change of a
//! message's state; the dispatcher (the `outbox` crate) decides when to make them, and sends.
//! Nothing here sends anything.
//!
//! A message goes `queued` -> `sending` (claimed for a lease) -> `sent`, or -> `failed` (retried
//! when due) -> ... -> `dead` after too many failures, from where an operator may requeue it.
//! Each state change of a claimed message holds only while the claim is still its own.

pub mod keys;

use store::{Condition, Item, Key, Number, Put, TransactOp, Update, UpdateAction, Value};

/// Where a message stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Written, not tried yet.
    Queued,
    /// Claimed by a delivery in progress (until its lease lapses).
    Sending,
    /// Delivered.
    Sent,
    /// The last delivery failed; retried when due.
    Failed,
    /// Failed too often (or refused for good): waits for an operator.
    Dead,
}

impl Status {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Queued => "queued",
            Status::Sending => "sending",
            Status::Sent => "sent",
            Status::Failed => "failed",
            Status::Dead => "dead",
        }
    }

    /// The status a stored name names.
    pub fn parse(text: &str) -> Option<Self> {
        [
            Status::Queued,
            Status::Sending,
            Status::Sent,
            Status::Failed,
            Status::Dead,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }
}

/// A message in the outbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The tenant.
    pub tenant: store::TenantId,
    /// The message id.
    pub id: String,
    /// The recipient's address.
    pub to: String,
    /// The subject.
    pub subject: String,
    /// The text.
    pub body: String,
    /// The record it is about (a handle).
    pub about: String,
    /// Where it stands.
    pub status: Status,
    /// Failed deliveries so far.
    pub attempts: u32,
    /// The claim of the delivery in progress.
    pub claim: Option<String>,
    /// When the last delivery failed, and why.
    pub last_error: Option<String>,
}

impl Message {
    /// The message stored at `key`, if `item` is one.
    pub fn read(key: &Key, item: &Item) -> Option<Message> {
        let tenant = keys::outbox_tenant(&key.pk)?;
        let s = |k: &str| item.get(k).and_then(Value::as_s).map(str::to_owned);
        Some(Message {
            tenant,
            id: key.sk.clone(),
            to: s("to")?,
            subject: s("subject").unwrap_or_default(),
            body: s("body").unwrap_or_default(),
            about: s("about").unwrap_or_default(),
            status: Status::parse(&s("status")?)?,
            attempts: number(item, "attempts")
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0),
            claim: s("claim"),
            last_error: s("last_error"),
        })
    }

    /// The key a receiver drops repeats by: the same for every attempt of this message.
    pub fn idempotency_key(&self) -> String {
        format!("{}/{}", self.tenant, self.id)
    }

    /// Where the message is stored.
    pub fn key(&self) -> Key {
        keys::outbox(&self.tenant, &self.id)
    }
}

/// A due-index entry: a message not yet sent, and when it should next be tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Due {
    /// Where the message is stored.
    pub message: Key,
    /// When it is next due (Unix seconds).
    pub at: i64,
    /// Whether it is dead (waiting for an operator) rather than due.
    pub dead: bool,
}

impl Due {
    /// The due-index entry stored at `key`.
    pub fn read(key: &Key, item: &Item) -> Option<Due> {
        let (tenant, id) = key.sk.split_once('#')?;
        Some(Due {
            message: keys::outbox(&store::TenantId::new(tenant), id),
            at: number(item, "due").unwrap_or(0),
            dead: item.get("state").and_then(Value::as_s) == Some("dead"),
        })
    }
}

fn number(item: &Item, name: &str) -> Option<i64> {
    item.get(name)
        .and_then(Value::as_n)
        .and_then(|n| n.as_str().parse().ok())
}

/// What a message says and where it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing<'a> {
    /// The recipient's address.
    pub to: &'a str,
    /// The subject.
    pub subject: &'a str,
    /// The text.
    pub body: &'a str,
    /// The record it is about (a handle).
    pub about: &'a str,
}

/// The two writes that queue a message `id` of `tenant`: the message and its due-index entry,
/// each on the condition that nothing holds its key (a repeated id fails the transaction).
/// Commit them with the change that causes the message.
pub fn queue(tenant: &store::TenantId, id: &str, message: &Outgoing<'_>) -> [Put; 2] {
    let mut item = Item::new();
    item.insert("to".into(), Value::s(message.to));
    item.insert("subject".into(), Value::s(message.subject));
    item.insert("body".into(), Value::s(message.body));
    item.insert("about".into(), Value::s(message.about));
    item.insert("status".into(), Value::s(Status::Queued.as_str()));
    item.insert("attempts".into(), Value::n(0));
    let mut due = Item::new();
    due.insert("due".into(), Value::n(0));
    due.insert("state".into(), Value::s("due"));
    [
        Put::new(keys::outbox(tenant, id), item).when(Condition::item_not_exists()),
        Put::new(keys::outbox_due(tenant, id), due).when(Condition::item_not_exists()),
    ]
}

/// Claims `message` for a delivery (`claim`, at `now`) if it is queued, failed and due, or
/// claimed by a delivery whose lease lapsed (`lapsed_before`).
pub fn claim(key: &Key, claim: &str, now: i64, lapsed_before: i64) -> Update {
    let is = |s: Status| Condition::eq("status", Value::s(s.as_str()));
    let due = Condition::NotExists("next_attempt_at".into()).or(Condition::Cmp(
        "next_attempt_at".into(),
        store::CmpOp::Le,
        Value::n(now),
    ));
    let lapsed = Condition::Cmp(
        "claimed_at".into(),
        store::CmpOp::Lt,
        Value::n(lapsed_before),
    );
    let claimable = is(Status::Queued)
        .or(is(Status::Failed).and(due))
        .or(is(Status::Sending).and(lapsed));
    Update::new(
        key.clone(),
        vec![
            UpdateAction::Set("status".into(), Value::s(Status::Sending.as_str())),
            UpdateAction::Set("claim".into(), Value::s(claim)),
            UpdateAction::Set("claimed_at".into(), Value::n(now)),
        ],
    )
    .when(Condition::item_exists().and(claimable))
}

fn while_claimed(message: &Message, claim: &str, actions: Vec<UpdateAction>) -> TransactOp {
    Update::new(message.key(), actions)
        .when(Condition::eq("claim", Value::s(claim)))
        .into()
}

/// The message was delivered: marked sent, out of the due index.
pub fn sent(message: &Message, claim: &str, now: i64) -> Vec<TransactOp> {
    vec![
        while_claimed(
            message,
            claim,
            vec![
                UpdateAction::Set("status".into(), Value::s(Status::Sent.as_str())),
                UpdateAction::Set("delivered_at".into(), Value::n(now)),
                UpdateAction::Remove("claim".into()),
            ],
        ),
        store::Delete::new(keys::outbox_due(&message.tenant, &message.id)).into(),
    ]
}

/// The delivery failed: retried at `next` (or dead, when `next` is `None`), with the reason.
pub fn failed(message: &Message, claim: &str, next: Option<i64>, error: &str) -> Vec<TransactOp> {
    let status = if next.is_some() {
        Status::Failed
    } else {
        Status::Dead
    };
    let mut actions = vec![
        UpdateAction::Set("status".into(), Value::s(status.as_str())),
        UpdateAction::Add("attempts".into(), Number::from(1_i64)),
        UpdateAction::Set("last_error".into(), Value::s(error)),
        UpdateAction::Remove("claim".into()),
    ];
    let mut due = vec![];
    match next {
        Some(at) => {
            actions.push(UpdateAction::Set("next_attempt_at".into(), Value::n(at)));
            due.push(UpdateAction::Set("due".into(), Value::n(at)));
        }
        None => due.push(UpdateAction::Set("state".into(), Value::s("dead"))),
    }
    vec![
        while_claimed(message, claim, actions),
        Update::new(keys::outbox_due(&message.tenant, &message.id), due).into(),
    ]
}

/// A dead message goes back to the queue, its failures forgotten (an operator's retry).
pub fn requeue(message: &Message) -> Vec<TransactOp> {
    vec![
        Update::new(
            message.key(),
            vec![
                UpdateAction::Set("status".into(), Value::s(Status::Queued.as_str())),
                UpdateAction::Set("attempts".into(), Value::n(0)),
                UpdateAction::Remove("next_attempt_at".into()),
            ],
        )
        .when(Condition::eq("status", Value::s(Status::Dead.as_str())))
        .into(),
        Update::new(
            keys::outbox_due(&message.tenant, &message.id),
            vec![
                UpdateAction::Set("state".into(), Value::s("due")),
                UpdateAction::Set("due".into(), Value::n(0)),
            ],
        )
        .into(),
    ]
}
