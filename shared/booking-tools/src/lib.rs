//! The booking product's MCP tools: thin adapters on `booking`'s services, one file per tool.
//!
//! A tool turns its typed input into a service call with the caller as the actor, hands the
//! service's planned change to the pipeline (which commits it with the gates), and presents
//! the result with an explicit field list. Tools never touch the store.

mod adapter;
mod add_booking_note;
mod cancel_booking;
mod cancel_bookings;
mod create_booking;
mod create_customer;
mod create_quote;
mod delete_booking;
mod delete_customer;
mod find_available_slots;
mod find_bookings;
mod find_customers;
mod get_booking;
mod get_customer;
mod get_quote;
mod list_technicians;
mod mute_booking_alerts;
mod page_technician;
mod present;
mod quote_lines;
mod reschedule_booking;
mod send_booking_confirmation;
mod send_quote;
mod update_booking;
mod update_customer;
mod update_quote;

use mcp_pipeline::{Registry, RegistryError, ToolSpec, Toolset};

pub use adapter::{BookingKind, CustomerKind, QuoteKind, Services, TechnicianKind};

/// Registers the booking tools, in `tools/list` order.
pub fn register(registry: &mut Registry, services: &Services) -> Result<(), RegistryError> {
    use booking::rights;
    let customers = || services.customers.clone();
    let base = || services.console_base.clone();
    registry.register(
        ToolSpec::new(find_customers::FindCustomers {
            customers: customers(),
            console_base: base(),
        })
        .requires(rights::BOOKINGS_READ)
        .toolset(Toolset::Core),
    )?;
    registry.register(
        ToolSpec::new(get_customer::GetCustomer {
            customers: customers(),
            console_base: base(),
        })
        .requires(rights::BOOKINGS_READ)
        .toolset(Toolset::Core),
    )?;
    registry.register(
        ToolSpec::new(create_customer::CreateCustomer {
            customers: customers(),
            console_base: base(),
        })
        .requires(rights::BOOKINGS_WRITE)
        .toolset(Toolset::Core),
    )?;
    registry.register(
        ToolSpec::new(update_customer::UpdateCustomer {
            customers: customers(),
            console_base: base(),
        })
        .requires(rights::BOOKINGS_WRITE)
        .toolset(Toolset::Core),
    )?;
    registry.register(
        ToolSpec::new(list_technicians::ListTechnicians {
            technicians: services.technicians.clone(),
            console_base: base(),
        })
        .requires(rights::BOOKINGS_READ)
        .toolset(Toolset::Core),
    )?;
    let bookings = || services.bookings.clone();
    registry.register(
        ToolSpec::new(find_bookings::FindBookings {
            bookings: bookings(),
            console_base: base(),
        })
        .requires(rights::BOOKINGS_READ)
        .toolset(Toolset::Core),
    )?;
    registry.register(
        ToolSpec::new(get_booking::GetBooking {
            bookings: bookings(),
            console_base: base(),
        })
        .requires(rights::BOOKINGS_READ)
        .toolset(Toolset::Core),
    )?;
    registry.register(
        ToolSpec::new(find_available_slots::FindAvailableSlots {
            technicians: services.technicians.clone(),
            bookings: bookings(),
        })
        .requires(rights::BOOKINGS_READ)
        .expensive()
        .toolset(Toolset::Core),
    )?;
    registry.register(
        ToolSpec::new(create_booking::CreateBooking {
            bookings: bookings(),
            console_base: base(),
        })
        .requires(rights::BOOKINGS_WRITE)
        .toolset(Toolset::Core),
    )?;
    registry.register(
        ToolSpec::new(update_booking::UpdateBooking {
            bookings: bookings(),
            console_base: base(),
        })
        .requires(rights::BOOKINGS_WRITE)
        .toolset(Toolset::Core),
    )?;
    registry.register(
        ToolSpec::new(add_booking_note::AddBookingNote {
            bookings: bookings(),
            console_base: base(),
        })
        .requires(rights::BOOKINGS_WRITE)
        .toolset(Toolset::Standard),
    )?;
    registry.register(
        ToolSpec::new(send_booking_confirmation::SendBookingConfirmation {
            bookings: bookings(),
            customers: customers(),
            technicians: services.technicians.clone(),
            console_base: base(),
        })
        .requires(rights::BOOKINGS_WRITE)
        .requires(rights::CUSTOMERS_NOTIFY)
        .toolset(Toolset::Core),
    )?;
    registry.register(
        ToolSpec::new(cancel_booking::CancelBooking {
            bookings: bookings(),
            customers: customers(),
            console_base: base(),
        })
        .requires(rights::BOOKINGS_WRITE)
        .toolset(Toolset::Standard),
    )?;
    let quotes = || services.quotes.clone();
    registry.register(
        ToolSpec::new(get_quote::GetQuote {
            quotes: quotes(),
            console_base: base(),
        })
        .requires(rights::BOOKINGS_READ)
        .toolset(Toolset::Standard),
    )?;
    registry.register(
        ToolSpec::new(create_quote::CreateQuote {
            quotes: quotes(),
            console_base: base(),
        })
        .requires(rights::BOOKINGS_WRITE)
        .toolset(Toolset::Standard),
    )?;
    registry.register(
        ToolSpec::new(update_quote::UpdateQuote {
            quotes: quotes(),
            console_base: base(),
        })
        .requires(rights::BOOKINGS_WRITE)
        .toolset(Toolset::Standard),
    )?;
    registry.register(
        ToolSpec::new(send_quote::SendQuote {
            quotes: quotes(),
            customers: customers(),
            console_base: base(),
        })
        .requires(rights::CUSTOMERS_NOTIFY)
        .toolset(Toolset::Full)
        .approval_in_product(),
    )?;
    registry.register(
        ToolSpec::new(reschedule_booking::RescheduleBooking {
            bookings: bookings(),
            customers: customers(),
            console_base: base(),
        })
        .requires(rights::BOOKINGS_WRITE)
        .requires(rights::CUSTOMERS_NOTIFY)
        .toolset(Toolset::Standard),
    )?;
    registry.register(
        ToolSpec::new(cancel_bookings::CancelBookings {
            bookings: bookings(),
            customers: customers(),
            console_base: base(),
        })
        .requires(rights::BOOKINGS_WRITE)
        .toolset(Toolset::Full),
    )?;
    registry.register(
        ToolSpec::new(page_technician::PageTechnician {
            technicians: services.technicians.clone(),
            console_base: base(),
        })
        .requires(rights::TECHNICIANS_PAGE)
        .toolset(Toolset::Standard),
    )?;
    registry.register(
        ToolSpec::new(mute_booking_alerts::MuteBookingAlerts {
            alerts: services.alerts.clone(),
        })
        .requires(rights::ALERTS_MANAGE)
        .toolset(Toolset::Full),
    )?;
    registry.register(
        ToolSpec::new(delete_booking::DeleteBooking {
            bookings: bookings(),
            console_base: base(),
        })
        .requires(rights::RECORDS_DELETE)
        .toolset(Toolset::Standard),
    )?;
    registry.register(
        ToolSpec::new(delete_customer::DeleteCustomer {
            customers: customers(),
            console_base: base(),
        })
        .requires(rights::RECORDS_DELETE)
        .toolset(Toolset::Standard),
    )?;
    Ok(())
}
