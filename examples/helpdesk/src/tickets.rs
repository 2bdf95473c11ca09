//! Tickets: what a customer wrote (third-party text, always handed out wrapped as untrusted),
//! its subject and customer, whether it is open and whether its alerts are muted, and a version
//! that every change names. Reads go to the store; changes are planned as store operations the
//! pipeline commits with the call's gates, never written here.

use gatehouse_server::store;
use gatehouse_tool::TenantId;
use std::sync::Arc;

use store::{Condition, Item, Key, Put, Query, Store, TransactOp, Update, UpdateAction, Value};

/// The handle prefix of tickets (`tkt_...`).
pub const PREFIX: &str = "tkt";

gatehouse_tool::typed_id!(
    /// A ticket's id (its handle without `tkt_`), as a type: the functions that name a ticket take
    /// it, so that a tenant's id or a customer's address cannot be passed where a ticket is meant.
    /// Made by the platform's `typed_id!` (as `TenantId` is): its text underneath, made only by
    /// name (`new`) and given up only by name (`as_str`, `into_string`, `Display`).
    TicketId
);

/// What went wrong with a ticket, in the helpdesk's own terms; the tools' exception handlers
/// turn these into errors a model can act on.
#[derive(Debug, thiserror::Error)]
pub enum HelpdeskError {
    /// No such ticket in this workspace.
    #[error("there is no ticket {0} in this workspace")]
    NotFound(String),
    /// The ticket is closed: no reply, escalation or credit goes out for it.
    #[error("ticket {0} is closed")]
    Closed(String),
    /// The ticket changed since the caller read it.
    #[error("ticket {handle} changed since version {sent}; it is at version {current}")]
    Stale {
        /// The ticket.
        handle: String,
        /// The version the caller sent.
        sent: i64,
        /// The version now.
        current: i64,
    },
    /// The store failed.
    #[error("the store failed: {0}")]
    Store(#[from] store::StoreError),
}

/// A ticket as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ticket {
    /// The id (the handle without `tkt_`).
    pub id: TicketId,
    /// One line the agent or the customer gave it.
    pub subject: String,
    /// The customer's email address.
    pub customer: String,
    /// What the customer wrote (third-party text).
    pub body: String,
    /// Open or closed.
    pub open: bool,
    /// Whether its alerts are muted.
    pub muted: bool,
    /// Changes so far.
    pub version: i64,
}

impl Ticket {
    /// The ticket's handle.
    pub fn handle(&self) -> String {
        format!("{PREFIX}_{}", self.id)
    }

    fn read(id: TicketId, item: &Item) -> Ticket {
        let text = |k: &str| {
            item.get(k)
                .and_then(Value::as_s)
                .unwrap_or_default()
                .to_owned()
        };
        Ticket {
            id,
            subject: text("subject"),
            customer: text("customer"),
            body: text("body"),
            open: text("status") != "closed",
            muted: item.get("muted") == Some(&Value::Bool(true)),
            version: item
                .get("version")
                .and_then(Value::as_n)
                .and_then(|n| n.as_str().parse().ok())
                .unwrap_or(1),
        }
    }
}

/// A workspace's tickets.
pub fn partition(tenant: &TenantId) -> String {
    format!("{tenant}#ticket")
}

/// One ticket of `tenant`.
pub fn key(tenant: &TenantId, id: &TicketId) -> Key {
    Key::new(partition(tenant), id.as_str())
}

/// The claim an open ticket holds on its customer and subject: one open ticket per question.
fn claim_key(tenant: &TenantId, customer: &str, subject: &str) -> Key {
    Key::new(
        format!("{tenant}#ticketclaim"),
        format!(
            "{}\u{1f}{}",
            customer.to_lowercase(),
            subject.trim().to_lowercase()
        ),
    )
}

/// The key of the record a text is the handle of (the read-ahead of calls that name tickets).
pub fn of_handle(tenant: &TenantId, text: &str) -> Option<Key> {
    let id = text.strip_prefix(PREFIX)?.strip_prefix('_')?;
    let plain = !id.is_empty() && id.len() <= 32 && id.chars().all(|c| c.is_ascii_alphanumeric());
    plain.then(|| key(tenant, &TicketId::new(id)))
}

/// The tickets of one workspace.
#[derive(Debug, Clone)]
pub struct Tickets {
    store: Arc<dyn Store>,
}

impl Tickets {
    /// Tickets in `store`.
    pub fn new(store: Arc<dyn Store>) -> Tickets {
        Tickets { store }
    }

