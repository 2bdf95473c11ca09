//! The kill switch (global) and agent access (per tenant).
//!
//! Read on every request by the authenticator, and checked again inside every write's
//! transaction through [`write_guards`], so a write in flight when a switch flips does not
//! commit.

use std::sync::Arc;

use mcp_pipeline::{ApprovalMode, EffectClass, ProductApproval};
use store::{
    Condition, ConditionCheck, Item, Put, Store, TenantId, TransactOp, Update, UpdateAction, Value,
};

use crate::{Actor, AuditEntry, Directory, IdentityError, keys};

/// The right that turning a workspace's agent access on or off and choosing its approval
/// modes needs (the product's catalog grants it; checked here, whatever the door).
pub const MANAGE_AGENT_ACCESS: &str = "agent_access:manage";

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

/// The attribute of a tenant's settings item that holds the approval mode of `class`.
fn approval_attribute(class: EffectClass) -> String {
    format!("approval_{}", mcp_pipeline::class_name(class))
}

/// The classes a tenant's settings item approves only in the product (ADR 15); every class
/// the item does not name is approved in the client.
pub fn approval_modes(item: Option<&Item>) -> ProductApproval {
    mcp_pipeline::APPROVAL_CLASSES
        .iter()
        .filter(|class| {
            item.and_then(|i| i.get(&approval_attribute(**class)))
                .and_then(Value::as_s)
                .and_then(ApprovalMode::parse)
                == Some(ApprovalMode::Product)
        })
        .fold(ProductApproval::NONE, |modes, class| modes.with(*class))
}

