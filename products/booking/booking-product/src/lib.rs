//! The booking product behind gatehouse (ADR 49): [`Booking`] hands the platform its MCP tools
//! (thin adapters on `booking`'s services, one file per tool), rights and roles, record kinds,
//! JSON API and demo, through the same seam as any team's product.
//!
//! A tool turns its typed input into a service call with the caller as the actor, hands the
//! service's planned change to the pipeline (which commits it with the gates), and presents
//! the result with an explicit field list. Tools never touch the store.

mod adapter;
mod add_booking_note;
mod api;
mod cancel_booking;
mod cancel_bookings;
mod create_booking;
mod create_customer;
mod create_quote;
mod delete_booking;
mod delete_customer;
mod demo;
mod find_available_slots;
mod find_bookings;
mod find_customers;
mod find_quotes;
mod get_booking;
mod get_customer;
mod get_quote;
mod list_technicians;
mod mute_booking_alerts;
mod names;
mod page_technician;
mod present;
mod product;
mod quote_lines;
mod records;
mod reschedule_booking;
mod send_booking_confirmation;
mod send_quote;
mod time_errors;
mod update_booking;
mod update_customer;
mod update_quote;

use mcp_pipeline::{Registry, RegistryError, ToolSpec};

pub use adapter::{BookingKind, CustomerKind, QuoteKind, Services, TechnicianKind};
pub use names::NameLookup;
pub use product::Booking;

/// Name prefixes of the booking tools that reach people beside the generic ones
/// (`manifest_check::REACH_PREFIXES`): cancelling or moving a booking tells its customer
/// (`check-manifest --reach-prefix cancel_ --reach-prefix reschedule_`).
pub const REACH_PREFIXES: &[&str] = &["cancel_", "reschedule_"];

/// Registers the booking tools, in `tools/list` order. Each tool states its own policy
/// (rights, toolset, expensive, approval in the product) beside its code.
pub fn register(registry: &mut Registry, services: &Services) -> Result<(), RegistryError> {
    macro_rules! tools {
        ($($module:ident::$tool:ident,)*) => {
            $(registry.register(ToolSpec::new($module::$tool { services: services.clone() }))?;)*
        };
    }
    tools! {
        find_customers::FindCustomers,
        get_customer::GetCustomer,
        create_customer::CreateCustomer,
        update_customer::UpdateCustomer,
        list_technicians::ListTechnicians,
        find_bookings::FindBookings,
        get_booking::GetBooking,
        find_available_slots::FindAvailableSlots,
        create_booking::CreateBooking,
        update_booking::UpdateBooking,
        add_booking_note::AddBookingNote,
        send_booking_confirmation::SendBookingConfirmation,
        cancel_booking::CancelBooking,
        get_quote::GetQuote,
        find_quotes::FindQuotes,
        create_quote::CreateQuote,
        update_quote::UpdateQuote,
        send_quote::SendQuote,
        reschedule_booking::RescheduleBooking,
        cancel_bookings::CancelBookings,
        page_technician::PageTechnician,
        mute_booking_alerts::MuteBookingAlerts,
        delete_booking::DeleteBooking,
        delete_customer::DeleteCustomer,
    }
    Ok(())
}
