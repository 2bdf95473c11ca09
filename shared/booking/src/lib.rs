//! The booking product: a field-service company's customers, technicians, bookings and quotes.
//!
//! The services here are the product's one write path: the MCP tools, the JSON API and the
//! pages are adapters on them. They take the acting member as a parameter, validate every input
//! themselves, and compute changes ([`Change`]) that the adapter commits; they know nothing of
//! MCP, HTTP or AWS and store through the `store` traits. Keys live in [`keys`]; the tenant id
//! is the first segment of every one.

mod actor;
mod change;
pub mod customers;
mod error;
pub mod ids;
pub mod keys;
pub mod money;
pub mod rights;
pub mod text;
pub mod time;

pub use actor::Actor;
pub use change::{Change, Op};
pub use customers::{Customer, CustomerPatch, Customers, NewCustomer};
pub use error::BookingError;
