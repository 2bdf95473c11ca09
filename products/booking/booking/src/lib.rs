//! The booking product: a field-service company's customers, technicians, bookings and quotes.
//!
//! The services here are the product's one write path: the MCP tools, the JSON API and the
//! pages are adapters on them. They take the acting member as a parameter, validate every input
//! themselves, and compute changes ([`Change`]) that the adapter commits; they know nothing of
//! MCP, HTTP or AWS and store through the `store` traits. Keys live in [`keys`]; the tenant id
//! is the first segment of every one.

mod actor;
pub mod alerts;
pub mod bookings;
mod change;
mod claims;
pub mod customers;
mod error;
pub mod ids;
pub mod keys;
pub mod messages;
pub mod money;
pub mod outbox;
pub mod quotes;
mod records;
pub mod rights;
pub mod technicians;
pub mod tenants;
pub mod text;
pub mod time;
pub mod use_cases;

pub use actor::Actor;
pub use alerts::{AlertRule, Alerts};
pub use bookings::{Booking, BookingFilter, Bookings, NewBooking, NewTime, Schedule, Status, When};
pub use change::{Change, Op, Outgoing};
pub use customers::{Customer, CustomerPatch, Customers, NewCustomer};
pub use error::BookingError;
pub use ids::{BookingId, CustomerId, QuoteId, TechnicianId};
pub use quotes::{LineInput, Quote, Quotes};
pub use technicians::{NewTechnician, Technician, Technicians};
pub use tenants::{Prices, Tenants};
pub use use_cases::{Expected, UseCases};
