//! Audit rows: who did what, through which channel, with which outcome. Never arguments or
//! secrets. A row is written as one operation of the transaction that makes the change.

use store::{Item, Key, Put, Query, Store, StoreError, TransactOp, Value};

use crate::keys;

/// The right that reading a whole workspace's audit trail needs (every connection's changes;
/// the product's catalogue grants it).
pub const AUDIT_READ: &str = "audit:read";

/// Where an action came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Channel {
    /// An MCP call through a connection.
    Mcp {
        /// The connection's id.
        connection: String,
        /// The client name of the connection.
        client: String,
    },
    /// The `gatehouse` command line (an operator).
    Cli,
    /// The product's web pages.
    Web,
    /// The product's JSON API.
    Api,
}

impl Channel {
    /// The channel's name in audit rows.
    pub fn name(&self) -> &'static str {
        match self {
            Channel::Mcp { .. } => "mcp",
            Channel::Cli => "cli",
            Channel::Web => "web",
            Channel::Api => "api",
        }
    }
}

/// One audit row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    /// The tenant (or `system`).
    pub tenant: store::TenantId,
    /// Who acted.
    pub actor: store::MemberId,
    /// Through which channel.
    pub channel: Channel,
    /// What was done (a tool name or a service action).
    pub action: String,
    /// `ok`, `refused`, ...
    pub outcome: String,
    /// How an executed action was approved: `client_prompt`, `elicitation` or
    /// `product_page:<member>` (ADR 15); `None` for everything that needs no approval.
    pub approval: Option<String>,
    /// Public ids of the objects concerned.
    pub ids: Vec<String>,
    /// Why, for the actions that ask for a reason (the kill switch).
    pub reason: Option<String>,
    /// When (RFC 3339).
    pub at: String,
}

impl AuditEntry {
    /// A successful change made now (by `clock`) by `actor` (a person through the CLI, a page
    /// or the API).
    pub fn by(
        actor: &crate::Actor,
        action: impl Into<String>,
        ids: Vec<String>,
        clock: &dyn outside::Clock,
    ) -> Self {
        AuditEntry {
            tenant: actor.tenant.clone(),
            actor: actor.member.clone(),
            channel: actor.channel.clone(),
            action: action.into(),
            outcome: "ok".into(),
            approval: None,
            ids,
            reason: None,
            at: crate::rfc3339_now(clock),
        }
    }

    /// The put that records this entry, told apart from rows of the same microsecond by a
    /// suffix drawn from `randomness`; include it in the change's transaction.
    pub fn op(&self, randomness: &dyn outside::Randomness) -> TransactOp {
        self.op_keyed(&outside::random_text(randomness, 8))
    }

    /// The write of this row, told apart from rows of the same microsecond by `suffix` (an
    /// MCP call's request id, drawn from the server's randomness).
    pub fn op_keyed(&self, suffix: &str) -> TransactOp {
        let key = Key::new(
            keys::audit_partition(&self.tenant),
            format!("{}#{suffix}", self.at),
        );
        let mut item = Item::new();
        item.insert("actor".into(), Value::s(self.actor.as_str()));
        item.insert("channel".into(), Value::s(self.channel.name()));
        if let Channel::Mcp { connection, client } = &self.channel {
            item.insert("connection".into(), Value::s(connection));
            item.insert("client".into(), Value::s(client));
        }
        item.insert("action".into(), Value::s(&self.action));
        item.insert("outcome".into(), Value::s(&self.outcome));
        if let Some(approval) = &self.approval {
            item.insert("approval".into(), Value::s(approval));
        }
        if let Some(reason) = &self.reason {
            item.insert("reason".into(), Value::s(reason));
        }
        item.insert(
            "ids".into(),
            Value::L(self.ids.iter().map(Value::s).collect()),
        );
        item.insert("at".into(), Value::s(&self.at));
        Put::new(key, item)
            .when(store::Condition::item_not_exists())
            .into()
    }

    fn from_item(tenant: &store::TenantId, item: &Item) -> Self {
        let s = |k: &str| {
            item.get(k)
                .and_then(Value::as_s)
                .unwrap_or_default()
                .to_owned()
        };
        let channel = match s("channel").as_str() {
            "mcp" => Channel::Mcp {
                connection: s("connection"),
                client: s("client"),
            },
            "web" => Channel::Web,
            "api" => Channel::Api,
            _ => Channel::Cli,
        };
        let ids = match item.get("ids") {
            Some(Value::L(list)) => list
                .iter()
                .filter_map(Value::as_s)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        AuditEntry {
            tenant: tenant.clone(),
            actor: store::MemberId::new(s("actor")),
            channel,
            action: s("action"),
            outcome: s("outcome"),
            approval: item
                .get("approval")
                .and_then(Value::as_s)
                .map(str::to_owned),
            ids,
            reason: item.get("reason").and_then(Value::as_s).map(str::to_owned),
            at: s("at"),
        }
    }
}

/// An audit row's approval path in words for people: `client_prompt` is "the client (its
/// prompt on confirm_action)", `product_page:ana` is "ana, in the product".
pub fn approval_words(label: &str) -> String {
    match label.split_once(':') {
        Some(("product_page", member)) => format!("{member}, in the product"),
        _ if label == "client_prompt" => "the client (its prompt on confirm_action)".into(),
        _ if label == "elicitation" => "the client's user (asked by the client)".into(),
        _ => label.to_owned(),
    }
}

/// The most recent audit rows of a tenant, newest first, optionally only one connection's.
pub async fn recent(
    store: &dyn Store,
    tenant: &store::TenantId,
    connection: Option<&store::ConnectionId>,
    limit: usize,
) -> Result<Vec<AuditEntry>, StoreError> {
    let mut out = Vec::new();
    let mut cursor = None;
    // Pages of 50, at most 10 pages: enough to find a connection's last changes in a busy
    // tenant without scanning its whole history.
    for _ in 0..10 {
        let page = store
            .query(
                Query::partition(keys::audit_partition(tenant))
                    .descending()
                    .limit(50)
                    .after(cursor),
            )
            .await?;
        for (_, item) in &page.items {
            let entry = AuditEntry::from_item(tenant, item);
            let matches = match (connection, &entry.channel) {
                (None, _) => true,
                (Some(c), Channel::Mcp { connection, .. }) => c.as_str() == connection,
                (Some(_), _) => false,
            };
            if matches {
                out.push(entry);
                if out.len() == limit {
                    return Ok(out);
                }
            }
        }
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    Ok(out)
}