/// Condition checks to put in every MCP write transaction of `tenant`: the global switch is
/// not on, and the tenant's agent access is not off.
pub fn write_guards(tenant: &TenantId) -> Vec<TransactOp> {
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

/// Sets the switches, each change audited in the same transaction. A workspace's switches
/// change only for an active member holding [`MANAGE_AGENT_ACCESS`] (ADR 48).
#[derive(Debug, Clone)]
pub struct SwitchService {
    store: Arc<dyn Store>,
    directory: Arc<dyn Directory>,
    outside: outside::ClockAndRandomness,
}

/// The longest reason a flip of the kill switch keeps.
const MOST_REASON_CHARS: usize = 500;

impl SwitchService {
    /// The service over `store`, asking `directory` for members' live rights, stamping its
    /// changes with `outside`'s time and ids.
    pub fn new(
        store: Arc<dyn Store>,
        directory: Arc<dyn Directory>,
        outside: outside::ClockAndRandomness,
    ) -> Self {
        SwitchService {
            store,
            directory,
            outside,
        }
    }

    /// Refuses an actor who is not an active member of their workspace holding
    /// [`MANAGE_AGENT_ACCESS`]; `what` names the change for the refusal.
    async fn check_manager(&self, actor: &Actor, what: &str) -> Result<(), IdentityError> {
        let member = self.directory.member(&actor.tenant, &actor.member).await?;
        if member.is_some_and(|m| m.active && m.rights.contains(MANAGE_AGENT_ACCESS)) {
            return Ok(());
        }
        Err(IdentityError::Forbidden(format!(
            "{} may not change {what} in {}: it needs the {MANAGE_AGENT_ACCESS} right",
            actor.member, actor.tenant
        )))
    }

    /// Turns the global kill switch on (agents stopped) or off. `reason` is required.
    pub async fn set_global(
        &self,
        actor: &Actor,
        on: bool,
        reason: &str,
    ) -> Result<(), IdentityError> {
        let reason = reason.trim();
        if reason.is_empty() {
            return Err(IdentityError::Invalid(
                "a reason is required to flip the kill switch".into(),
            ));
        }
        if reason.chars().count() > MOST_REASON_CHARS {
            return Err(IdentityError::Invalid(format!(
                "the reason has {} characters; at most {MOST_REASON_CHARS} are allowed: shorten it",
                reason.chars().count()
            )));
        }
        let at = crate::rfc3339_now(self.outside.clock.as_ref());
        let mut item = Item::new();
        item.insert("on".into(), Value::Bool(on));
        item.insert("reason".into(), Value::s(reason));
        item.insert("actor".into(), Value::s(actor.member.as_str()));
        item.insert("at".into(), Value::s(&at));
        let audit = AuditEntry {
            tenant: crate::system(),
            actor: actor.member.clone(),
            channel: actor.channel.clone(),
            action: if on {
                "kill_switch.on".into()
            } else {
                "kill_switch.off".into()
            },
            outcome: "ok".into(),
            approval: None,
            ids: Vec::new(),
            // In the trail too: the switch's item keeps only the last flip's reason.
            reason: Some(reason.to_owned()),
            at,
        };
        self.store
            .transact_write(vec![
                Put::new(keys::global_switch(), item).into(),
                audit.op(self.outside.randomness.as_ref()),
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

    /// Whether `tenant`'s agents may call (its agent access is on).
    pub async fn agent_access(&self, tenant: &TenantId) -> Result<bool, IdentityError> {
        Ok(tenant_allows(
            self.store.get(&keys::tenant_switch(tenant)).await?.as_ref(),
        ))
    }

    /// Turns agent access of the actor's tenant on or off.
    pub async fn set_agent_access(
        &self,
        actor: &Actor,
        enabled: bool,
    ) -> Result<(), IdentityError> {
        self.check_manager(actor, "agent access").await?;
        // An update, not a put: the same item keeps the tenant's approval modes.
        let action = if enabled {
            "agent_access.on"
        } else {
            "agent_access.off"
        };
        self.change_settings(
            actor,
            vec![
                UpdateAction::Set("enabled".into(), Value::Bool(enabled)),
                UpdateAction::Set("actor".into(), Value::s(actor.member.as_str())),
            ],
            action,
        )
        .await
    }

    /// Changes attributes of the actor's tenant's settings item, stamped with when, audited
    /// as `action` in the same transaction.
    async fn change_settings(
        &self,
        actor: &Actor,
        mut actions: Vec<UpdateAction>,
        action: &str,
    ) -> Result<(), IdentityError> {
        let audit = AuditEntry::by(actor, action, Vec::new(), self.outside.clock.as_ref());
        actions.push(UpdateAction::Set("at".into(), Value::s(&audit.at)));
        let change = Update::new(keys::tenant_switch(&actor.tenant), actions);
        self.store
            .transact_write(vec![
                change.into(),
                audit.op(self.outside.randomness.as_ref()),
            ])
            .await?;
        Ok(())
    }

    /// The classes the actor's tenant approves only in the product.
    pub async fn approval_modes(
        &self,
        tenant: &TenantId,
    ) -> Result<ProductApproval, IdentityError> {
        let item = self.store.get(&keys::tenant_switch(tenant)).await?;
        Ok(approval_modes(item.as_ref()))
    }

    /// Sets where the actor's tenant approves actions of `class` (notify, wake, alerting or
    /// delete), audited in the same transaction, when the actor holds the right.
    pub async fn set_approval_mode(
        &self,
        actor: &Actor,
        class: EffectClass,
        mode: ApprovalMode,
    ) -> Result<(), IdentityError> {
        if !mcp_pipeline::APPROVAL_CLASSES.contains(&class) {
            return Err(IdentityError::Invalid(format!(
                "{} actions need no approval; the classes are notify, wake, alerting and delete",
                mcp_pipeline::class_name(class)
            )));
        }
        self.check_manager(actor, "approval modes").await?;
        let set = UpdateAction::Set(approval_attribute(class), Value::s(mode.as_str()));
        let action = format!(
            "approval_mode.{}.{}",
            mcp_pipeline::class_name(class),
            mode.as_str()
        );
        self.change_settings(actor, vec![set], &action).await
    }
}
