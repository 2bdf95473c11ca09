//! The booking product: a field-service company's customers, technicians, bookings and quotes.
//!
//! The services here are the product's one write path: the MCP tools, the JSON API and the
//! pages are adapters on them. They take the acting member as a parameter, validate every input
//! themselves, and know nothing of MCP, HTTP or AWS; they store through the `store` traits.

pub mod money;
pub mod time;