    /// The ticket `id` of `tenant`.
    pub async fn get(&self, tenant: &TenantId, id: &TicketId) -> Result<Ticket, HelpdeskError> {
        match self.store.get(&key(tenant, id)).await? {
            Some(item) => Ok(Ticket::read(id.clone(), &item)),
            None => Err(HelpdeskError::NotFound(format!("{PREFIX}_{id}"))),
        }
    }

    /// An open ticket at `version`.
    pub async fn open_at(
        &self,
        tenant: &TenantId,
        id: &TicketId,
        version: i64,
    ) -> Result<Ticket, HelpdeskError> {
        let ticket = self.get(tenant, id).await?;
        if !ticket.open {
            return Err(HelpdeskError::Closed(ticket.handle()));
        }
        if ticket.version != version {
            return Err(HelpdeskError::Stale {
                handle: ticket.handle(),
                sent: version,
                current: ticket.version,
            });
        }
        Ok(ticket)
    }

    /// Up to `limit` tickets of `tenant`, open ones only unless `closed_too`.
    pub async fn list(
        &self,
        tenant: &TenantId,
        closed_too: bool,
        limit: usize,
    ) -> Result<Vec<Ticket>, HelpdeskError> {
        let mut found = Vec::new();
        let mut cursor = None;
        loop {
            let page = self
                .store
                .query(Query::partition(partition(tenant)).limit(100).after(cursor))
                .await?;
            found.extend(
                page.items
                    .iter()
                    .map(|(k, item)| Ticket::read(TicketId::new(&k.sk), item))
                    .filter(|t| closed_too || t.open),
            );
            match page.next {
                Some(next) if found.len() < limit => cursor = Some(next),
                _ => break,
            }
        }
        found.truncate(limit);
        Ok(found)
    }
}

/// A change that holds only while the ticket is still at `version`.
fn at_version(tenant: &TenantId, ticket: &Ticket, actions: Vec<UpdateAction>) -> Update {
    let mut actions = actions;
    actions.push(UpdateAction::Add(
        "version".into(),
        store::Number::from(1_i64),
    ));
    Update::new(key(tenant, &ticket.id), actions)
        .when(Condition::eq("version", Value::n(ticket.version)))
}

/// The writes that open a ticket, and its claim on its customer and subject.
pub fn create(tenant: &TenantId, ticket: &Ticket) -> [TransactOp; 2] {
    let mut item = Item::new();
    item.insert("subject".into(), Value::s(&ticket.subject));
    item.insert("customer".into(), Value::s(&ticket.customer));
    item.insert("body".into(), Value::s(&ticket.body));
    item.insert("status".into(), Value::s("open"));
    item.insert("version".into(), Value::n(1));
    let mut claim = Item::new();
    claim.insert("holder".into(), Value::s(ticket.handle()));
    [
        Put::new(key(tenant, &ticket.id), item)
            .when(Condition::item_not_exists())
            .into(),
        Put::new(claim_key(tenant, &ticket.customer, &ticket.subject), claim)
            .when(Condition::item_not_exists())
            .return_old_on_failure()
            .into(),
    ]
}

/// The write that gives up an open ticket's claim on its customer and subject.
fn release(tenant: &TenantId, ticket: &Ticket) -> TransactOp {
    store::Delete::new(claim_key(tenant, &ticket.customer, &ticket.subject))
        .when(Condition::eq("holder", Value::s(ticket.handle())))
        .into()
}

/// The writes that close a ticket and give up its claim.
pub fn close(tenant: &TenantId, ticket: &Ticket) -> [TransactOp; 2] {
    let set = vec![UpdateAction::Set("status".into(), Value::s("closed"))];
    [
        at_version(tenant, ticket, set).into(),
        release(tenant, ticket),
    ]
}

/// The write that mutes a ticket's alerts.
pub fn mute(tenant: &TenantId, ticket: &Ticket) -> TransactOp {
    let set = vec![UpdateAction::Set("muted".into(), Value::Bool(true))];
    at_version(tenant, ticket, set).into()
}

/// The writes that delete a ticket (and give up its claim while it is open).
pub fn delete(tenant: &TenantId, ticket: &Ticket) -> Vec<TransactOp> {
    let mut ops: Vec<TransactOp> = vec![
        store::Delete::new(key(tenant, &ticket.id))
            .when(Condition::eq("version", Value::n(ticket.version)))
            .into(),
    ];
    if ticket.open {
        ops.push(release(tenant, ticket));
    }
    ops
}

/// The write that records that `ticket` was answered (its version moves, so that a reply
/// prepared against an older one is refused).
pub fn answered(tenant: &TenantId, ticket: &Ticket) -> TransactOp {
    at_version(tenant, ticket, Vec::new()).into()
}
