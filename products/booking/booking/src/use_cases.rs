//! The product's writes that tell someone, one function each: it loads what it needs, has the
//! message written (`messages`) and returns its change. The MCP tool and the JSON API route of
//! each write call the same function, so that an agent's call and a person's request do the
//! same thing; the adapters only translate arguments and present the change.

use chrono::{DateTime, Utc};

use crate::ids::{BookingId, CustomerId, QuoteId, TechnicianId};
use crate::{
    Actor, Booking, BookingError, Bookings, Change, Customer, Customers, NewTime, Quote, Quotes,
    Technicians, messages,
};

/// A record to change and the version the caller read it at: the change is refused if it
/// moved since. `Id` is the record's id type (`BookingId`, `QuoteId`), so that a write on a
/// booking cannot be handed a quote's id.
#[derive(Debug, PartialEq, Eq)]
pub struct Expected<'a, Id> {
    /// The record's id part.
    pub id: &'a Id,
    /// The version the caller read.
    pub version: &'a str,
}

// By hand: derived, they would ask the id type to be `Copy`, though only a reference is held.
impl<Id> Clone for Expected<'_, Id> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<Id> Copy for Expected<'_, Id> {}

/// The services the notifying writes use.
#[derive(Debug, Clone)]
pub struct UseCases {
    /// Customers.
    pub customers: Customers,
    /// Technicians.
    pub technicians: Technicians,
    /// Bookings.
    pub bookings: Bookings,
    /// Quotes.
    pub quotes: Quotes,
}

impl UseCases {
    /// Confirms a draft booking and emails its customer the date, time and technician.
    pub async fn send_booking_confirmation(
        &self,
        actor: &Actor,
        expected: Expected<'_, BookingId>,
        now: DateTime<Utc>,
    ) -> Result<Change<Booking>, BookingError> {
        let Expected { id, version } = expected;
        let current = self.bookings.get(actor, id).await?;
        crate::bookings::not_past(&current, now)?;
        let (customer, technician) = futures_util::future::join(
            self.customers.get(actor, &current.customer),
            self.technicians.get(actor, &current.technician),
        )
        .await;
        let customer = customer?;
        let text = messages::booking_confirmed(&customer, &current, &technician?, now);
        self.bookings
            .confirm(actor, id, version, &customer.email, &text)
            .await
    }

    /// Cancels a booking; a confirmed one's customer is emailed, unless the visit has ended.
    pub async fn cancel_booking(
        &self,
        actor: &Actor,
        expected: Expected<'_, BookingId>,
        now: DateTime<Utc>,
    ) -> Result<Change<Booking>, BookingError> {
        let Expected { id, version } = expected;
        let current = self.bookings.get(actor, id).await?;
        let customer = self.customers.get(actor, &current.customer).await?;
        let text = messages::booking_cancelled(&customer, &current);
        self.bookings
            .cancel(actor, id, version, &customer.email, &text, now)
            .await
    }

    /// Moves a confirmed booking and emails its customer.
    pub async fn reschedule_booking(
        &self,
        actor: &Actor,
        expected: Expected<'_, BookingId>,
        to: NewTime,
        now: DateTime<Utc>,
    ) -> Result<Change<Booking>, BookingError> {
        let current = self.bookings.get(actor, expected.id).await?;
        // The customer and the technician's schedule at once: the move's round trips stay
        // those of a preview (ADR 46).
        let (customer, schedule) = futures_util::future::join(
            self.customers.get(actor, &current.customer),
            self.bookings.schedule(&actor.tenant, &current.technician),
        )
        .await;
        let (customer, schedule) = (customer?, schedule?);
        self.bookings
            .reschedule(actor, expected, to, &customer.email, schedule, now)
            .await
    }

    /// Cancels every open booking of a customer or technician when their number is the one
    /// expected, emailing each customer of confirmed ones once, of all their bookings (ADR 45);
    /// one change per booking, to commit together.
    pub async fn cancel_bookings(
        &self,
        actor: &Actor,
        customer: Option<CustomerId>,
        technician: Option<TechnicianId>,
        expected_count: Option<u32>,
        now: DateTime<Utc>,
    ) -> Result<Vec<Change<Booking>>, BookingError> {
        let open = self
            .bookings
            .open_matching(actor, customer, technician, expected_count)
            .await?;
        let customers = self.customers_of(actor, &open).await?;
        let mut changes = Vec::with_capacity(open.len());
        let mut told: Vec<(CustomerId, usize)> = Vec::new();
        for b in open {
            let customer = b.customer.clone();
            let (change, tell) = self.bookings.cancel_untold(actor, b.clone(), now)?;
            if tell {
                told.push((customer, changes.len()));
            }
            changes.push((change, b));
        }
        // One message to each customer, carried by the change of their first booking.
        told.sort_by(|a, b| a.0.cmp(&b.0));
        for group in told.chunk_by(|a, b| a.0 == b.0) {
            let bookings: Vec<Booking> = group.iter().map(|(_, i)| changes[*i].1.clone()).collect();
            let bookings: Vec<&Booking> = bookings.iter().collect();
            let customer = &customers[&group[0].0];
            let carrier = &mut changes[group[0].1].0;
            self.bookings
                .tell_cancelled(actor, carrier, customer, &bookings);
        }
        Ok(changes.into_iter().map(|(change, _)| change).collect())
    }

    /// The customers of `bookings`, each read once, all at once.
    async fn customers_of(
        &self,
        actor: &Actor,
        bookings: &[Booking],
    ) -> Result<std::collections::HashMap<CustomerId, Customer>, BookingError> {
        let mut wanted: Vec<&CustomerId> = bookings.iter().map(|b| &b.customer).collect();
        wanted.sort_unstable();
        wanted.dedup();
        let found =
            futures_util::future::join_all(wanted.iter().map(|id| self.customers.get(actor, id)))
                .await;
        wanted
            .into_iter()
            .zip(found)
            .map(|(id, c)| Ok((id.clone(), c?)))
            .collect()
    }

    /// Sends a draft quote to its customer (binding the company to its price).
    pub async fn send_quote(
        &self,
        actor: &Actor,
        expected: Expected<'_, QuoteId>,
    ) -> Result<(Change<Quote>, Customer), BookingError> {
        let Expected { id, version } = expected;
        let current = self.quotes.get(actor, id).await?;
        let customer = self.customers.get(actor, &current.customer).await?;
        let text = messages::quote_sent(&customer, &current);
        let change = self
            .quotes
            .send(actor, id, version, &customer.email, &text)
            .await?;
        Ok((change, customer))
    }
}
