//! The product's messages go out through the platform's outbox (`outbox_format`): each is
//! queued in the same transaction as the change that causes it, and its recipient is noted, so
//! that executing the change counts it against the recipient's limit (ADR 45).

use outbox_format::Outgoing;
use store::TenantId;

use crate::{BookingError, Change};

/// Queues `message` of `tenant` in `change`, and notes its recipient in `change.notified`.
pub(crate) fn queue<T>(
    randomness: &dyn outside::Randomness,
    change: &mut Change<T>,
    tenant: &TenantId,
    message: &Outgoing<'_>,
) {
    let id = crate::ids::new_id(randomness);
    for put in outbox_format::queue(tenant, &id, message) {
        change.push(put, |_| {
            BookingError::Rejected("an outbox entry with this id exists; try again".into())
        });
    }
    change.notified.push(message.to.to_owned());
    change.messages.push(crate::change::Outgoing {
        to: message.to.to_owned(),
        subject: message.subject.to_owned(),
        body: message.body.to_owned(),
    });
}
