//! The product's messages go out through the platform's outbox (`outbox_format`): each is
//! queued in the same transaction as the change that causes it, and its recipient is noted, so
//! that executing the change counts it against the recipient's limit (ADR 45).

use crate::{BookingError, Change};

/// Queues a message to `to` in `change`, and notes the recipient in `change.notified`.
pub(crate) fn queue<T>(
    randomness: &dyn outside::Randomness,
    change: &mut Change<T>,
    tenant: &str,
    to: &str,
    (subject, body): (&str, &str),
    about: &str,
) {
    let id = crate::ids::new_id(randomness);
    let message = outbox_format::Outgoing {
        to,
        subject,
        body,
        about,
    };
    for put in outbox_format::queue(tenant, &id, &message) {
        change.push(put, |_| {
            BookingError::Rejected("an outbox entry with this id exists; try again".into())
        });
    }
    change.notified.push(to.to_owned());
    change.messages.push(crate::change::Outgoing {
        to: to.to_owned(),
        subject: subject.to_owned(),
        body: body.to_owned(),
    });
}
