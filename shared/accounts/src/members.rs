//! Members of a workspace, administered through an audited service: added to a workspace that
//! exists, changed, removed (which ends every credential their person made), and their
//! sign-in passwords.

use std::sync::Arc;

use identity::{Actor, Directory as _, RoleCatalog, StoreDirectory};
use store::{Condition, Store, Update, UpdateAction, Value};
use store::{MemberId, TenantId};

use crate::{AccountsError, passwords};

/// What [`Members::set`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Set {
    /// A new member (a new person).
    Added,
    /// An existing member's role or active flag.
    Changed,
}

/// The member service of the actor's workspace.
#[derive(Debug, Clone)]
pub struct Members {
    store: Arc<dyn Store>,
    catalog: RoleCatalog,
    outside: outside::ClockAndRandomness,
}

impl Members {
    /// The service over `store`, with roles from `catalog`, its times and ids (person ids,
    /// salts, sessions) from `outside`.
    pub fn new(
        store: Arc<dyn Store>,
        catalog: RoleCatalog,
        outside: outside::ClockAndRandomness,
    ) -> Self {
        Members {
            store,
            catalog,
            outside,
        }
    }

    /// Adds `member` to the actor's workspace with `role`, or changes their role and active
    /// flag; audited. The workspace must exist and the role be known. `active: None` keeps an
    /// existing member's flag (a change of role does not bring a deactivated member back) and
    /// makes a new one active. Returns what it did and whether the member is now active.
    pub async fn set(
        &self,
        actor: &Actor,
        member: &MemberId,
        role: &str,
        active: Option<bool>,
    ) -> Result<(Set, bool), AccountsError> {
        check_member_id(member.as_str())?;
        if (self.catalog)(role).is_empty() {
            return Err(AccountsError::Invalid(format!(
                "unknown role {role:?}: it grants no right of this product (see its roles)"
            )));
        }
        crate::workspaces::require(self.store.as_ref(), &actor.tenant).await?;
        let key = identity::keys::member(&actor.tenant, member);
        let existing = self.store.get(&key).await?;
        let active = active.unwrap_or_else(|| {
            existing
                .as_ref()
                .is_none_or(|item| item.get("active") != Some(&store::Value::Bool(false)))
        });
        let write = identity::directory::member_write(
            &actor.tenant,
            member,
            role,
            active,
            existing.as_ref(),
            self.outside.randomness.as_ref(),
        );
        let (outcome, action) = match existing {
            None => (Set::Added, "member.add"),
            Some(_) => (Set::Changed, "member.set"),
        };
        let audit = crate::audit(
            actor,
            action,
            vec![format!("{member}:{role}")],
            &self.outside,
        );
        self.store.transact_write(vec![write, audit]).await?;
        Ok((outcome, active))
    }

    /// Removes `member` from the actor's workspace, audited. Every credential their person
    /// made (connections, API tokens, sessions) stops working for good, even if the id is
    /// added again. A member that does not exist is an error, not a success.
    pub async fn remove(&self, actor: &Actor, member: &MemberId) -> Result<(), AccountsError> {
        let key = identity::keys::member(&actor.tenant, member);
        let Some(existing) = self.store.get(&key).await? else {
            return Err(not_a_member(member, &actor.tenant));
        };
        let removal = identity::directory::member_removal(&actor.tenant, member, &existing);
        let audit = crate::audit(
            actor,
            "member.remove",
            vec![member.to_string()],
            &self.outside,
        );
        match self.store.transact_write(vec![removal, audit]).await {
            Err(store::StoreError::TransactionCancelled { .. }) => Err(AccountsError::Invalid(
                format!("{member} changed meanwhile; try again"),
            )),
            other => Ok(other?),
        }
    }

