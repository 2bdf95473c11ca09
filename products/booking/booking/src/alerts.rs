//! Alert rules: reminders about a booking (to the technician, before it starts) that can be
//! muted for a while.

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use store::{Item, Put, Store, Value};

use crate::ids::{BookingId, Kind};
use crate::{Actor, BookingError, Change, keys, rights};

/// A booking's alert rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertRule {
    /// The booking's id part.
    pub booking: BookingId,
    /// Muted until then, if muted.
    pub muted_until: Option<DateTime<Utc>>,
}

/// The alert service.
#[derive(Debug, Clone)]
pub struct Alerts {
    store: Arc<dyn Store>,
}

impl Alerts {
    /// The service over `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Alerts { store }
    }

    /// Plans muting a booking's reminders for `hours` (1 to 168).
    pub async fn mute(
        &self,
        actor: &Actor,
        booking: &BookingId,
        hours: i64,
        now: DateTime<Utc>,
    ) -> Result<Change<AlertRule>, BookingError> {
        actor.require(rights::ALERTS_MANAGE)?;
        if !(1..=168).contains(&hours) {
            return Err(BookingError::invalid("hours", "mute for 1 to 168 hours"));
        }
        if self
            .store
            .get(&keys::object(
                &actor.tenant,
                Kind::Booking,
                booking.as_str(),
            ))
            .await?
            .is_none()
        {
            return Err(BookingError::NotFound {
                kind: "booking",
                id: booking.handle(),
            });
        }
        let until = now + Duration::hours(hours);
        let mut item = Item::new();
        item.insert("muted_until".into(), Value::s(until.to_rfc3339()));
        let rule = AlertRule {
            booking: booking.clone(),
            muted_until: Some(until),
        };
        let mut change = Change::new(rule);
        change.push(
            Put::new(crate::keys::alert_rule(&actor.tenant, booking), item),
            |_| BookingError::Rejected("the alert rule changed meanwhile".into()),
        );
        change.ids.push(booking.handle());
        Ok(change)
    }
}
