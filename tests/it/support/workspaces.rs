//! Workspaces as `gatehouse tenant create` makes them: the platform's workspace (id, name,
//! zone) with the booking product's prices written in the same transaction.

use std::sync::Arc;

/// The console actor that creates workspaces in tests.
pub(crate) fn console(tenant: &str) -> identity::Actor {
    crate::support::cli_actor(tenant, "cli")
}

/// The workspace `tenant` named "Test", in Europe/Berlin.
pub(crate) fn named(tenant: &str, zone: &str) -> accounts::workspaces::Workspace {
    accounts::workspaces::Workspace {
        id: tenant.into(),
        name: "Test".into(),
        zone: zone.into(),
    }
}

/// The booking product's write of `tenant`'s prices.
pub(crate) fn prices(tenant: &str, currency: &str, tax: &str) -> store::TransactOp {
    booking::Prices {
        currency: currency.into(),
        tax_rate: tax.parse().unwrap(),
    }
    .plan(&store::TenantId::new(tenant))
    .unwrap()
}

/// Creates `tenant` (Europe/Berlin) with prices in `currency` at `tax` percent.
pub(crate) async fn create(store: &Arc<dyn store::Store>, tenant: &str, currency: &str, tax: &str) {
    accounts::workspaces::create(
        store,
        &outside::ClockAndRandomness::system(),
        &console(tenant),
        &named(tenant, "Europe/Berlin"),
        vec![prices(tenant, currency, tax)],
    )
    .await
    .unwrap();
}