    /// Sets `member`'s sign-in password, audited (the password itself never is). Every
    /// session the member started before ends (it was started with the old password), and the
    /// account's sign-in counts are cleared: a reset also unlocks.
    pub async fn set_password(
        &self,
        actor: &Actor,
        member: &MemberId,
        password: &str,
    ) -> Result<(), AccountsError> {
        let hash = passwords::hash(password, &self.outside)?;
        let change = Update::new(
            identity::keys::member(&actor.tenant, member),
            vec![UpdateAction::Set("password_hash".into(), Value::s(hash))],
        )
        .when(Condition::item_exists());
        let audit = crate::audit(
            actor,
            "member.password",
            vec![member.to_string()],
            &self.outside,
        );
        match self.store.transact_write(vec![change.into(), audit]).await {
            Err(store::StoreError::TransactionCancelled { .. }) => {
                return Err(not_a_member(member, &actor.tenant));
            }
            other => other?,
        }
        crate::sign_in::clear_member(self.store.as_ref(), &actor.tenant, member).await
    }

    /// Lets `member` sign in again at once: clears every sign-in count of their account
    /// (after failures from anywhere), audited. A member that does not exist is an error.
    pub async fn unlock(&self, actor: &Actor, member: &MemberId) -> Result<(), AccountsError> {
        let key = identity::keys::member(&actor.tenant, member);
        if self.store.get(&key).await?.is_none() {
            return Err(not_a_member(member, &actor.tenant));
        }
        crate::sign_in::clear_member(self.store.as_ref(), &actor.tenant, member).await?;
        let audit = crate::audit(
            actor,
            "member.unlock",
            vec![member.to_string()],
            &self.outside,
        );
        self.store.transact_write(vec![audit]).await?;
        Ok(())
    }

    /// The member with the tag of their password hash, when they are active and `password`
    /// is theirs (`None` otherwise, after the same work, so that timing does not tell members
    /// apart). The check runs away from the request threads.
    pub async fn check_password(
        &self,
        tenant: &TenantId,
        member: &MemberId,
        password: &str,
    ) -> Result<Option<(identity::Member, String)>, AccountsError> {
        let key = identity::keys::member(tenant, member);
        let item = self.store.get(&key).await?;
        let hash = item
            .as_ref()
            .and_then(|i| i.get("password_hash"))
            .and_then(Value::as_s)
            .unwrap_or(passwords::DUMMY_HASH);
        let matches = passwords::verify_aside(password, hash).await;
        let tag = passwords::credential_tag(hash);
        let directory = StoreDirectory::new(
            Arc::clone(&self.store),
            self.catalog,
            Arc::clone(&self.outside.randomness),
        );
        let found = directory.member_from_item(member, item.as_ref());
        Ok(found
            .filter(|m| matches && item.is_some() && m.active)
            .map(|m| (m, tag)))
    }

    /// Signs `member` of `tenant` in from `address`: the attempt is counted first
    /// ([`crate::Throttle::begin`], refused while the account waits), then the password is
    /// checked; a match starts a session (its id for the cookie, and the session), a mismatch
    /// is `None` and stays counted.
    pub async fn sign_in(
        &self,
        throttle: &crate::Throttle,
        tenant: &TenantId,
        member: &MemberId,
        password: &str,
        address: Option<&str>,
    ) -> Result<Option<(String, crate::Session)>, AccountsError> {
        let attempt = crate::Attempt::member(tenant, member, address);
        throttle.begin(&attempt).await?;
        let Some((found, tag)) = self.check_password(tenant, member, password).await? else {
            return Ok(None);
        };
        if let Err(e) = throttle.succeeded(&attempt).await {
            tracing::warn!(error = %e, "could not clear a member's sign-in count");
        }
        Ok(Some(
            crate::sessions::start_member(self.store.as_ref(), &self.outside, tenant, &found, &tag)
                .await?,
        ))
    }
}

fn not_a_member(member: &MemberId, tenant: &TenantId) -> AccountsError {
    AccountsError::NotFound(format!("{member} is not a member of {tenant}"))
}

/// A member id: 1 to 64 characters, no whitespace, control characters or `#` (which
/// separates key segments).
fn check_member_id(member: &str) -> Result<(), AccountsError> {
    let ok = (1..=64).contains(&member.chars().count())
        && !member
            .chars()
            .any(|c| c == '#' || c.is_whitespace() || c.is_control());
    if ok {
        Ok(())
    } else {
        Err(AccountsError::Invalid(format!(
            "{member:?} is not a member id: 1 to 64 characters without spaces or #"
        )))
    }
}
