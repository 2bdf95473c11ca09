//! The kill switch (global) and agent access (per tenant).
//!
//! Read on every request by the authenticator, and checked again inside every write's
//! transaction through [`write_guards`], so a write in flight when a switch flips does not
//! commit.

use std::sync::Arc;

use store::{Condition, ConditionCheck, Item, Put, Store, TransactOp, Value};

use crate::{Actor, AuditEntry, IdentityError, keys};

/// Agent access of a tenant that never set it. Defined here and nowhere else.
pub const AGENT_ACCESS_DEFAULT: bool = true;
/// What clients are told to wait when a switch is off.
pub const RETRY_AFTER_SECONDS: u64 = 300;

/// Whether the global switch item says "on" (agents stopped).
pub fn global_is_on(item: Option<&Item>) -> bool {
    matches!(item.and_then(|i| i.get("on")), Some(Value::Bool(true)))
}

/// Whether a tenant's switch item allows agents.
pub fn tenant_allows(item: Option<&Item>) -> bool {
    match item.and_then(|i| i.get("enabled")) {
        Some(Value::Bool(enabled)) => *enabled,
        _ => AGENT_ACCESS_DEFAULT,
    }
}

/// Condition checks to put in every MCP write transaction of `tenant`: the global switch is
/// not on, and the tenant's agent access is not off.
pub fn write_guards(tenant: &str) -> Vec<TransactOp> {
    let not_killed = Condition::eq("on", Value::Bool(true)).not();
    let tenant_open = if AGENT_ACCESS_DEFAULT {
        Condition::eq("enabled", Value::Bool(false)).not()
    } else {
        Condition::eq("enabled", Value::Bool(true))
    };
    vec![
        ConditionCheck::new(keys::global_switch(), not_killed).into(),
        ConditionCheck::new(keys::tenant_switch(tenant), tenant_open).into(),
    ]
}

/// Sets the switches, each change audited in the same transaction.
#[derive(Debug, Clone)]
pub struct SwitchService {
    store: Arc<dyn Store>,
}

impl SwitchService {
    /// The service over `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        SwitchService { store }
    }

    /// Turns the global kill switch on (agents stopped) or off. `reason` is required.
    pub async fn set_global(
        &self,
        actor: &Actor,
        on: bool,
        reason: &str,
    ) -> Result<(), IdentityError> {
        if reason.trim().is_empty() {
            return Err(IdentityError::Invalid(
                "a reason is required to flip the kill switch".into(),
            ));
        }
        let at = crate::now_rfc3339();
        let mut item = Item::new();
        item.insert("on".into(), Value::Bool(on));
        item.insert("reason".into(), Value::s(reason.trim()));
        item.insert("actor".into(), Value::s(&actor.member));
        item.insert("at".into(), Value::s(&at));
        let audit = AuditEntry {
            tenant: "system".into(),
            actor: actor.member.clone(),
            channel: actor.channel.clone(),
            action: if on {
                "kill_switch.on".into()
            } else {
                "kill_switch.off".into()
            },
            outcome: "ok".into(),
            ids: Vec::new(),
            at,
        };
        self.store
            .transact_write(vec![
                Put::new(keys::global_switch(), item).into(),
                audit.op(),
            ])
            .await?;
        Ok(())
    }

    /// Whether the global kill switch is on.
    pub async fn global_on(&self) -> Result<bool, IdentityError> {
        Ok(global_is_on(
            self.store.get(&keys::global_switch()).await?.as_ref(),
        ))
    }

    /// Turns agent access of the actor's tenant on or off.
    pub async fn set_agent_access(
        &self,
        actor: &Actor,
        enabled: bool,
    ) -> Result<(), IdentityError> {
        let at = crate::now_rfc3339();
        let mut item = Item::new();
        item.insert("enabled".into(), Value::Bool(enabled));
        item.insert("actor".into(), Value::s(&actor.member));
        item.insert("at".into(), Value::s(&at));
        let audit = AuditEntry {
            tenant: actor.tenant.clone(),
            actor: actor.member.clone(),
            channel: actor.channel.clone(),
            action: if enabled {
                "agent_access.on".into()
            } else {
                "agent_access.off".into()
            },
            outcome: "ok".into(),
            ids: Vec::new(),
            at,
        };
        self.store
            .transact_write(vec![
                Put::new(keys::tenant_switch(&actor.tenant), item).into(),
                audit.op(),
            ])
            .await?;
        Ok(())
    }
}
