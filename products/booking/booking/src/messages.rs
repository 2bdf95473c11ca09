//! The words the product sends to customers. The server writes them (a caller never puts words
//! in them), and every adapter takes them from here, so that a customer reads the same message
//! whether an agent or a person's API call made the change.

use chrono::{DateTime, Utc};

use crate::time::Moment;
use crate::{Booking, Customer, Quote, Technician};

/// The confirmation of a draft booking.
pub fn booking_confirmed(
    customer: &Customer,
    booking: &Booking,
    technician: &Technician,
    now: DateTime<Utc>,
) -> String {
    let start = Moment::new(booking.start, booking.zone, now);
    format!(
        "Hello {}, your {} with {} is confirmed for {}.",
        customer.name,
        booking.service,
        technician.name,
        start.spoken()
    )
}

/// The notice of a cancelled booking.
pub fn booking_cancelled(customer: &Customer, booking: &Booking) -> String {
    format!(
        "Hello {}, your {} booking ({}) is cancelled.",
        customer.name,
        booking.service,
        booking.handle()
    )
}

/// The notice of several cancelled bookings of one customer (a batch tells each customer once).
pub fn bookings_cancelled(customer: &Customer, bookings: &[&Booking]) -> String {
    match bookings {
        [one] => booking_cancelled(customer, one),
        _ => {
            let listed: Vec<String> = bookings
                .iter()
                .map(|b| format!("{} ({})", b.service, b.handle()))
                .collect();
            format!(
                "Hello {}, these {} bookings of yours are cancelled: {}.",
                customer.name,
                bookings.len(),
                listed.join(", ")
            )
        }
    }
}

/// The message that carries a quote.
pub fn quote_sent(customer: &Customer, quote: &Quote) -> String {
    format!(
        "Hello {}, your quote {} totals {} including tax.",
        customer.name,
        quote.handle(),
        quote.totals.gross
    )
}
