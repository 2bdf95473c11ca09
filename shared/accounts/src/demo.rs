//! Whether a store holds the demo, whose passwords are published (ADR 48). The demo's seed
//! claims a marker before it writes anything; while the marker says the store holds the demo
//! (seeding or seeded), no real workspace and no other operator may be made in it, since the
//! demo's operator and members would share a deployment with them. The marker outlives the
//! demo's removal (`removed`) and a refusal to seed (`declined`), so that neither store is
//! ever seeded again.

use store::{Condition, Item, Key, Put, Store, Update, UpdateAction, Value};

use crate::AccountsError;

/// The marker's states.
pub mod state {
    /// The seed began (claimed by one process) and has not finished.
    pub const SEEDING: &str = "seeding";
    /// The demo is seeded.
    pub const DONE: &str = "done";
    /// The store held workspaces or operators of its own at its first start.
    pub const IN_USE: &str = "in_use";
    /// `serve --no-demo`: never seed this store.
    pub const DECLINED: &str = "declined";
    /// The demo was seeded and removed (`gatehouse demo remove`): never seed it again.
    pub const REMOVED: &str = "removed";
}

/// The item that records the demo's seed.
pub fn marker_key() -> Key {
    Key::new("system", "demo_seeded")
}

/// The marker's state and when it was first written, when there is one. A marker without a
/// state is from a gatehouse that marked the seed only before it began: seeded.
pub async fn marker(store: &dyn Store) -> Result<Option<(String, String)>, AccountsError> {
    let Some(item) = store.get(&marker_key()).await? else {
        return Ok(None);
    };
    let text = |name: &str| item.get(name).and_then(Value::as_s).map(str::to_owned);
    Ok(Some((
        text("state").unwrap_or_else(|| state::DONE.to_owned()),
        text("seeded_at").unwrap_or_default(),
    )))
}

/// Whether the store holds the demo (seeded, or being seeded).
pub async fn holds_demo(store: &dyn Store) -> Result<bool, AccountsError> {
    Ok(marker(store)
        .await?
        .is_some_and(|(s, _)| s == state::DONE || s == state::SEEDING))
}

/// Refuses to make `what` in a store that holds the demo.
pub(crate) async fn refuse_beside_demo(store: &dyn Store, what: &str) -> Result<(), AccountsError> {
    if holds_demo(store).await? {
        return Err(AccountsError::Invalid(format!(
            "this store holds the demo, whose passwords are published: {what} cannot be made \
             beside it. Remove the demo first with `gatehouse demo remove` (it deletes the \
             demo's data), or use another data folder (--data-dir)"
        )));
    }
    Ok(())
}

/// Writes the marker in `state` where there is none; `false` when one was there.
pub async fn claim(
    store: &dyn Store,
    clock: &dyn outside::Clock,
    state: &str,
) -> Result<bool, AccountsError> {
    let mut item = Item::new();
    item.insert("seeded_at".into(), Value::s(identity::rfc3339_now(clock)));
    item.insert("state".into(), Value::s(state));
    match store
        .put(Put::new(marker_key(), item).when(Condition::item_not_exists()))
        .await
    {
        Ok(()) => Ok(true),
        Err(store::StoreError::ConditionFailed { .. }) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Sets the marker's state.
pub async fn set_state(store: &dyn Store, state: &str) -> Result<(), AccountsError> {
    let set = vec![UpdateAction::Set("state".into(), Value::s(state))];
    store.update(Update::new(marker_key(), set)).await?;
    Ok(())
}
