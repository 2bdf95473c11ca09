//! The booking product's MCP tools: thin adapters on `booking`'s services, one file per tool.
//!
//! A tool turns its typed input into a service call with the caller as the actor, hands the
//! service's planned change to the pipeline (which commits it with the gates), and presents
//! the result with an explicit field list. Tools never touch the store.

mod adapter;
mod create_customer;
mod delete_customer;
mod find_customers;
mod get_customer;
mod present;
mod update_customer;

use mcp_pipeline::{Registry, RegistryError, ToolSpec, Toolset};

pub use adapter::{CustomerKind, Services};

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
        ToolSpec::new(delete_customer::DeleteCustomer {
            customers: customers(),
            console_base: base(),
        })
        .requires(rights::RECORDS_DELETE)
        .toolset(Toolset::Standard),
    )?;
    Ok(())
}
