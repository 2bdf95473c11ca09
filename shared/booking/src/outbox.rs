//! The notification outbox: messages are written in the same transaction as the change that
//! causes them, and a dispatcher delivers each entry once (keyed by its id). Nothing here
//! sends anything.

use store::{Condition, Item, Put, Value};

use crate::{BookingError, Change, keys};

/// Queues a message to `to` in `change`, and notes the recipient in `change.notified`.
pub(crate) fn queue<T>(
    randomness: &dyn outside::Randomness,
    change: &mut Change<T>,
    tenant: &str,
    to: &str,
    subject: &str,
    body: &str,
    about: &str,
) {
    let id = crate::ids::new_id(randomness);
    let mut item = Item::new();
    item.insert("to".into(), Value::s(to));
    item.insert("subject".into(), Value::s(subject));
    item.insert("body".into(), Value::s(body));
    item.insert("about".into(), Value::s(about));
    item.insert("status".into(), Value::s("queued"));
    change.push(
        Put::new(keys::outbox(tenant, &id), item).when(Condition::item_not_exists()),
        |_| BookingError::Rejected("an outbox entry with this id exists; try again".into()),
    );
    change.notified.push(to.to_owned());
}
